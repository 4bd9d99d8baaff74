//! Indexing: `base[idx...]` for a batch. Shared indexes into a dense base
//! gather whole element rows (all lanes at once); anything else goes lane
//! by lane through the interpreter's `index_get`.

use super::{Result, eval, fail_all, per_lane};
use crate::lanes::{Dense, Lanes, Slot, State, build_real, dense_shape};
use language::data::Shape;
use language::mir::Index;
use language::span::Span;
use language::value::Value;
use runtime::RuntimeError;
use runtime::lane::{self, Ix};
use std::sync::Arc;

/// An index with its expressions evaluated for the batch.
#[derive(Clone, Debug)]
pub enum LaneIx {
    All,
    Single(Arc<Slot>),
    Multi(Arc<Slot>),
    Upfrom(Arc<Slot>),
    Downto(Arc<Slot>),
    Between(Arc<Slot>, Arc<Slot>),
}

impl LaneIx {
    fn slots(&self) -> Vec<&Slot> {
        match self {
            LaneIx::All => vec![],
            LaneIx::Single(a) | LaneIx::Multi(a) | LaneIx::Upfrom(a) | LaneIx::Downto(a) => {
                vec![a]
            }
            LaneIx::Between(a, b) => vec![a, b],
        }
    }
}

/// Evaluate the expressions of `idx` in order.
pub fn eval_indexes(idx: &[Index], st: &mut State, active: &Lanes) -> Result<Vec<LaneIx>> {
    idx.iter()
        .map(|i| {
            Ok(match i {
                Index::All => LaneIx::All,
                Index::Single(e) => LaneIx::Single(eval(e, st, active)?),
                Index::Multi(e) => LaneIx::Multi(eval(e, st, active)?),
                Index::Upfrom(e) => LaneIx::Upfrom(eval(e, st, active)?),
                Index::Downto(e) => LaneIx::Downto(eval(e, st, active)?),
                Index::Between(a, b) => LaneIx::Between(eval(a, st, active)?, eval(b, st, active)?),
            })
        })
        .collect()
}

/// Every index operand slot, in order (for lane-by-lane evaluation).
pub(crate) fn index_slots(idx: &[LaneIx]) -> Vec<&Slot> {
    idx.iter().flat_map(LaneIx::slots).collect()
}

/// The interpreter's indexes of one lane from its operand values (in the
/// order of [`index_slots`]).
pub(crate) fn ixs_from_values(
    idx: &[LaneIx],
    vals: &[Value],
) -> std::result::Result<Vec<Ix>, RuntimeError> {
    let mut k = 0;
    let mut next = || {
        k += 1;
        &vals[k - 1]
    };
    idx.iter()
        .map(|i| {
            Ok(match i {
                LaneIx::All => Ix::All,
                LaneIx::Single(_) => Ix::Single(lane::int_of(next())?),
                LaneIx::Multi(_) => Ix::Multi(lane::multi_index(next())?),
                LaneIx::Upfrom(_) => Ix::Upfrom(lane::int_of(next())?),
                LaneIx::Downto(_) => Ix::Downto(lane::int_of(next())?),
                LaneIx::Between(..) => {
                    let a = lane::int_of(next())?;
                    Ix::Between(a, lane::int_of(next())?)
                }
            })
        })
        .collect()
}

/// The indexes when every operand is the same on all active lanes.
pub(crate) fn shared_ixs(
    idx: &[LaneIx],
    active: &Lanes,
) -> Option<std::result::Result<Vec<Ix>, RuntimeError>> {
    // The hot case, single int indexes: no values built on the way.
    let singles: Option<Vec<Ix>> = idx
        .iter()
        .map(|i| match i {
            LaneIx::Single(s) => uniform_int(s, active).map(Ix::Single),
            _ => None,
        })
        .collect();
    if singles.is_some() {
        return singles.map(Ok);
    }
    let vals = index_slots(idx)
        .into_iter()
        .map(|s| uniform_value(s, active))
        .collect::<Option<Vec<Value>>>()?;
    Some(ixs_from_values(idx, &vals))
}

/// The int all `active` lanes of `s` hold (as [`uniform_value`]).
fn uniform_int(s: &Slot, active: &Lanes) -> Option<i64> {
    match s {
        Slot::Shared(v) => match **v {
            Value::Int(i) => Some(i),
            _ => None,
        },
        Slot::Int(d) if d.shape == language::data::Shape::Int => {
            let first = d.data[active.first()?];
            active.iter().all(|l| d.data[l] == first).then_some(first)
        }
        _ => None,
    }
}

/// The value all `active` lanes of `s` hold: a shared value, or a dense
/// int scalar equal on every active lane (a loop counter of the PC IR,
/// stored per lane but the same on all lanes that run the loop together;
/// indexing with it must not fall back to lane-by-lane copies of whole
/// arrays).
fn uniform_value(s: &Slot, active: &Lanes) -> Option<Value> {
    match s {
        Slot::Shared(v) => Some((**v).clone()),
        _ => uniform_int(s, active).map(Value::Int),
    }
}

/// `base[idx...]` for the active lanes.
pub(crate) fn get(base: &Slot, idx: &[LaneIx], st: &mut State, active: &Lanes, span: Span) -> Slot {
    if let Some(ixs) = shared_ixs(idx, active) {
        let ixs = match ixs {
            Ok(ixs) => ixs,
            Err(err) => {
                fail_all(st, active, err.at(span));
                return Slot::shared(Value::Int(0));
            }
        };
        match base {
            Slot::Real(d) => {
                if let Some(slot) = gather_rows(d, &ixs, false, st, active, span) {
                    return slot;
                }
            }
            Slot::Int(d) => {
                if let Some(slot) = gather_rows(d, &ixs, true, st, active, span) {
                    return slot;
                }
            }
            // Data indexed in a loop: read in place, never copy the whole
            // value (`per_lane` would clone it for its one evaluation).
            Slot::Shared(v) => {
                return match lane::index_get(v, &ixs) {
                    Ok(x) => Slot::shared(x),
                    Err(err) => {
                        fail_all(st, active, err.at(span));
                        Slot::shared(Value::Int(0))
                    }
                };
            }
            _ => {}
        }
        return per_lane(st, active, span, &[base], |v| lane::index_get(&v[0], &ixs));
    }
    if let Slot::Shared(v) = base
        && let Some(slot) = shared_by_lane(v, idx, st.z, active)
    {
        return slot;
    }
    let mut args = vec![base];
    args.extend(index_slots(idx));
    per_lane(st, active, span, &args, |vals| {
        let ixs = ixs_from_values(idx, &vals[1..])?;
        lane::index_get(&vals[0], &ixs)
    })
}

/// Shared data (reals or ints) indexed by single indexes that differ
/// between lanes (e.g. a loop's iterations run as lanes): each lane's
/// elements read in place, never a copy of the data per lane. `None` when
/// not of that form or some active lane's index is out of range (the
/// caller then goes lane by lane, with the interpreter's errors).
fn shared_by_lane(v: &Value, idx: &[LaneIx], z: usize, active: &Lanes) -> Option<Slot> {
    let (shape, is_int) = dense_shape(v)?;
    let per_lane: Vec<&Slot> = idx
        .iter()
        .map(|i| match i {
            LaneIx::Single(s) => Some(&**s),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let index = |s: &Slot, l: usize| match s {
        Slot::Int(d) if d.shape == Shape::Int => Some(d.data[l]),
        Slot::Shared(v) => match **v {
            Value::Int(i) => Some(i),
            _ => None,
        },
        _ => None,
    };
    let first = active.first()?;
    if let ([i], Some(n)) = (per_lane.as_slice(), elements_1d(&shape)) {
        return gather_1d(v, i, n, is_int, z, active, index);
    }
    let mut ixs = Vec::with_capacity(per_lane.len());
    let mut lane_positions = |l: usize| {
        ixs.clear();
        for s in &per_lane {
            ixs.push(Ix::Single(index(s, l)?));
        }
        single_positions(&shape, &ixs, is_int)
    };
    let (_, out_shape) = lane_positions(first)?;
    let n = out_shape.num_reals();
    // Element positions per lane; inactive lanes read the first lane's.
    let mut at = vec![0usize; n * z];
    let mut positions = |l: usize, from: usize| -> Option<()> {
        let (pos, _) = lane_positions(from)?;
        for (e, p) in pos.into_iter().enumerate() {
            at[e * z + l] = p;
        }
        Some(())
    };
    let mut mask = vec![false; z];
    for l in active.iter() {
        mask[l] = true;
        positions(l, l)?;
    }
    for l in (0..z).filter(|&l| !mask[l]) {
        positions(l, first)?;
    }
    Some(if is_int {
        let mut flat = Vec::with_capacity(shape.num_reals());
        flatten_ints(v, &mut flat);
        Slot::Int(Dense::new(
            out_shape,
            z,
            at.iter().map(|&p| flat[p]).collect(),
        ))
    } else {
        let flat = lane::flat_reals(v);
        Slot::Real(Dense::new(
            out_shape,
            z,
            at.iter().map(|&p| flat[p]).collect(),
        ))
    })
}

/// The length of a one-dimensional container of scalars.
fn elements_1d(shape: &Shape) -> Option<usize> {
    match shape {
        Shape::Vector(n) | Shape::RowVector(n) => Some(*n),
        Shape::Array(n, elem) if matches!(**elem, Shape::Real | Shape::Int) => Some(*n),
        _ => None,
    }
}

/// [`shared_by_lane`] of a one-dimensional container of `n` scalars (the
/// hot case, `y[n]`): lane `l` reads element `index(i, l)`.
fn gather_1d(
    v: &Value,
    i: &Slot,
    n: usize,
    is_int: bool,
    z: usize,
    active: &Lanes,
    index: impl Fn(&Slot, usize) -> Option<i64>,
) -> Option<Slot> {
    let first = index(i, active.first()?)?;
    let mut at = vec![0usize; z];
    let mut mask = vec![false; z];
    for l in active.iter() {
        mask[l] = true;
        let k = index(i, l)?;
        if k < 1 || k as u64 > n as u64 {
            return None;
        }
        at[l] = k as usize - 1;
    }
    for l in (0..z).filter(|&l| !mask[l]) {
        at[l] = first.clamp(1, n as i64) as usize - 1;
    }
    Some(if is_int {
        let mut flat = Vec::with_capacity(n);
        flatten_ints(v, &mut flat);
        Slot::Int(Dense::new(
            Shape::Int,
            z,
            at.iter().map(|&p| flat[p]).collect(),
        ))
    } else {
        let flat = lane::flat_reals(v);
        Slot::Real(Dense::new(
            Shape::Real,
            z,
            at.iter().map(|&p| flat[p]).collect(),
        ))
    })
}

fn flatten_ints(v: &Value, out: &mut Vec<i64>) {
    match v {
        Value::Int(i) => out.push(*i),
        Value::Array(items) => items.iter().for_each(|i| flatten_ints(i, out)),
        _ => {}
    }
}

/// Dense `base[ixs]` with the same indexes for every lane: copy the
/// selected element rows. `None` when the result is not dense.
fn gather_rows<T: Copy + Default>(
    base: &Dense<T>,
    ixs: &[Ix],
    is_int: bool,
    st: &mut State,
    active: &Lanes,
    span: Span,
) -> Option<Slot>
where
    Slot: From<Dense<T>>,
{
    let (positions, shape) = match positions(&base.shape, ixs, is_int) {
        Ok(found) => found?,
        Err(err) => {
            fail_all(st, active, err.at(span));
            return Some(Slot::shared(Value::Int(0)));
        }
    };
    let z = base.z;
    let mut data = Vec::with_capacity(positions.len() * z);
    for &p in &positions {
        data.extend_from_slice(base.element(p));
    }
    Some(Slot::from(Dense::new(shape, z, data)))
}

impl From<Dense<f64>> for Slot {
    fn from(d: Dense<f64>) -> Slot {
        Slot::Real(d)
    }
}

impl From<Dense<i64>> for Slot {
    fn from(d: Dense<i64>) -> Slot {
        Slot::Int(d)
    }
}

/// The element positions `ixs` selects in a value of `shape`, and the
/// shape of the result; `Ok(None)` when the result is not dense (e.g. an
/// empty array). Errors are the interpreter's.
pub(crate) fn positions(
    shape: &Shape,
    ixs: &[Ix],
    is_int: bool,
) -> std::result::Result<Option<(Vec<usize>, Shape)>, RuntimeError> {
    if let Some(found) = single_positions(shape, ixs, is_int) {
        return Ok(Some(found));
    }
    // The general case: index a value whose elements are their positions.
    let n = shape.num_reals();
    let template = build_real(&real_shape(shape), &mut (0..n).map(|k| k as f64));
    let picked = lane::index_get(&template, ixs)?;
    let Some((shape, _)) = dense_shape(&picked) else {
        return Ok(None);
    };
    let shape = if is_int { int_shape(&shape) } else { shape };
    let positions = lane::flat_reals(&picked)
        .into_iter()
        .map(|p| p as usize)
        .collect();
    Ok(Some((positions, shape)))
}

/// Single in-range indexes, computed directly (the hot case, e.g. `x[n]`).
fn single_positions(shape: &Shape, ixs: &[Ix], is_int: bool) -> Option<(Vec<usize>, Shape)> {
    let check = |i: i64, n: usize| (i >= 1 && i as u64 <= n as u64).then(|| i as usize - 1);
    let mut offset = 0;
    let mut shape = shape;
    let mut rest = ixs;
    while let Some((first, tail)) = rest.split_first() {
        let Ix::Single(i) = first else { return None };
        match shape {
            Shape::Array(n, elem) => {
                offset += check(*i, *n)? * elem.num_reals();
                shape = elem;
            }
            Shape::Vector(n) | Shape::RowVector(n) if tail.is_empty() => {
                return Some((vec![offset + check(*i, *n)?], Shape::Real));
            }
            Shape::Matrix(r, c) => {
                let i = check(*i, *r)?;
                return match tail {
                    [] => Some((
                        (0..*c).map(|j| offset + j * r + i).collect(),
                        Shape::RowVector(*c),
                    )),
                    [Ix::Single(j)] => Some((vec![offset + check(*j, *c)? * r + i], Shape::Real)),
                    _ => None,
                };
            }
            _ => return None,
        }
        rest = tail;
    }
    let n = shape.num_reals();
    let shape = if is_int {
        int_shape(shape)
    } else {
        shape.clone()
    };
    Some(((offset..offset + n).collect(), shape))
}

/// `shape` with int leaves made real.
pub(crate) fn real_shape(shape: &Shape) -> Shape {
    match shape {
        Shape::Int => Shape::Real,
        Shape::Array(n, e) => Shape::Array(*n, Box::new(real_shape(e))),
        other => other.clone(),
    }
}

/// `shape` with real leaves made int (for int arrays).
pub(crate) fn int_shape(shape: &Shape) -> Shape {
    match shape {
        Shape::Real => Shape::Int,
        Shape::Array(n, e) => Shape::Array(*n, Box::new(int_shape(e))),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::uniform_value;
    use crate::lanes::{Dense, Lanes, Slot};
    use language::data::Shape;
    use language::value::Value;

    #[test]
    fn a_dense_int_equal_on_the_active_lanes_is_one_index() {
        // Lane 2 (inactive) holds another value: it does not count.
        let counter = Slot::Int(Dense::new(Shape::Int, 4, vec![3, 3, 7, 3]));
        let active = Lanes::from_indices(4, vec![0, 1, 3]);
        assert_eq!(uniform_value(&counter, &active), Some(Value::Int(3)));
        // Lanes that differ are indexed lane by lane.
        assert_eq!(uniform_value(&counter, &Lanes::all(4)), None);
        // Reals are never indexes of this path.
        let reals = Slot::Real(Dense::new(Shape::Real, 2, vec![1.0, 1.0]));
        assert_eq!(uniform_value(&reals, &Lanes::all(2)), None);
    }
}
