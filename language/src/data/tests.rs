use super::*;

fn take(json: &str, name: &str, shape: Shape) -> Result<Value, DataError> {
    DataFile::parse(json).unwrap().take(name, &shape)
}

fn err_text(r: Result<Value, DataError>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn scalars_and_special_reals() {
    assert_eq!(take(r#"{"N": 8}"#, "N", Shape::Int).unwrap(), Value::Int(8));
    assert_eq!(
        take(r#"{"x": 8}"#, "x", Shape::Real).unwrap(),
        Value::Real(8.0)
    );
    assert_eq!(
        take(r#"{"x": -1.5e3}"#, "x", Shape::Real).unwrap(),
        Value::Real(-1500.0)
    );
    assert_eq!(
        take(r#"{"x": "inf"}"#, "x", Shape::Real).unwrap(),
        Value::Real(f64::INFINITY)
    );
    assert_eq!(
        take(r#"{"x": "-inf"}"#, "x", Shape::Real).unwrap(),
        Value::Real(f64::NEG_INFINITY)
    );
    let Value::Real(nan) = take(r#"{"x": "NaN"}"#, "x", Shape::Real).unwrap() else {
        panic!()
    };
    assert!(nan.is_nan());
}

#[test]
fn int_declared_but_real_found() {
    let e = err_text(take(r#"{"N": 2.5}"#, "N", Shape::Int));
    assert_eq!(
        e,
        "variable `N` is declared int, but found the real number 2.5"
    );
    let e = err_text(take(r#"{"N": 3000000000}"#, "N", Shape::Int));
    assert!(e.contains("outside Stan's int range"), "{e}");
    let e = err_text(take(
        r#"{"y": [1, 2, 3.5]}"#,
        "y",
        Shape::Array(3, Box::new(Shape::Int)),
    ));
    assert_eq!(
        e,
        "variable `y[3]` is declared int, but found the real number 3.5"
    );
}

#[test]
fn vectors_and_wrong_lengths() {
    assert_eq!(
        take(r#"{"y": [1, 2.5]}"#, "y", Shape::Vector(2)).unwrap(),
        Value::Vector(vec![1.0, 2.5])
    );
    let e = err_text(take(r#"{"y": [1, 2, 3]}"#, "y", Shape::Vector(4)));
    assert_eq!(
        e,
        "variable `y`: expected `vector[4]` (an array of 4 elements), found an array of 3 elements"
    );
    let e = err_text(take(r#"{"y": 3}"#, "y", Shape::RowVector(1)));
    assert_eq!(
        e,
        "variable `y`: expected `row_vector[1]` (an array of 1 element), found the number 3"
    );
}

#[test]
fn matrices_are_rows_in_json_and_column_major_in_memory() {
    let v = take(r#"{"m": [[1, 2, 3], [4, 5, 6]]}"#, "m", Shape::Matrix(2, 3)).unwrap();
    assert_eq!(
        v,
        Value::Matrix {
            rows: 2,
            cols: 3,
            data: vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
        }
    );
    let e = err_text(take(
        r#"{"m": [[1, 2, 3], [4, 5]]}"#,
        "m",
        Shape::Matrix(2, 3),
    ));
    assert_eq!(
        e,
        "variable `m[2]`: expected a matrix row of 3 numbers (matrices are written as arrays of rows), found an array of 2 elements"
    );
    let e = err_text(take(
        r#"{"m": [[1, 2], [4, "x"]]}"#,
        "m",
        Shape::Matrix(2, 2),
    ));
    assert!(
        e.starts_with("variable `m[2, 2]`: expected a real number"),
        "{e}"
    );
}

#[test]
fn nested_arrays_name_elements_like_stan_indexing() {
    let shape = Shape::Array(2, Box::new(Shape::Array(2, Box::new(Shape::Vector(2)))));
    let v = take(
        r#"{"a": [[[1,2],[3,4]],[[5,6],[7,8]]]}"#,
        "a",
        shape.clone(),
    )
    .unwrap();
    let mut flat = Vec::new();
    v.flatten_reals(&mut flat);
    assert_eq!(flat, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let e = err_text(take(r#"{"a": [[[1,2],[3,4]],[[5,6],[7]]]}"#, "a", shape));
    assert!(
        e.starts_with("variable `a[2, 2]`: expected `vector[2]`"),
        "{e}"
    );
}

#[test]
fn empty_containers() {
    assert_eq!(
        take(r#"{"y": []}"#, "y", Shape::Vector(0)).unwrap(),
        Value::Vector(vec![])
    );
    assert_eq!(
        take(r#"{"m": []}"#, "m", Shape::Matrix(0, 3)).unwrap(),
        Value::Matrix {
            rows: 0,
            cols: 3,
            data: vec![]
        }
    );
    // array[2, 0] real may be written [] or [[], []]
    let shape = Shape::Array(2, Box::new(Shape::Array(0, Box::new(Shape::Real))));
    let expected = Value::Array(vec![Value::Array(vec![]), Value::Array(vec![])]);
    assert_eq!(take(r#"{"a": []}"#, "a", shape.clone()).unwrap(), expected);
    assert_eq!(
        take(r#"{"a": [[], []]}"#, "a", shape.clone()).unwrap(),
        expected
    );
    // zero-size variables may be missing, as in CmdStan
    assert_eq!(take(r#"{}"#, "a", shape).unwrap(), expected);
}

#[test]
fn missing_variable_names_declaration() {
    let e = err_text(take(
        r#"{"N": 1}"#,
        "y",
        Shape::Array(3, Box::new(Shape::Real)),
    ));
    assert_eq!(
        e,
        "variable `y` is missing from the data; it is declared `array[3] real`"
    );
}

#[test]
fn complex_and_tuples() {
    assert_eq!(
        take(r#"{"z": [1, -2]}"#, "z", Shape::Complex).unwrap(),
        Value::Complex(1.0, -2.0)
    );
    assert_eq!(
        take(r#"{"z": [[1, 2], [3, 4]]}"#, "z", Shape::ComplexVector(2)).unwrap(),
        Value::ComplexVector(vec![(1.0, 2.0), (3.0, 4.0)])
    );
    let shape = Shape::Tuple(vec![Shape::Int, Shape::Vector(2)]);
    assert_eq!(
        take(r#"{"t": {"1": 3, "2": [0.5, 1]}}"#, "t", shape.clone()).unwrap(),
        Value::Tuple(vec![Value::Int(3), Value::Vector(vec![0.5, 1.0])])
    );
    let e = err_text(take(r#"{"t": {"1": 3}}"#, "t", shape.clone()));
    assert_eq!(
        e,
        "variable `t.2` is missing from the data; it is declared `vector[2]`"
    );
    let e = err_text(take(r#"{"t": {"1": 3, "2": [1, 2], "3": 0}}"#, "t", shape));
    assert!(e.contains("unexpected key \"3\""), "{e}");
}

#[test]
fn json_errors_have_positions() {
    let e = DataFile::parse("{\n  \"N\": 1,\n  \"y\": [1, 2,]\n}").unwrap_err();
    match e.kind {
        DataErrorKind::Json { line, .. } => assert_eq!(line, 3),
        other => panic!("{other:?}"),
    }
    let e = DataFile::parse("[1, 2]").unwrap_err();
    assert_eq!(
        e.to_string(),
        "data file must hold a JSON object of variables, found an array of 2 elements"
    );
}

#[test]
fn bounds_name_the_offending_element() {
    let v = Value::Array(vec![Value::Int(1), Value::Int(0), Value::Int(-1)]);
    let e = check_bounds(
        "y",
        &v,
        Some(Bound::Scalar(0.0)),
        None,
        "array[3] int<lower=0>",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "variable `y[3]` is -1, which violates its declaration `array[3] int<lower=0>`"
    );
    let m = Value::Matrix {
        rows: 2,
        cols: 2,
        data: vec![0.1, 0.2, 0.3, 1.5],
    };
    let e = check_bounds(
        "p",
        &m,
        Some(Bound::Scalar(0.0)),
        Some(Bound::Scalar(1.0)),
        "matrix<lower=0, upper=1>[2, 2]",
    )
    .unwrap_err();
    assert_eq!(e.variable, "p[2, 2]");
    let nan = Value::Real(f64::NAN);
    assert!(check_bounds("x", &nan, Some(Bound::Scalar(0.0)), None, "real<lower=0>").is_err());
    let lo = Value::Vector(vec![0.0, 1.0]);
    let ok = Value::Vector(vec![0.5, 1.5]);
    assert!(
        check_bounds(
            "v",
            &ok,
            Some(Bound::PerElement(&lo)),
            None,
            "vector<lower=lo>[2]"
        )
        .is_ok()
    );
    let bad = Value::Vector(vec![0.5, 0.5]);
    assert_eq!(
        check_bounds(
            "v",
            &bad,
            Some(Bound::PerElement(&lo)),
            None,
            "vector<lower=lo>[2]"
        )
        .unwrap_err()
        .variable,
        "v[2]"
    );
}

#[test]
fn every_posteriordb_data_file_parses() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/posteriordb");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus missing at {}: {e}", dir.display()));
    let mut n = 0;
    for entry in entries {
        let path = entry.unwrap().path().join("data.json");
        if path.exists() {
            let text = std::fs::read_to_string(&path).unwrap();
            DataFile::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 20, "only {n} data files found");
}

/// A value of `shape` whose reals count up from `next` in memory order.
fn numbered(shape: &Shape, next: &mut f64) -> Value {
    let mut take = |n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| {
                *next += 1.0;
                *next
            })
            .collect()
    };
    match shape {
        Shape::Real => Value::Real(take(1)[0]),
        Shape::Int => Value::Int(take(1)[0] as i64),
        Shape::Vector(n) => Value::Vector(take(*n)),
        Shape::Matrix(r, c) => Value::Matrix {
            rows: *r,
            cols: *c,
            data: take(r * c),
        },
        Shape::ComplexMatrix(r, c) => Value::ComplexMatrix {
            rows: *r,
            cols: *c,
            data: take(2 * r * c).chunks(2).map(|p| (p[0], p[1])).collect(),
        },
        Shape::Array(n, elem) => Value::Array((0..*n).map(|_| numbered(elem, next)).collect()),
        other => panic!("no numbered {other:?}"),
    }
}

/// The stored layout of a dense value from its shape (what the batched
/// executor writes from lane columns) is the value's own.
#[test]
fn stored_layout_from_the_shape_is_the_values() {
    let array = |n, s| Shape::Array(n, Box::new(s));
    for shape in [
        Shape::Real,
        Shape::Int,
        Shape::Vector(3),
        Shape::Matrix(2, 3),
        Shape::ComplexMatrix(3, 2),
        array(2, Shape::Matrix(3, 2)),
        array(2, array(3, Shape::Int)),
        array(2, Shape::Vector(0)),
    ] {
        let value = numbered(&shape, &mut 0.0);
        let (dims, is_int) = value.stored_dims().unwrap();
        assert_eq!(shape.stored_dims(), Some(dims), "{shape:?}");
        assert_eq!(
            is_int,
            matches!(shape, Shape::Int) || shape == array(2, array(3, Shape::Int))
        );
        let (mut memory, mut stored, mut from_shape) = (Vec::new(), Vec::new(), Vec::new());
        value.flatten_reals(&mut memory);
        value.flatten_row_major(&mut stored);
        shape.push_row_major(&memory, &mut from_shape);
        assert_eq!(from_shape, stored, "{shape:?}");
    }
    // a 2 × 3 matrix is stored row by row: (1, 3, 5), (2, 4, 6)
    let mut stored = Vec::new();
    Shape::Matrix(2, 3).push_row_major(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &mut stored);
    assert_eq!(stored, [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    // no stored layout from the shape alone for tuples and empty arrays
    assert_eq!(Shape::Tuple(vec![Shape::Real]).stored_dims(), None);
    assert_eq!(array(0, Shape::Vector(2)).stored_dims(), None);
}
