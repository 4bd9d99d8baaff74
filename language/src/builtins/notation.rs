//! A tiny parser for Stan type notation (`array[,] real`, `data vector`,
//! `tuple(matrix, vector)`), used to write the signature table compactly.
//! Only the table's own text goes through it, so malformed input is a bug
//! in the table and reported with the offending text.

use crate::types::{AdLevel, Type};

/// Parses one type such as `array[,] int` or `tuple(matrix, vector)`.
pub(crate) fn parse_type(text: &str) -> Result<Type, String> {
    let mut parser = Parser { rest: text.trim() };
    let ty = parser.ty()?;
    if parser.rest.trim().is_empty() {
        Ok(ty)
    } else {
        Err(format!("trailing text in type `{text}`"))
    }
}

/// Parses one argument: a type optionally preceded by `data`.
pub(crate) fn parse_arg(text: &str) -> Result<(AdLevel, Type), String> {
    let text = text.trim();
    match text.strip_prefix("data ") {
        Some(rest) => Ok((AdLevel::DataOnly, parse_type(rest)?)),
        None => Ok((AdLevel::AutoDiff, parse_type(text)?)),
    }
}

/// Splits at commas that are not nested inside brackets or parentheses.
pub(crate) fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() || !parts.is_empty() {
        parts.push(last);
    }
    parts
}

struct Parser<'a> {
    rest: &'a str,
}

impl Parser<'_> {
    fn ty(&mut self) -> Result<Type, String> {
        self.rest = self.rest.trim_start();
        if let Some(after) = self.rest.strip_prefix("array[") {
            let close = after
                .find(']')
                .ok_or_else(|| format!("unclosed array in `{}`", self.rest))?;
            let dims = after[..close].matches(',').count() + 1;
            self.rest = &after[close + 1..];
            let elem = self.ty()?;
            return Ok(Type::array_of(elem, dims));
        }
        if let Some(after) = self.rest.strip_prefix("tuple(") {
            let close = matching_paren(after)
                .ok_or_else(|| format!("unclosed tuple in `{}`", self.rest))?;
            let elems = split_top_level(&after[..close])
                .into_iter()
                .map(parse_type)
                .collect::<Result<Vec<_>, _>>()?;
            self.rest = &after[close + 1..];
            return Ok(Type::Tuple(elems));
        }
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        Ok(match word {
            "int" => Type::Int,
            "real" => Type::Real,
            "complex" => Type::Complex,
            "vector" => Type::Vector,
            "row_vector" => Type::RowVector,
            "matrix" => Type::Matrix,
            "complex_vector" => Type::ComplexVector,
            "complex_row_vector" => Type::ComplexRowVector,
            "complex_matrix" => Type::ComplexMatrix,
            other => return Err(format!("unknown type `{other}`")),
        })
    }
}

/// Index of the `)` closing an already-opened parenthesis.
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_arrays_and_tuples() {
        assert_eq!(
            parse_type("array[,] int").unwrap(),
            Type::array_of(Type::Int, 2)
        );
        assert_eq!(
            parse_type("tuple(matrix, array[] vector)").unwrap(),
            Type::Tuple(vec![Type::Matrix, Type::array_of(Type::Vector, 1)])
        );
        assert_eq!(
            parse_arg("data real").unwrap(),
            (AdLevel::DataOnly, Type::Real)
        );
        assert!(parse_type("vectr").is_err());
        assert_eq!(
            split_top_level("array[,] real, tuple(int, real), int"),
            vec!["array[,] real", "tuple(int, real)", "int"]
        );
        assert!(split_top_level("").is_empty());
    }
}
