//! Indexing and indexed assignment with Stan's 1-based bounds checks.

use super::error::{ErrorKind, Result, RuntimeError, describe, mismatch};
use super::values::size;
use language::value::Value;

/// An evaluated index, not yet resolved against a container size.
#[derive(Clone, Debug)]
pub enum Ix {
    Single(i64),
    All,
    Upfrom(i64),
    Downto(i64),
    Between(i64, i64),
    Multi(Vec<i64>),
}

/// An index resolved against a size: 0-based positions.
enum Pos {
    One(usize),
    Many(Vec<usize>),
}

fn out_of_range(i: i64, n: usize) -> RuntimeError {
    RuntimeError::new(
        ErrorKind::IndexOutOfRange,
        format!("index {i} out of range; expecting index to be between 1 and {n}"),
    )
}

fn check(i: i64, n: usize) -> Result<usize> {
    if i >= 1 && (i as u64) <= n as u64 {
        Ok(i as usize - 1)
    } else {
        Err(out_of_range(i, n))
    }
}

fn resolve(ix: &Ix, n: usize) -> Result<Pos> {
    let range = |lo: i64, hi: i64| -> Result<Pos> {
        if hi < lo {
            return Ok(Pos::Many(Vec::new()));
        }
        check(lo, n)?;
        check(hi, n)?;
        Ok(Pos::Many((lo as usize - 1..hi as usize).collect()))
    };
    match ix {
        Ix::Single(i) => Ok(Pos::One(check(*i, n)?)),
        Ix::All => Ok(Pos::Many((0..n).collect())),
        Ix::Upfrom(lo) => range(*lo, n as i64),
        Ix::Downto(hi) => range(1, *hi),
        Ix::Between(lo, hi) => range(*lo, *hi),
        Ix::Multi(is) => Ok(Pos::Many(
            is.iter().map(|&i| check(i, n)).collect::<Result<_>>()?,
        )),
    }
}

/// `v[idx...]`.
pub(crate) fn get(v: &Value, idx: &[Ix]) -> Result<Value> {
    let Some((first, rest)) = idx.split_first() else {
        return Ok(v.clone());
    };
    match v {
        Value::Array(items) => match resolve(first, items.len())? {
            Pos::One(i) => get(&items[i], rest),
            Pos::Many(is) => Ok(Value::Array(
                is.iter()
                    .map(|&i| get(&items[i], rest))
                    .collect::<Result<_>>()?,
            )),
        },
        Value::Vector(x) | Value::RowVector(x) => {
            if !rest.is_empty() {
                return Err(mismatch("too many indexes", v));
            }
            Ok(match resolve(first, x.len())? {
                Pos::One(i) => Value::Real(x[i]),
                Pos::Many(is) => {
                    let picked = is.iter().map(|&i| x[i]).collect();
                    if matches!(v, Value::Vector(_)) {
                        Value::Vector(picked)
                    } else {
                        Value::RowVector(picked)
                    }
                }
            })
        }
        Value::Matrix { rows, cols, data } => {
            let (r, c) = (*rows, *cols);
            let row_pos = resolve(first, r)?;
            let col_pos = match rest {
                [] => Pos::Many((0..c).collect()),
                [j] => resolve(j, c)?,
                _ => return Err(mismatch("too many indexes", v)),
            };
            let at = |i: usize, j: usize| data[j * r + i];
            Ok(match (row_pos, col_pos) {
                (Pos::One(i), Pos::One(j)) => Value::Real(at(i, j)),
                (Pos::One(i), Pos::Many(js)) => {
                    Value::RowVector(js.iter().map(|&j| at(i, j)).collect())
                }
                (Pos::Many(is), Pos::One(j)) => {
                    Value::Vector(is.iter().map(|&i| at(i, j)).collect())
                }
                (Pos::Many(is), Pos::Many(js)) => Value::Matrix {
                    rows: is.len(),
                    cols: js.len(),
                    data: js
                        .iter()
                        .flat_map(|&j| is.iter().map(move |&i| (i, j)))
                        .map(|(i, j)| at(i, j))
                        .collect(),
                },
            })
        }
        other => Err(mismatch("cannot index", other)),
    }
}

/// Convert `rhs` to the representation of `like` (int → real where the
/// declared element is real).
pub(crate) fn promote_like(rhs: Value, like: &Value) -> Value {
    match (rhs, like) {
        (Value::Int(i), Value::Real(_)) => Value::Real(i as f64),
        (Value::Int(i), Value::Complex(..)) => Value::Complex(i as f64, 0.0),
        (Value::Real(x), Value::Complex(..)) => Value::Complex(x, 0.0),
        (Value::Array(items), Value::Array(likes)) if !likes.is_empty() => Value::Array(
            items
                .into_iter()
                .map(|item| promote_like(item, &likes[0]))
                .collect(),
        ),
        (Value::Tuple(items), Value::Tuple(likes)) => Value::Tuple(
            items
                .into_iter()
                .zip(likes)
                .map(|(item, like)| promote_like(item, like))
                .collect(),
        ),
        (rhs, _) => rhs,
    }
}

fn size_mismatch(target: &Value, n: usize, rhs: &Value) -> RuntimeError {
    RuntimeError::new(
        ErrorKind::IndexOutOfRange,
        format!(
            "assignment: {} selected elements of {} but the value is {}",
            n,
            describe(target),
            describe(rhs)
        ),
    )
}

/// `v[idx...] = rhs`.
pub(crate) fn set(v: &mut Value, idx: &[Ix], rhs: Value) -> Result<()> {
    let Some((first, rest)) = idx.split_first() else {
        *v = promote_like(rhs, v);
        return Ok(());
    };
    let n = size(v);
    match v {
        Value::Array(items) => match resolve(first, n)? {
            Pos::One(i) => set(&mut items[i], rest, rhs),
            Pos::Many(is) => {
                let Value::Array(values) = rhs else {
                    return Err(mismatch("assigning to a multi-index", &rhs));
                };
                if values.len() != is.len() {
                    return Err(size_mismatch(v, is.len(), &Value::Array(values)));
                }
                for (i, value) in is.into_iter().zip(values) {
                    set(&mut items[i], rest, value)?;
                }
                Ok(())
            }
        },
        Value::Vector(x) | Value::RowVector(x) => {
            let values = super::values::flat(&rhs);
            let positions = match resolve(first, x.len())? {
                Pos::One(i) => vec![i],
                Pos::Many(is) => is,
            };
            if values.len() != positions.len() {
                return Err(size_mismatch(
                    &Value::Vector(x.clone()),
                    positions.len(),
                    &rhs,
                ));
            }
            for (i, value) in positions.into_iter().zip(values) {
                x[i] = value;
            }
            Ok(())
        }
        Value::Matrix { rows, cols, data } => {
            let (r, c) = (*rows, *cols);
            let is = match resolve(first, r)? {
                Pos::One(i) => vec![i],
                Pos::Many(is) => is,
            };
            let js = match rest {
                [] => (0..c).collect(),
                [j] => match resolve(j, c)? {
                    Pos::One(j) => vec![j],
                    Pos::Many(js) => js,
                },
                _ => return Err(RuntimeError::fatal("too many indexes for a matrix")),
            };
            let values = super::values::flat(&rhs);
            if values.len() != is.len() * js.len() {
                return Err(RuntimeError::new(
                    ErrorKind::IndexOutOfRange,
                    format!(
                        "assignment: selected {}×{} elements of a matrix but the value is {}",
                        is.len(),
                        js.len(),
                        describe(&rhs)
                    ),
                ));
            }
            let mut k = 0;
            for &j in &js {
                for &i in &is {
                    data[j * r + i] = values[k];
                    k += 1;
                }
            }
            Ok(())
        }
        other => Err(mismatch("cannot index", other)),
    }
}
