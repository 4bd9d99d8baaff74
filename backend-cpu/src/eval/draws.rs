//! Batched `_rng` draws straight into a dense slot.
//!
//! The lane-by-lane path builds a [`Value`] per lane for every operand and
//! every result and then packs the results back into a dense slot; for the
//! sampler (a uniform per tree doubling and per sub-tree merge, a normal
//! momentum vector per transition) that packing cost more than the draws.
//! Here each running active lane draws from its own stream with the
//! interpreter's scalar rule ([`lane::draw_rng_scalar`]), element by
//! element in the interpreter's order, reading operands and writing the
//! result in `[element][lane]` layout.
//!
//! # Contract
//! For every running active lane, the drawn value, the lane's stream
//! afterwards and the error (if any) are exactly the interpreter's
//! (`rng::draw`): scalar arguments give one draw; container arguments
//! give one draw per element, a one-element argument standing for every
//! element; a lane stops drawing at its first error. Forms it does not
//! handle (categorical draws, ragged or empty containers, differing sizes)
//! return `None` and go lane by lane.

use crate::lanes::{Dense, Lanes, Slot, State, dense_shape};
use language::data::Shape;
use language::mir::Prim;
use language::span::Span;
use language::value::Value;
use runtime::{RuntimeError, lane};

/// One operand: its elements for every lane.
enum Arg<'a> {
    /// The same elements for every lane (a shared value).
    Shared(Vec<f64>),
    /// Reals `[element][lane]`, `count` elements per lane.
    Reals(&'a [f64], usize),
    /// Ints `[element][lane]`, `count` elements per lane.
    Ints(&'a [i64], usize),
}

impl Arg<'_> {
    fn of(slot: &Slot) -> Option<Arg<'_>> {
        Some(match slot {
            Slot::Shared(v) => {
                let mut flat = Vec::new();
                match &**v {
                    Value::Int(i) => flat.push(*i as f64),
                    Value::Real(x) => flat.push(*x),
                    other => {
                        dense_shape(other)?;
                        other.flatten_reals(&mut flat);
                    }
                }
                Arg::Shared(flat)
            }
            Slot::Real(d) => Arg::Reals(&d.data, d.elements()),
            Slot::Int(d) => Arg::Ints(&d.data, d.elements()),
            _ => return None,
        })
    }

    /// Elements per lane.
    fn count(&self) -> usize {
        match self {
            Arg::Shared(v) => v.len(),
            Arg::Reals(_, n) | Arg::Ints(_, n) => *n,
        }
    }

    /// Element `e` of lane `l` of a batch of `z`.
    fn at(&self, e: usize, l: usize, z: usize) -> f64 {
        match self {
            Arg::Shared(v) => v[e],
            Arg::Reals(d, _) => d[e * z + l],
            Arg::Ints(d, _) => d[e * z + l] as f64,
        }
    }
}

/// The most arguments an `_rng` primitive takes here.
const MAX_ARGS: usize = 4;

/// `p` drawn at `args` for the running lanes of `active`, or `None` when
/// the operands are not of a form handled here (nothing is drawn then).
pub(super) fn draw(
    p: Prim,
    args: &[&Slot],
    st: &mut State,
    active: &Lanes,
    span: Span,
) -> Option<Slot> {
    if matches!(p, Prim::CategoricalRng | Prim::CategoricalLogitRng) || args.len() > MAX_ARGS {
        return None;
    }
    let ops: Vec<Arg> = args.iter().map(|a| Arg::of(a)).collect::<Option<_>>()?;
    // Scalars are the operands whose lane values are `int`/`real`.
    let is_scalar = |slot: &Slot| match slot {
        Slot::Shared(v) => matches!(**v, Value::Int(_) | Value::Real(_)),
        Slot::Real(d) => d.shape == Shape::Real,
        Slot::Int(d) => d.shape == Shape::Int,
        _ => false,
    };
    // The interpreter's size: the first container's; a container of
    // another size (other than 1) is its error, left to it.
    let container = args.iter().position(|a| !is_scalar(a));
    let n = match container {
        None => 1,
        Some(k) => ops[k].count(),
    };
    if n == 0 || ops.iter().any(|o| o.count() != 1 && o.count() != n) {
        return None;
    }
    let z = st.z;
    if p == Prim::NormalRng
        && ops.len() == 2
        && let Some(slot) = normal_draws(&ops, n, container.is_some(), st, active, span)
    {
        return Some(slot);
    }
    let k = ops.len();
    let mut reals: Vec<f64> = Vec::new();
    let mut ints: Vec<i64> = Vec::new();
    // Whether the draws are ints (decided by the first draw).
    let mut int_kind: Option<bool> = None;
    let mut drew = false;
    let mut failed: Vec<(usize, RuntimeError)> = Vec::new();
    let mut xs = [0.0; MAX_ARGS];
    for l in active.iter() {
        if !st.is_running(l) {
            continue;
        }
        let Some(rng) = st.rng_mut(l) else {
            failed.push((
                l,
                RuntimeError::fatal(format!(
                    "`{}` draws random numbers outside generated quantities",
                    p.name()
                )),
            ));
            continue;
        };
        for e in 0..n {
            for (x, o) in xs.iter_mut().zip(&ops) {
                *x = o.at(if o.count() == 1 { 0 } else { e }, l, z);
            }
            match lane::draw_rng_scalar(p, rng, &xs[..k])? {
                Ok(v) => {
                    let is_int = matches!(v, Value::Int(_));
                    let kind = *int_kind.get_or_insert_with(|| {
                        if is_int {
                            ints = vec![0; n * z];
                        } else {
                            reals = vec![0.0; n * z];
                        }
                        is_int
                    });
                    match (v, kind) {
                        (Value::Int(i), true) => ints[e * z + l] = i,
                        (Value::Real(x), false) => reals[e * z + l] = x,
                        // Draws of one primitive are all of one kind.
                        (other, _) => {
                            failed.push((
                                l,
                                RuntimeError::fatal(format!(
                                    "`{}` drew {other:?} of an unexpected kind",
                                    p.name()
                                )),
                            ));
                            break;
                        }
                    }
                    drew = true;
                }
                Err(err) => {
                    failed.push((l, err));
                    break;
                }
            }
        }
    }
    for (l, err) in failed {
        st.fail(l, err.at(span));
    }
    if !drew {
        return Some(Slot::shared(Value::Int(0)));
    }
    let shape = |elem: Shape| match container {
        None => elem,
        Some(_) => Shape::Array(n, Box::new(elem)),
    };
    Some(match int_kind {
        Some(true) => Slot::Int(Dense::new(shape(Shape::Int), z, ints)),
        _ => Slot::Real(Dense::new(shape(Shape::Real), z, reals)),
    })
}

/// `normal_rng(mu, sigma)` without the general path's per-draw dispatch
/// and boxed values (the posterior predictive draws of every kept draw of
/// a model such as eight schools): the same numbers in the same order —
/// `mu + sigma * z` with `z` the lane stream's next standard normal — and
/// for arguments out of the domain the interpreter's own error (its rule
/// checks them before drawing, so the stream is left as it would be).
/// `None` (nothing drawn) when a running lane has no stream: the general
/// path reports that.
fn normal_draws(
    ops: &[Arg],
    n: usize,
    is_container: bool,
    st: &mut State,
    active: &Lanes,
    span: Span,
) -> Option<Slot> {
    let z = st.z;
    let lanes: Vec<usize> = active.iter().filter(|&l| st.is_running(l)).collect();
    if lanes.iter().any(|&l| st.rng_mut(l).is_none()) {
        return None;
    }
    let at = |o: &Arg, e: usize, l: usize| o.at(if o.count() == 1 { 0 } else { e }, l, z);
    let mut reals = vec![0.0; n * z];
    let mut failed: Vec<(usize, RuntimeError)> = Vec::new();
    let mut drew = false;
    for &l in &lanes {
        let rng = st.rng_mut(l)?;
        for e in 0..n {
            let (mu, sigma) = (at(&ops[0], e, l), at(&ops[1], e, l));
            if mu.is_finite() && sigma > 0.0 && sigma.is_finite() {
                reals[e * z + l] = mu + sigma * rng.std_normal();
                drew = true;
                continue;
            }
            // The rule refuses exactly these arguments, before drawing.
            let error = match lane::draw_rng_scalar(Prim::NormalRng, rng, &[mu, sigma]) {
                Some(Err(err)) => err,
                other => {
                    RuntimeError::fatal(format!("`normal_rng` at ({mu}, {sigma}) gave {other:?}"))
                }
            };
            failed.push((l, error));
            break;
        }
    }
    for (l, err) in failed {
        st.fail(l, err.at(span));
    }
    // As the general path: no draw at all leaves a placeholder.
    if !drew {
        return Some(Slot::shared(Value::Int(0)));
    }
    let shape = if is_container {
        Shape::Array(n, Box::new(Shape::Real))
    } else {
        Shape::Real
    };
    Some(Slot::Real(Dense::new(shape, z, reals)))
}
