use crate::value::Value;
use std::fmt;

/// A declared type with every size evaluated: what a data variable must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    Int,
    Real,
    Complex,
    Vector(usize),
    RowVector(usize),
    Matrix(usize, usize),
    ComplexVector(usize),
    ComplexRowVector(usize),
    ComplexMatrix(usize, usize),
    /// `array[n] elem`; multi-dimensional arrays nest.
    Array(usize, Box<Shape>),
    Tuple(Vec<Shape>),
}

impl Shape {
    /// Number of real scalars (complex counts two).
    pub fn num_reals(&self) -> usize {
        match self {
            Shape::Int | Shape::Real => 1,
            Shape::Complex => 2,
            Shape::Vector(n) | Shape::RowVector(n) => *n,
            Shape::Matrix(r, c) => r * c,
            Shape::ComplexVector(n) | Shape::ComplexRowVector(n) => 2 * n,
            Shape::ComplexMatrix(r, c) => 2 * r * c,
            Shape::Array(n, elem) => n * elem.num_reals(),
            Shape::Tuple(items) => items.iter().map(Shape::num_reals).sum(),
        }
    }

    /// The dimensions a draws file stores a value of this shape with
    /// ([`Value::stored_dims`]); `None` for tuples and empty arrays, whose
    /// stored dimensions depend on more than the shape.
    pub fn stored_dims(&self) -> Option<Vec<usize>> {
        match self {
            Shape::Int | Shape::Real => Some(Vec::new()),
            Shape::Complex => Some(vec![2]),
            Shape::Vector(n) | Shape::RowVector(n) => Some(vec![*n]),
            Shape::Matrix(r, c) => Some(vec![*r, *c]),
            Shape::ComplexVector(n) | Shape::ComplexRowVector(n) => Some(vec![*n, 2]),
            Shape::ComplexMatrix(r, c) => Some(vec![*r, *c, 2]),
            Shape::Array(0, _) | Shape::Tuple(_) => None,
            Shape::Array(n, elem) => {
                let mut dims = vec![*n];
                dims.extend(elem.stored_dims()?);
                Some(dims)
            }
        }
    }

    /// Whether memory order is the stored order (no matrix inside):
    /// [`Shape::push_row_major`] would copy the elements unchanged.
    pub fn is_row_major(&self) -> bool {
        match self {
            Shape::Matrix(..) | Shape::ComplexMatrix(..) => false,
            Shape::Array(_, elem) => elem.is_row_major(),
            Shape::Tuple(items) => items.iter().all(Shape::is_row_major),
            _ => true,
        }
    }

    /// `elements` of a value of this shape, in memory order
    /// ([`Value::flatten_reals`]'s), pushed onto `out` in the order a draws
    /// file stores them ([`Value::flatten_row_major`]'s).
    pub fn push_row_major(&self, elements: &[f64], out: &mut Vec<f64>) {
        match self {
            Shape::Array(n, elem) if *n > 0 => {
                let size = elem.num_reals();
                for item in elements.chunks(size.max(1)).take(*n) {
                    elem.push_row_major(item, out);
                }
            }
            Shape::Matrix(r, c) => {
                out.extend((0..r * c).map(|k| elements[(k % c) * r + k / c]));
            }
            Shape::ComplexMatrix(r, c) => {
                for k in 0..r * c {
                    let at = 2 * ((k % c) * r + k / c);
                    out.extend([elements[at], elements[at + 1]]);
                }
            }
            _ => out.extend_from_slice(elements),
        }
    }

    /// True if the shape holds no scalar at all (some size is zero).
    pub fn is_empty(&self) -> bool {
        self.num_reals() == 0
    }

    /// The value of this shape with every element zero.
    pub fn zero_value(&self) -> Value {
        match self {
            Shape::Int => Value::Int(0),
            Shape::Real => Value::Real(0.0),
            Shape::Complex => Value::Complex(0.0, 0.0),
            Shape::Vector(n) => Value::Vector(vec![0.0; *n]),
            Shape::RowVector(n) => Value::RowVector(vec![0.0; *n]),
            Shape::Matrix(r, c) => Value::Matrix {
                rows: *r,
                cols: *c,
                data: vec![0.0; r * c],
            },
            Shape::ComplexVector(n) => Value::ComplexVector(vec![(0.0, 0.0); *n]),
            Shape::ComplexRowVector(n) => Value::ComplexRowVector(vec![(0.0, 0.0); *n]),
            Shape::ComplexMatrix(r, c) => Value::ComplexMatrix {
                rows: *r,
                cols: *c,
                data: vec![(0.0, 0.0); r * c],
            },
            Shape::Array(n, elem) => Value::Array((0..*n).map(|_| elem.zero_value()).collect()),
            Shape::Tuple(items) => Value::Tuple(items.iter().map(Shape::zero_value).collect()),
        }
    }
}

/// Stan declaration syntax, e.g. `array[3, 2] vector[4]`.
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Int => write!(f, "int"),
            Shape::Real => write!(f, "real"),
            Shape::Complex => write!(f, "complex"),
            Shape::Vector(n) => write!(f, "vector[{n}]"),
            Shape::RowVector(n) => write!(f, "row_vector[{n}]"),
            Shape::Matrix(r, c) => write!(f, "matrix[{r}, {c}]"),
            Shape::ComplexVector(n) => write!(f, "complex_vector[{n}]"),
            Shape::ComplexRowVector(n) => write!(f, "complex_row_vector[{n}]"),
            Shape::ComplexMatrix(r, c) => write!(f, "complex_matrix[{r}, {c}]"),
            Shape::Array(..) => {
                let mut dims = Vec::new();
                let mut t = self;
                while let Shape::Array(n, elem) = t {
                    dims.push(n.to_string());
                    t = elem;
                }
                write!(f, "array[{}] {t}", dims.join(", "))
            }
            Shape::Tuple(items) => {
                let items: Vec<String> = items.iter().map(Shape::to_string).collect();
                write!(f, "tuple({})", items.join(", "))
            }
        }
    }
}
