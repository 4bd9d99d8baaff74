//! Shape helpers: scalars out of values, elementwise maps with Stan's
//! scalar broadcasting, rebuilding a value of a given shape.

use super::error::{Result, RuntimeError, describe, mismatch};
use language::value::Value;

pub(crate) fn real(v: &Value) -> Result<f64> {
    v.as_real().ok_or_else(|| mismatch("expected a real", v))
}

pub(crate) fn int(v: &Value) -> Result<i64> {
    v.as_int().ok_or_else(|| mismatch("expected an int", v))
}

pub(crate) fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Real(_))
}

/// Every real inside, in Stan's order.
pub(crate) fn flat(v: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    v.flatten_reals(&mut out);
    out
}

/// Every int inside an int or int array.
pub(crate) fn flat_ints(v: &Value) -> Result<Vec<i64>> {
    match v {
        Value::Int(i) => Ok(vec![*i]),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                out.extend(flat_ints(item)?);
            }
            Ok(out)
        }
        other => Err(mismatch("expected ints", other)),
    }
}

/// True if `v` is an int or (nested) array of ints.
pub(crate) fn all_ints(v: &Value) -> bool {
    match v {
        Value::Int(_) => true,
        Value::Array(items) => items.iter().all(all_ints),
        _ => false,
    }
}

/// A value of `template`'s shape (ints become reals) filled from `data`.
pub(crate) fn with_data(template: &Value, data: &mut impl Iterator<Item = f64>) -> Value {
    let mut next = || data.next().unwrap_or(f64::NAN);
    match template {
        Value::Int(_) | Value::Real(_) => Value::Real(next()),
        Value::Vector(v) => Value::Vector(v.iter().map(|_| next()).collect()),
        Value::RowVector(v) => Value::RowVector(v.iter().map(|_| next()).collect()),
        Value::Matrix {
            rows,
            cols,
            data: d,
        } => Value::Matrix {
            rows: *rows,
            cols: *cols,
            data: d.iter().map(|_| next()).collect(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|i| with_data(i, data)).collect()),
        Value::Tuple(items) => Value::Tuple(items.iter().map(|i| with_data(i, data)).collect()),
        other => other.clone(),
    }
}

/// Rank for choosing the result shape of an elementwise operation.
fn rank(v: &Value) -> u8 {
    match v {
        Value::Matrix { .. } => 4,
        Value::Vector(_) => 3,
        Value::RowVector(_) => 2,
        Value::Array(_) => 1,
        _ => 0,
    }
}

/// Apply `f` elementwise over `args`, broadcasting scalars; every
/// container must have the same number of elements.
pub(crate) fn zip_n(name: &str, args: &[&Value], f: &dyn Fn(&[f64]) -> f64) -> Result<Value> {
    let template = args.iter().copied().max_by_key(|a| rank(a));
    let Some(template) = template.filter(|t| !is_scalar(t)) else {
        let xs: Vec<f64> = args.iter().map(|a| real(a)).collect::<Result<_>>()?;
        return Ok(Value::Real(f(&xs)));
    };
    let n = flat(template).len();
    let mut columns = Vec::with_capacity(args.len());
    for a in args {
        if is_scalar(a) {
            columns.push(None);
        } else {
            let elems = flat(a);
            if elems.len() != n {
                return Err(RuntimeError::fatal(format!(
                    "{name}: size mismatch between {} and {}",
                    describe(template),
                    describe(a)
                )));
            }
            columns.push(Some(elems));
        }
    }
    let scalars: Vec<f64> = args
        .iter()
        .map(|a| if is_scalar(a) { real(a) } else { Ok(0.0) })
        .collect::<Result<_>>()?;
    let mut xs = scalars.clone();
    let out: Vec<f64> = (0..n)
        .map(|i| {
            for (k, col) in columns.iter().enumerate() {
                if let Some(col) = col {
                    xs[k] = col[i];
                }
            }
            f(&xs)
        })
        .collect();
    Ok(with_data(template, &mut out.into_iter()))
}

pub(crate) fn map_real(name: &str, v: &Value, f: impl Fn(f64) -> f64) -> Result<Value> {
    zip_n(name, &[v], &|x| f(x[0]))
}

pub(crate) fn zip_real(
    name: &str,
    a: &Value,
    b: &Value,
    f: impl Fn(f64, f64) -> f64,
) -> Result<Value> {
    zip_n(name, &[a, b], &|x| f(x[0], x[1]))
}

/// An int array of the given nesting from flat ints (for int results).
pub(crate) fn int_array(items: Vec<i64>) -> Value {
    Value::Array(items.into_iter().map(Value::Int).collect())
}

/// Number of elements of a container (its outer size for arrays).
pub(crate) fn size(v: &Value) -> usize {
    match v {
        Value::Int(_) | Value::Real(_) | Value::Complex(..) => 1,
        Value::Vector(x) | Value::RowVector(x) => x.len(),
        Value::Matrix { data, .. } => data.len(),
        Value::ComplexVector(x) | Value::ComplexRowVector(x) => x.len(),
        Value::ComplexMatrix { data, .. } => data.len(),
        Value::Array(items) | Value::Tuple(items) => items.len(),
    }
}

/// Number of scalars inside.
pub(crate) fn num_elements(v: &Value) -> usize {
    match v {
        Value::Array(items) => items.iter().map(num_elements).sum(),
        other => size(other),
    }
}

pub(crate) fn matrix(v: &Value) -> Result<(usize, usize, &[f64])> {
    match v {
        Value::Matrix { rows, cols, data } => Ok((*rows, *cols, data)),
        other => Err(mismatch("expected a matrix", other)),
    }
}

/// The reals of a vector or row vector (or 1-d real array).
pub(crate) fn vec_of(v: &Value) -> Result<Vec<f64>> {
    match v {
        Value::Vector(x) | Value::RowVector(x) => Ok(x.clone()),
        Value::Array(_) => Ok(flat(v)),
        other => Err(mismatch("expected a vector", other)),
    }
}

pub(crate) fn mat(rows: usize, cols: usize, data: Vec<f64>) -> Value {
    Value::Matrix { rows, cols, data }
}
