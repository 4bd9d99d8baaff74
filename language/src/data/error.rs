use super::shape::Shape;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct DataError {
    /// The variable (with element path, e.g. `y[3]`), empty for file-level errors.
    pub variable: String,
    pub kind: DataErrorKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DataErrorKind {
    /// The text is not JSON.
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// The top level is not a JSON object.
    NotAnObject { found: String },
    /// A declared data variable is absent.
    Missing { expected: Shape },
    /// The value's structure does not match the declaration.
    WrongShape { expected: String, found: String },
    /// A real (or a string) where an int is declared.
    NotInt { found: String },
    /// A declared bound is violated.
    OutOfBounds { value: f64, declared: String },
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let var = &self.variable;
        match &self.kind {
            DataErrorKind::Json {
                line,
                column,
                message,
            } => {
                write!(
                    f,
                    "data file is not valid JSON (line {line}, column {column}): {message}"
                )
            }
            DataErrorKind::NotAnObject { found } => {
                write!(
                    f,
                    "data file must hold a JSON object of variables, found {found}"
                )
            }
            DataErrorKind::Missing { expected } => {
                write!(
                    f,
                    "variable `{var}` is missing from the data; it is declared `{expected}`"
                )
            }
            DataErrorKind::WrongShape { expected, found } => {
                write!(f, "variable `{var}`: expected {expected}, found {found}")
            }
            DataErrorKind::NotInt { found } => {
                write!(f, "variable `{var}` is declared int, but found {found}")
            }
            DataErrorKind::OutOfBounds { value, declared } => {
                write!(
                    f,
                    "variable `{var}` is {value}, which violates its declaration `{declared}`"
                )
            }
        }
    }
}

impl std::error::Error for DataError {}
