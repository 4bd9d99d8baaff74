//! Runtime errors of the reference interpreter: data, rejection, indexing.

use language::span::Span;
use std::fmt;

/// What went wrong; decides how a sampler reacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad or missing data (shape, type, bounds, constraints).
    Data,
    /// `reject(...)` or a domain error (e.g. a negative scale): the
    /// proposal has log density −∞, as Stan's rejection.
    Rejection,
    /// An index outside its container (1-based, as Stan reports it).
    IndexOutOfRange,
    /// A declared constraint violated by a transformed or generated value.
    Constraint,
    /// `fatal_error(...)`, integer overflow/division by zero, recursion
    /// too deep, sizes that do not match: stops the run.
    Fatal,
    /// A construct the interpreter cannot run yet.
    Unsupported,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeError {
    pub kind: ErrorKind,
    pub message: String,
    /// Where in the program, when known.
    pub span: Option<Span>,
}

impl RuntimeError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> RuntimeError {
        RuntimeError {
            kind,
            message: message.into(),
            span: None,
        }
    }

    pub fn rejection(message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(ErrorKind::Rejection, message)
    }

    pub fn fatal(message: impl Into<String>) -> RuntimeError {
        RuntimeError::new(ErrorKind::Fatal, message)
    }

    /// Every executor's error for a call of user function `function`
    /// nested deeper than `limit` calls.
    pub fn too_deep(function: &str, limit: usize) -> RuntimeError {
        RuntimeError::fatal(format!(
            "recursion too deep: more than {limit} nested calls of user functions (in `{function}`)"
        ))
    }

    /// Attach `span` unless a more precise one is already known.
    pub fn at(mut self, span: Span) -> RuntimeError {
        self.span.get_or_insert(span);
        self
    }

    /// True if a sampler should treat this as log density −∞ and go on.
    pub fn is_rejection(&self) -> bool {
        matches!(self.kind, ErrorKind::Rejection | ErrorKind::Constraint)
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RuntimeError {}

pub type Result<T> = std::result::Result<T, RuntimeError>;

/// A shape/type mismatch the checker should have prevented.
pub(crate) fn mismatch(what: &str, found: &language::value::Value) -> RuntimeError {
    RuntimeError::fatal(format!("{what}: unexpected operand {}", describe(found)))
}

/// A short description of a value's type and size, e.g. `vector[3]`.
pub(crate) fn describe(v: &language::value::Value) -> String {
    use language::value::Value::*;
    match v {
        Int(_) => "int".into(),
        Real(_) => "real".into(),
        Complex(..) => "complex".into(),
        Vector(x) => format!("vector[{}]", x.len()),
        RowVector(x) => format!("row_vector[{}]", x.len()),
        Matrix { rows, cols, .. } => format!("matrix[{rows}, {cols}]"),
        ComplexVector(x) => format!("complex_vector[{}]", x.len()),
        ComplexRowVector(x) => format!("complex_row_vector[{}]", x.len()),
        ComplexMatrix { rows, cols, .. } => format!("complex_matrix[{rows}, {cols}]"),
        Array(items) => match items.first() {
            Some(first) => format!("array[{}] {}", items.len(), describe(first)),
            None => "array[0]".into(),
        },
        Tuple(items) => format!(
            "tuple({})",
            items.iter().map(describe).collect::<Vec<_>>().join(", ")
        ),
    }
}
