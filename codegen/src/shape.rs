//! Static shapes of the values kernels hold: every size is known when the
//! kernels are generated (they are made for one data set), so an
//! expression's value is a fixed number of doubles in Stan's element order
//! (arrays row-major, each element flattened; matrices column-major).

use std::fmt;

use language::data::Shape as DataShape;
use language::value::Value;

/// The innermost (non-array) part of a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inner {
    Scalar,
    Vector(usize),
    RowVector(usize),
    Matrix(usize, usize),
}

impl Inner {
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn len(self) -> usize {
        match self {
            Inner::Scalar => 1,
            Inner::Vector(n) | Inner::RowVector(n) => n,
            Inner::Matrix(r, c) => r * c,
        }
    }

    /// Rank for the result of an elementwise operation (as the interpreter
    /// picks its template): matrix > vector > row vector > array > scalar.
    fn rank(self) -> u8 {
        match self {
            Inner::Matrix(..) => 4,
            Inner::Vector(_) => 3,
            Inner::RowVector(_) => 2,
            Inner::Scalar => 0,
        }
    }
}

/// `array[arrays...] inner`, with whether the scalars are ints; or, when
/// `tuple` is not empty, a tuple of those components, stored one after
/// another (`arrays` empty, `inner` scalar).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub arrays: Vec<usize>,
    pub inner: Inner,
    pub int: bool,
    pub tuple: Vec<Shape>,
}

/// One axis of a shape: its size and its stride in the flat element order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axis {
    pub size: usize,
    pub stride: usize,
}

impl Shape {
    pub const REAL: Shape = Shape {
        arrays: Vec::new(),
        inner: Inner::Scalar,
        int: false,
        tuple: Vec::new(),
    };
    pub const INT: Shape = Shape {
        arrays: Vec::new(),
        inner: Inner::Scalar,
        int: true,
        tuple: Vec::new(),
    };

    pub fn of(inner: Inner) -> Shape {
        Shape {
            arrays: Vec::new(),
            inner,
            int: false,
            tuple: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        if self.is_tuple() {
            return self.tuple.iter().map(Shape::len).sum();
        }
        self.arrays.iter().product::<usize>() * self.inner.len()
    }

    pub fn is_tuple(&self) -> bool {
        !self.tuple.is_empty()
    }

    /// A tuple of these components.
    pub fn tuple_of(components: Vec<Shape>) -> Shape {
        Shape {
            tuple: components,
            ..Shape::REAL
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_scalar(&self) -> bool {
        self.arrays.is_empty() && self.inner == Inner::Scalar && !self.is_tuple()
    }

    pub fn real(mut self) -> Shape {
        self.int = false;
        self.tuple = self.tuple.into_iter().map(Shape::real).collect();
        self
    }

    /// Stan's `dims` as the interpreter's: the array sizes, then the rows
    /// (and columns) of a vector or matrix; nothing after an empty array.
    pub fn dims(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for &n in &self.arrays {
            out.push(n);
            if n == 0 {
                return out;
            }
        }
        match self.inner {
            Inner::Scalar => {}
            Inner::Vector(n) | Inner::RowVector(n) => out.push(n),
            Inner::Matrix(r, c) => out.extend([r, c]),
        }
        out
    }

    /// The axes in indexing order (arrays outermost first, then a matrix's
    /// row then column), with their strides in the flat order.
    pub fn axes(&self) -> Vec<Axis> {
        let inner_len = self.inner.len();
        let mut out = Vec::new();
        let mut stride = inner_len;
        for &size in self.arrays.iter().rev() {
            out.push(Axis { size, stride });
            stride *= size;
        }
        out.reverse();
        match self.inner {
            Inner::Scalar => {}
            Inner::Vector(n) | Inner::RowVector(n) => out.push(Axis { size: n, stride: 1 }),
            Inner::Matrix(r, c) => {
                out.push(Axis { size: r, stride: 1 });
                out.push(Axis { size: c, stride: r });
            }
        }
        out
    }

    /// The shape of a value (`None` for tuples, complex values and ragged
    /// arrays, which kernels do not hold).
    pub fn of_value(value: &Value) -> Option<Shape> {
        match value {
            Value::Int(_) => Some(Shape::INT),
            Value::Real(_) => Some(Shape::REAL),
            Value::Vector(x) => Some(Shape::of(Inner::Vector(x.len()))),
            Value::RowVector(x) => Some(Shape::of(Inner::RowVector(x.len()))),
            Value::Matrix { rows, cols, .. } => Some(Shape::of(Inner::Matrix(*rows, *cols))),
            Value::Tuple(items) => Some(Shape::tuple_of(
                items
                    .iter()
                    .map(Shape::of_value)
                    .collect::<Option<Vec<_>>>()?,
            )),
            Value::Array(items) => {
                let first = items.first()?;
                let inner = Shape::of_value(first)?;
                if items
                    .iter()
                    .any(|i| Shape::of_value(i).as_ref() != Some(&inner))
                {
                    return None;
                }
                let mut arrays = vec![items.len()];
                arrays.extend(inner.arrays);
                Some(Shape {
                    arrays,
                    inner: inner.inner,
                    int: inner.int,
                    tuple: Vec::new(),
                })
            }
            _ => None,
        }
    }

    /// The shape of a declared (data or parameter) shape.
    pub fn of_data_shape(shape: &DataShape) -> Option<Shape> {
        match shape {
            DataShape::Int => Some(Shape::INT),
            DataShape::Real => Some(Shape::REAL),
            DataShape::Vector(n) => Some(Shape::of(Inner::Vector(*n))),
            DataShape::RowVector(n) => Some(Shape::of(Inner::RowVector(*n))),
            DataShape::Matrix(r, c) => Some(Shape::of(Inner::Matrix(*r, *c))),
            DataShape::Array(n, elem) => {
                let inner = Shape::of_data_shape(elem)?;
                let mut arrays = vec![*n];
                arrays.extend(inner.arrays);
                Some(Shape {
                    arrays,
                    inner: inner.inner,
                    int: inner.int,
                    tuple: Vec::new(),
                })
            }
            _ => None,
        }
    }

    /// The result shape of an elementwise operation over operands of these
    /// shapes (scalars broadcast; every container the same length), as the
    /// interpreter's template; the scalars are reals.
    pub fn broadcast(shapes: &[&Shape]) -> Result<Shape, String> {
        let mut best: Option<&Shape> = None;
        for s in shapes {
            if s.is_tuple() {
                return Err("an elementwise operation on a tuple".to_string());
            }
            if s.is_scalar() {
                continue;
            }
            let rank = |s: &Shape| {
                if s.arrays.is_empty() {
                    s.inner.rank()
                } else {
                    1
                }
            };
            match best {
                Some(b) if b.len() != s.len() => {
                    return Err(format!("operands of {} and {} elements", b.len(), s.len()));
                }
                // Ties go to the later operand, as the interpreter's `max_by_key`.
                Some(b) if rank(b) > rank(s) => {}
                _ => best = Some(s),
            }
        }
        Ok(best.cloned().unwrap_or(Shape::REAL).real())
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_tuple() {
            let items: Vec<String> = self.tuple.iter().map(|s| s.to_string()).collect();
            return write!(f, "tuple({})", items.join(", "));
        }
        if !self.arrays.is_empty() {
            let dims: Vec<String> = self.arrays.iter().map(|d| d.to_string()).collect();
            write!(f, "array[{}] ", dims.join(", "))?;
        }
        let scalar = if self.int { "int" } else { "real" };
        match self.inner {
            Inner::Scalar => f.write_str(scalar),
            Inner::Vector(n) => write!(f, "vector[{n}]"),
            Inner::RowVector(n) => write!(f, "row_vector[{n}]"),
            Inner::Matrix(r, c) => write!(f, "matrix[{r}, {c}]"),
        }
    }
}
