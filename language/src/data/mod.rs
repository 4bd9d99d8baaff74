//! Reading data in the Stan JSON format (CmdStan's) and conforming it to
//! the declarations of a program's `data` block.
//!
//! [`DataFile::parse`] reads the JSON text; [`DataFile::take`] turns one
//! variable into a [`Value`] of the declared [`Shape`] (sizes already
//! evaluated), and [`check_bounds`] checks declared bounds. Every failure is
//! a [`DataError`] naming the variable (and the element, 1-based, as Stan
//! users write it), what was expected and what was found.

mod bounds;
mod conform;
mod error;
mod shape;

pub use bounds::{Bound, check_bounds};
pub use error::{DataError, DataErrorKind};
pub use shape::Shape;

use crate::value::Value;

/// A parsed Stan JSON data file: a JSON object of variables.
#[derive(Debug, Clone)]
pub struct DataFile {
    vars: serde_json::Map<String, serde_json::Value>,
}

impl DataFile {
    /// Parse JSON text. The top level must be an object.
    pub fn parse(text: &str) -> Result<DataFile, DataError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| DataError {
            variable: String::new(),
            kind: DataErrorKind::Json {
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            },
        })?;
        match value {
            serde_json::Value::Object(vars) => Ok(DataFile { vars }),
            other => Err(DataError {
                variable: String::new(),
                kind: DataErrorKind::NotAnObject {
                    found: conform::describe(&other),
                },
            }),
        }
    }

    /// An empty data set (a program without data, or no file given).
    pub fn empty() -> DataFile {
        DataFile {
            vars: serde_json::Map::new(),
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    /// Names present in the file, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }

    /// Conform variable `name` to `shape`. A variable of zero total size may
    /// be missing from the file, as in CmdStan.
    pub fn take(&self, name: &str, shape: &Shape) -> Result<Value, DataError> {
        match self.vars.get(name) {
            Some(json) => conform::conform(name, shape, json),
            None if shape.is_empty() => Ok(shape.zero_value()),
            None => Err(DataError {
                variable: name.to_string(),
                kind: DataErrorKind::Missing {
                    expected: shape.clone(),
                },
            }),
        }
    }

    /// Read a JSON value whose shape is not declared anywhere (for example
    /// constrained parameter values given by name): numbers become `Int` or
    /// `Real`, nested arrays become `Array`, objects with keys "1".."n"
    /// become tuples. Callers conform it further with [`DataFile::take`].
    pub fn get_raw(&self, name: &str) -> Option<&serde_json::Value> {
        self.vars.get(name)
    }
}

#[cfg(test)]
mod tests;
