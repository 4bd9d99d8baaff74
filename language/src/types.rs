//! Semantic types shared by the checker, the built-in signature table, hover
//! and completion, and later the model IR.

use std::fmt;

/// Whether a value may depend on parameters (`AutoDiff`) or is fixed data
/// (`DataOnly`). Function arguments declared `data` require `DataOnly`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AdLevel {
    DataOnly,
    AutoDiff,
}

/// An unsized Stan type. Arrays nest one dimension per level:
/// `array[,] real` is `Array(Array(Real))`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Int,
    Real,
    Complex,
    Vector,
    RowVector,
    Matrix,
    ComplexVector,
    ComplexRowVector,
    ComplexMatrix,
    Array(Box<Type>),
    Tuple(Vec<Type>),
    /// A function value (user functions passed to higher-order functions).
    Function(Box<FunctionType>),
    /// The type of an ill-typed expression after its error was reported;
    /// compatible with everything so one mistake gives one diagnostic.
    Error,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionType {
    pub args: Vec<(AdLevel, Type)>,
    /// `None` is `void`.
    pub ret: Option<Type>,
}

impl Type {
    pub fn array_of(elem: Type, dims: usize) -> Type {
        (0..dims).fold(elem, |t, _| Type::Array(Box::new(t)))
    }

    /// Number of array dimensions and the innermost element type.
    pub fn array_dims(&self) -> (usize, &Type) {
        let mut t = self;
        let mut n = 0;
        while let Type::Array(inner) = t {
            n += 1;
            t = inner;
        }
        (n, t)
    }

    pub fn is_int(&self) -> bool {
        matches!(self, Type::Int)
    }

    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Int | Type::Real | Type::Complex)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Type::Error)
    }

    /// Reals, real containers (no ints, tuples or complex values).
    pub fn is_real_typed(&self) -> bool {
        match self {
            Type::Real | Type::Vector | Type::RowVector | Type::Matrix => true,
            Type::Array(t) => t.is_real_typed(),
            _ => false,
        }
    }

    /// True if any complex type occurs inside.
    pub fn contains_complex(&self) -> bool {
        match self {
            Type::Complex | Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix => {
                true
            }
            Type::Array(t) => t.contains_complex(),
            Type::Tuple(ts) => ts.iter().any(Type::contains_complex),
            _ => false,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Int => write!(f, "int"),
            Type::Real => write!(f, "real"),
            Type::Complex => write!(f, "complex"),
            Type::Vector => write!(f, "vector"),
            Type::RowVector => write!(f, "row_vector"),
            Type::Matrix => write!(f, "matrix"),
            Type::ComplexVector => write!(f, "complex_vector"),
            Type::ComplexRowVector => write!(f, "complex_row_vector"),
            Type::ComplexMatrix => write!(f, "complex_matrix"),
            Type::Array(_) => {
                let (n, elem) = self.array_dims();
                write!(f, "array[{}] {}", ",".repeat(n - 1), elem)
            }
            Type::Tuple(ts) => {
                write!(f, "tuple(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
            Type::Function(ft) => {
                write!(f, "(")?;
                for (i, (ad, t)) in ft.args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    if *ad == AdLevel::DataOnly {
                        write!(f, "data ")?;
                    }
                    write!(f, "{t}")?;
                }
                match &ft.ret {
                    Some(r) => write!(f, ") => {r}"),
                    None => write!(f, ") => void"),
                }
            }
            Type::Error => write!(f, "<error>"),
        }
    }
}
