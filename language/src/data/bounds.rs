//! Checking declared bounds (`<lower=a, upper=b>`) of data values.

use super::error::{DataError, DataErrorKind};
use crate::value::Value;
use std::cmp::Ordering;

/// A bound: one number for every element, or a container of the variable's
/// own shape giving a bound per element (Stan's vector bounds).
#[derive(Clone, Debug)]
pub enum Bound<'a> {
    Scalar(f64),
    PerElement(&'a Value),
}

/// Check every element of `value` against the bounds. `declared` is the
/// declaration as written (for the message), e.g. `int<lower=0>`.
pub fn check_bounds(
    name: &str,
    value: &Value,
    lower: Option<Bound<'_>>,
    upper: Option<Bound<'_>>,
    declared: &str,
) -> Result<(), DataError> {
    let mut elems = Vec::new();
    value.flatten_reals(&mut elems);
    let bound_values = |b: &Option<Bound<'_>>| -> Option<Vec<f64>> {
        b.as_ref().map(|b| match b {
            Bound::Scalar(x) => vec![*x; elems.len()],
            Bound::PerElement(v) => {
                let mut out = Vec::new();
                v.flatten_reals(&mut out);
                out
            }
        })
    };
    let lo = bound_values(&lower);
    let hi = bound_values(&upper);
    for (k, &x) in elems.iter().enumerate() {
        let below = lo
            .as_ref()
            .and_then(|lo| lo.get(k))
            .is_some_and(|&l| matches!(x.partial_cmp(&l), None | Some(Ordering::Less)));
        let above = hi
            .as_ref()
            .and_then(|hi| hi.get(k))
            .is_some_and(|&h| matches!(x.partial_cmp(&h), None | Some(Ordering::Greater)));
        if below || above {
            return Err(DataError {
                variable: element_name(name, value, k),
                kind: DataErrorKind::OutOfBounds {
                    value: x,
                    declared: declared.to_string(),
                },
            });
        }
    }
    Ok(())
}

/// Name of the k-th flattened element, 1-based as Stan users index.
fn element_name(name: &str, value: &Value, k: usize) -> String {
    let mut idx = Vec::new();
    locate(value, k, &mut idx);
    if idx.is_empty() {
        name.to_string()
    } else {
        let idx: Vec<String> = idx.iter().map(|i| (i + 1).to_string()).collect();
        format!("{name}[{}]", idx.join(", "))
    }
}

fn locate(value: &Value, mut k: usize, idx: &mut Vec<usize>) {
    match value {
        Value::Vector(_) | Value::RowVector(_) => idx.push(k),
        Value::Matrix { rows, .. } => idx.extend([k % rows, k / rows]),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let mut n = Vec::new();
                item.flatten_reals(&mut n);
                if k < n.len() {
                    idx.push(i);
                    locate(item, k, idx);
                    return;
                }
                k -= n.len();
            }
        }
        _ => {}
    }
}
