//! Runtime values of the scalar reference interpreter and of data.
//!
//! Matrices are stored column-major, as Stan (Eigen) stores them, so the
//! order of elements in a flattened matrix is Stan's order everywhere:
//! unconstrained parameter vectors, output columns, gradients.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Real(f64),
    Complex(f64, f64),
    Vector(Vec<f64>),
    RowVector(Vec<f64>),
    /// Column-major: element (i, j) is `data[j * rows + i]`.
    Matrix {
        rows: usize,
        cols: usize,
        data: Vec<f64>,
    },
    ComplexVector(Vec<(f64, f64)>),
    ComplexRowVector(Vec<(f64, f64)>),
    /// Column-major like [`Value::Matrix`].
    ComplexMatrix {
        rows: usize,
        cols: usize,
        data: Vec<(f64, f64)>,
    },
    Array(Vec<Value>),
    Tuple(Vec<Value>),
}

impl Value {
    /// Every real number inside, in Stan's order (arrays row-major over
    /// their dimensions, matrices column-major, complex as re, im).
    pub fn flatten_reals(&self, out: &mut Vec<f64>) {
        match self {
            Value::Int(i) => out.push(*i as f64),
            Value::Real(x) => out.push(*x),
            Value::Complex(re, im) => out.extend([*re, *im]),
            Value::Vector(v) | Value::RowVector(v) => out.extend_from_slice(v),
            Value::Matrix { data, .. } => out.extend_from_slice(data),
            Value::ComplexVector(v) | Value::ComplexRowVector(v) => {
                out.extend(v.iter().flat_map(|&(re, im)| [re, im]))
            }
            Value::ComplexMatrix { data, .. } => {
                out.extend(data.iter().flat_map(|&(re, im)| [re, im]))
            }
            Value::Array(items) | Value::Tuple(items) => {
                items.iter().for_each(|v| v.flatten_reals(out))
            }
        }
    }

    /// How a draws file stores this value: its dimensions (arrays' first,
    /// then a vector's length or a matrix's rows and columns; complex
    /// numbers add a trailing 2 for re, im) and whether its scalars are
    /// ints. An empty array ends the dimensions (its elements' shape is
    /// unknown) and counts as real. `None` for a tuple or an array of
    /// tuples: a file stores their components.
    pub fn stored_dims(&self) -> Option<(Vec<usize>, bool)> {
        let mut dims = Vec::new();
        let mut inner = self;
        while let Value::Array(items) = inner {
            dims.push(items.len());
            match items.first() {
                Some(first) => inner = first,
                None => return Some((dims, false)),
            }
        }
        match inner {
            Value::Int(_) | Value::Real(_) => {}
            Value::Complex(..) => dims.push(2),
            Value::Vector(v) | Value::RowVector(v) => dims.push(v.len()),
            Value::Matrix { rows, cols, .. } => dims.extend([*rows, *cols]),
            Value::ComplexVector(v) | Value::ComplexRowVector(v) => dims.extend([v.len(), 2]),
            Value::ComplexMatrix { rows, cols, .. } => dims.extend([*rows, *cols, 2]),
            Value::Tuple(_) | Value::Array(_) => return None,
        }
        Some((dims, matches!(inner, Value::Int(_))))
    }

    /// The elements in the order a draws file stores them: C (row-major)
    /// order, a matrix row by row although memory holds it column by
    /// column.
    pub fn flatten_row_major(&self, out: &mut Vec<f64>) {
        match self {
            Value::Array(items) => items.iter().for_each(|v| v.flatten_row_major(out)),
            Value::Matrix { rows, cols, data } => {
                out.extend((0..rows * cols).map(|k| data[(k % cols) * rows + k / cols]))
            }
            Value::ComplexMatrix { rows, cols, data } => {
                for k in 0..rows * cols {
                    let (re, im) = data[(k % cols) * rows + k / cols];
                    out.extend([re, im]);
                }
            }
            other => other.flatten_reals(out),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_real(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(x) => Some(*x),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T>(
            f: &mut fmt::Formatter<'_>,
            items: &[T],
            open: &str,
            close: &str,
            each: impl Fn(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
        ) -> fmt::Result {
            write!(f, "{open}")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                each(f, item)?;
            }
            write!(f, "{close}")
        }
        let complex = |f: &mut fmt::Formatter<'_>, &(re, im): &(f64, f64)| write!(f, "{re}+{im}i");
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Real(x) => write!(f, "{x}"),
            Value::Complex(re, im) => complex(f, &(*re, *im)),
            Value::Vector(v) => list(f, v, "[", "]'", |f, x| write!(f, "{x}")),
            Value::RowVector(v) => list(f, v, "[", "]", |f, x| write!(f, "{x}")),
            Value::Matrix { rows, cols, data } => {
                let row_list: Vec<Vec<f64>> = (0..*rows)
                    .map(|i| (0..*cols).map(|j| data[j * rows + i]).collect())
                    .collect();
                list(f, &row_list, "[", "]", |f, r| {
                    list(f, r, "[", "]", |f, x| write!(f, "{x}"))
                })
            }
            Value::ComplexVector(v) => list(f, v, "[", "]'", complex),
            Value::ComplexRowVector(v) => list(f, v, "[", "]", complex),
            Value::ComplexMatrix { rows, cols, data } => {
                let row_list: Vec<Vec<(f64, f64)>> = (0..*rows)
                    .map(|i| (0..*cols).map(|j| data[j * rows + i]).collect())
                    .collect();
                list(f, &row_list, "[", "]", |f, r| list(f, r, "[", "]", complex))
            }
            Value::Array(items) => list(f, items, "{", "}", |f, v| write!(f, "{v}")),
            Value::Tuple(items) => list(f, items, "(", ")", |f, v| write!(f, "{v}")),
        }
    }
}
