//! `print` and `reject` formatting as Stan (C++ streams) writes values:
//! reals with 6 significant digits (`%g`), containers as `[a,b,c]`.

use language::value::Value;

/// C++'s default stream formatting of a double (`%g`, precision 6).
pub(crate) fn real(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("scientific format");
    let exp: i32 = exp.parse().expect("exponent");
    if !(-4..6).contains(&exp) {
        let mantissa = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    format!("[{}]", items.collect::<Vec<_>>().join(","))
}

pub fn value(v: &Value) -> String {
    let complex = |&(re, im): &(f64, f64)| format!("({},{})", real(re), real(im));
    match v {
        Value::Int(i) => i.to_string(),
        Value::Real(x) => real(*x),
        Value::Complex(re, im) => complex(&(*re, *im)),
        Value::Vector(x) | Value::RowVector(x) => list(x.iter().map(|x| real(*x))),
        Value::Matrix { rows, cols, data } => {
            list((0..*rows).map(|i| list((0..*cols).map(|j| real(data[j * rows + i])))))
        }
        Value::ComplexVector(x) | Value::ComplexRowVector(x) => list(x.iter().map(complex)),
        Value::ComplexMatrix { rows, cols, data } => {
            list((0..*rows).map(|i| list((0..*cols).map(|j| complex(&data[j * rows + i])))))
        }
        Value::Array(items) => list(items.iter().map(value)),
        Value::Tuple(items) => format!(
            "({})",
            items.iter().map(value).collect::<Vec<_>>().join(",")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reals_print_like_cpp_streams() {
        for (x, s) in [
            (3.0, "3"),
            (0.1 + 0.2, "0.3"),
            (1.0 / 3.0, "0.333333"),
            (123456.7, "123457"),
            (1234567.0, "1.23457e+06"),
            (0.0001234, "0.0001234"),
            (0.00001234, "1.234e-05"),
            (-2.5, "-2.5"),
            (1e100, "1e+100"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(real(x), s, "{x}");
        }
    }

    #[test]
    fn containers_print_without_spaces() {
        assert_eq!(value(&Value::Vector(vec![1.0, 2.5])), "[1,2.5]");
        let m = Value::Matrix {
            rows: 2,
            cols: 2,
            data: vec![1.0, 3.0, 2.0, 4.0],
        };
        assert_eq!(value(&m), "[[1,2],[3,4]]");
        assert_eq!(
            value(&Value::Array(vec![Value::Int(1), Value::Int(2)])),
            "[1,2]"
        );
    }
}
