//! Conforming one JSON value to a declared [`Shape`].

use super::error::{DataError, DataErrorKind};
use super::shape::Shape;
use crate::value::Value;
use serde_json::Value as Json;

/// How a JSON value looks, for error messages.
pub(super) fn describe(json: &Json) -> String {
    match json {
        Json::Null => "null".to_string(),
        Json::Bool(b) => format!("the boolean {b}"),
        Json::Number(n) => format!("the number {n}"),
        Json::String(s) => format!("the string \"{s}\""),
        Json::Array(items) => match items.len() {
            0 => "an empty array".to_string(),
            1 => "an array of 1 element".to_string(),
            n => format!("an array of {n} elements"),
        },
        Json::Object(map) => match map.len() {
            0 => "an empty object".to_string(),
            n => format!("an object with {n} keys"),
        },
    }
}

/// Path of an element: `y` → `y[3]` → `y[3, 2]`; tuples as `x.1`.
fn index_path(path: &str, i: usize) -> String {
    match path.strip_suffix(']') {
        Some(open) => format!("{open}, {}]", i + 1),
        None => format!("{path}[{}]", i + 1),
    }
}

struct Conformer;

impl Conformer {
    fn error(&self, path: &str, kind: DataErrorKind) -> DataError {
        DataError {
            variable: path.to_string(),
            kind,
        }
    }

    fn wrong(&self, path: &str, expected: impl Into<String>, json: &Json) -> DataError {
        self.error(
            path,
            DataErrorKind::WrongShape {
                expected: expected.into(),
                found: describe(json),
            },
        )
    }

    fn int(&self, path: &str, json: &Json) -> Result<i64, DataError> {
        match json {
            Json::Number(n) => {
                if let Some(i) = n.as_i64() {
                    if i32::try_from(i).is_ok() {
                        return Ok(i);
                    }
                    return Err(self.error(
                        path,
                        DataErrorKind::NotInt {
                            found: format!("{i}, outside Stan's int range (32-bit)"),
                        },
                    ));
                }
                Err(self.error(
                    path,
                    DataErrorKind::NotInt {
                        found: format!("the real number {n}"),
                    },
                ))
            }
            Json::String(s) if parse_special_real(s).is_some() => Err(self.error(
                path,
                DataErrorKind::NotInt {
                    found: format!("the string \"{s}\""),
                },
            )),
            other => Err(self.wrong(path, "an integer", other)),
        }
    }

    fn real(&self, path: &str, json: &Json) -> Result<f64, DataError> {
        match json {
            Json::Number(n) => n
                .as_f64()
                .ok_or_else(|| self.wrong(path, "a real number", json)),
            Json::String(s) => parse_special_real(s).ok_or_else(|| {
                self.wrong(
                    path,
                    "a real number (strings allowed: \"inf\", \"-inf\", \"NaN\")",
                    json,
                )
            }),
            other => Err(self.wrong(path, "a real number", other)),
        }
    }

    fn complex(&self, path: &str, json: &Json) -> Result<(f64, f64), DataError> {
        match json {
            Json::Array(parts) if parts.len() == 2 => Ok((
                self.real(&index_path(path, 0), &parts[0])?,
                self.real(&index_path(path, 1), &parts[1])?,
            )),
            other => Err(self.wrong(path, "a complex number as [real, imaginary]", other)),
        }
    }

    /// A JSON array of exactly `n` items, or `[]` when the shape is empty.
    fn items<'j>(
        &self,
        path: &str,
        json: &'j Json,
        n: usize,
        what: &Shape,
    ) -> Result<&'j [Json], DataError> {
        match json {
            Json::Array(items) if items.len() == n => Ok(items),
            Json::Array(items) if items.is_empty() && what.is_empty() => Ok(&[]),
            other => {
                let expected = match n {
                    1 => format!("`{what}` (an array of 1 element)"),
                    _ => format!("`{what}` (an array of {n} elements)"),
                };
                Err(self.wrong(path, expected, other))
            }
        }
    }

    fn conform(&self, path: &str, shape: &Shape, json: &Json) -> Result<Value, DataError> {
        Ok(match shape {
            Shape::Int => Value::Int(self.int(path, json)?),
            Shape::Real => Value::Real(self.real(path, json)?),
            Shape::Complex => {
                let (re, im) = self.complex(path, json)?;
                Value::Complex(re, im)
            }
            Shape::Vector(n) | Shape::RowVector(n) => {
                let items = self.items(path, json, *n, shape)?;
                let v = items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| self.real(&index_path(path, i), x))
                    .collect::<Result<_, _>>()?;
                if matches!(shape, Shape::Vector(_)) {
                    Value::Vector(v)
                } else {
                    Value::RowVector(v)
                }
            }
            Shape::ComplexVector(n) | Shape::ComplexRowVector(n) => {
                let items = self.items(path, json, *n, shape)?;
                let v = items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| self.complex(&index_path(path, i), x))
                    .collect::<Result<_, _>>()?;
                if matches!(shape, Shape::ComplexVector(_)) {
                    Value::ComplexVector(v)
                } else {
                    Value::ComplexRowVector(v)
                }
            }
            Shape::Matrix(rows, cols) => {
                let data = self.matrix(path, json, *rows, *cols, shape, |p, x| self.real(p, x))?;
                Value::Matrix {
                    rows: *rows,
                    cols: *cols,
                    data,
                }
            }
            Shape::ComplexMatrix(rows, cols) => {
                let data =
                    self.matrix(path, json, *rows, *cols, shape, |p, x| self.complex(p, x))?;
                Value::ComplexMatrix {
                    rows: *rows,
                    cols: *cols,
                    data,
                }
            }
            Shape::Array(n, elem) => {
                let items = self.items(path, json, *n, shape)?;
                if items.is_empty() && *n > 0 {
                    // `[]` for an array whose elements are empty.
                    return Ok(shape.zero_value());
                }
                Value::Array(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| self.conform(&index_path(path, i), elem, x))
                        .collect::<Result<_, _>>()?,
                )
            }
            Shape::Tuple(fields) => {
                let Json::Object(map) = json else {
                    return Err(self.wrong(
                        path,
                        format!(
                            "`{shape}` (an object with keys \"1\"..\"{}\")",
                            fields.len()
                        ),
                        json,
                    ));
                };
                let mut values = Vec::with_capacity(fields.len());
                for (i, field) in fields.iter().enumerate() {
                    let key = (i + 1).to_string();
                    let field_path = format!("{path}.{key}");
                    let Some(x) = map.get(&key) else {
                        return Err(self.error(
                            &field_path,
                            DataErrorKind::Missing {
                                expected: field.clone(),
                            },
                        ));
                    };
                    values.push(self.conform(&field_path, field, x)?);
                }
                if let Some(extra) = map.keys().find(|k| {
                    k.parse::<usize>()
                        .map_or(true, |i| i == 0 || i > fields.len())
                }) {
                    return Err(self
                        .wrong(path, format!("`{shape}`"), json)
                        .with_found(format!("an object with the unexpected key \"{extra}\"")));
                }
                Value::Tuple(values)
            }
        })
    }

    /// JSON matrices nest rows: `[[row 1], [row 2], ...]`; stored column-major.
    fn matrix<T: Copy + Default>(
        &self,
        path: &str,
        json: &Json,
        rows: usize,
        cols: usize,
        shape: &Shape,
        elem: impl Fn(&str, &Json) -> Result<T, DataError>,
    ) -> Result<Vec<T>, DataError> {
        let mut data = vec![T::default(); rows * cols];
        let row_items = self.items(path, json, rows, shape)?;
        if row_items.is_empty() {
            return Ok(data);
        }
        for (i, row) in row_items.iter().enumerate() {
            let row_path = index_path(path, i);
            let entries = match row {
                Json::Array(entries) if entries.len() == cols => entries,
                other => {
                    return Err(self.wrong(&row_path, format!("a matrix row of {cols} numbers (matrices are written as arrays of rows)"), other));
                }
            };
            for (j, x) in entries.iter().enumerate() {
                data[j * rows + i] = elem(&index_path(&row_path, j), x)?;
            }
        }
        Ok(data)
    }
}

impl DataError {
    fn with_found(mut self, found: String) -> DataError {
        if let DataErrorKind::WrongShape { found: f, .. } = &mut self.kind {
            *f = found;
        }
        self
    }
}

/// Stan JSON writes non-finite reals as strings.
fn parse_special_real(s: &str) -> Option<f64> {
    match s {
        "inf" | "+inf" | "Inf" | "Infinity" | "+Infinity" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-Inf" | "-Infinity" | "-infinity" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" | "-NaN" => Some(f64::NAN),
        _ => None,
    }
}

pub(super) fn conform(name: &str, shape: &Shape, json: &Json) -> Result<Value, DataError> {
    Conformer.conform(name, shape, json)
}
