//! The parameter transform of gradient programs: `ReadParam` (constrain
//! θ, add log |J|) and `ParamAdjoint` (its reverse) for a batch. Identity,
//! lower- and upper-bounded parameters with shared scalar bounds run as
//! batched loops over the same `bat_math` transforms the interpreter
//! uses; everything else goes lane by lane through the interpreter.

use super::{Evaluated, get_var, set_var, transform_exprs};
use crate::eval::Result;
use crate::lanes::{Dense, Lanes, Slot, State};
use bat_math::transforms as tf;
use language::data::Shape;
use language::mir::{Stmt, Transform, VarId};
use language::value::Value;
use runtime::{RuntimeError, lane};
use std::sync::Arc;

/// A scalarwise transform the batched loops handle.
#[derive(Clone, Copy)]
enum Simple {
    Identity,
    Lower(f64),
    Upper(f64),
}

fn simple(t: &Transform, args: &Evaluated) -> Option<Simple> {
    let scalar = |k: usize| -> Option<f64> {
        match &*args.slots[k] {
            Slot::Shared(v) => match **v {
                Value::Real(x) => Some(x),
                Value::Int(i) => Some(i as f64),
                _ => None,
            },
            _ => None,
        }
    };
    match t {
        Transform::Identity => Some(Simple::Identity),
        Transform::Lower(_) => Some(Simple::Lower(scalar(0)?)),
        Transform::Upper(_) => Some(Simple::Upper(scalar(0)?)),
        _ => None,
    }
}

fn lane_x(st: &State, offset: usize, len: usize, l: usize) -> Vec<f64> {
    (offset..offset + len)
        .map(|k| st.theta[k * st.z + l])
        .collect()
}

pub(crate) fn read_param(
    s: &Stmt,
    param: usize,
    var: VarId,
    transform: &Transform,
    st: &mut State,
    active: &Lanes,
) -> Result<()> {
    let Some(p) = st.layout.get(param).cloned() else {
        let err = RuntimeError::fatal("a gradient-program statement outside a gradient program");
        crate::eval::fail_all(st, active, err.at(s.span));
        return Ok(());
    };
    let mut exprs = Vec::new();
    transform_exprs(transform, &mut exprs);
    let args = Evaluated::new(exprs, st, active)?;
    let active = &st.running(active);
    let z = st.z;
    let n = p.unconstrained_len;
    if let Some(t) = simple(transform, &args)
        && n == p.shape.num_reals()
        && dense_layout(&p.shape)
    {
        let rows = &st.theta[p.offset * z..(p.offset + n) * z];
        let mut value = crate::lanes::pool::buffer(n * z);
        // log |J| per lane, summed over the elements in order (zeros for
        // the identity, added to the target all the same, as the
        // interpreter adds them).
        let mut logj = vec![0.0; z];
        // One loop per transform, not a choice per element: the identity
        // is then a copy, and the bounded transforms a plain loop.
        match t {
            Simple::Identity => value.extend_from_slice(rows),
            Simple::Lower(lb) => {
                constrain(rows, &mut value, &mut logj, |x| tf::lb_constrain(x, lb))
            }
            Simple::Upper(ub) => {
                constrain(rows, &mut value, &mut logj, |x| tf::ub_constrain(x, ub))
            }
        }
        if st.jacobian {
            for l in active.iter() {
                st.target[l] += logj[l];
            }
        }
        let slot = dense_slot(&p.shape, z, value);
        set_var(st, var, Arc::new(slot), active);
        return Ok(());
    }
    let mut out: Vec<Option<Value>> = vec![None; z];
    for l in active.iter() {
        let x = lane_x(st, p.offset, n, l);
        match lane::read_param(&mut args.lookup(l), transform, &p.shape, &x) {
            Ok((v, logj)) => {
                if st.jacobian {
                    st.target[l] += logj;
                }
                out[l] = Some(v);
            }
            Err(err) => st.fail(l, err.at(s.span)),
        }
    }
    let written = st.running(active);
    set_var(st, var, Arc::new(crate::eval::from_partial(out)), &written);
    Ok(())
}

/// Whether a parameter of `shape` is held dense: a [`Dense`] block holds
/// only real leaves (real, vectors, matrices, arrays of them), so a tuple
/// is a [`Slot::Tuple`] of such blocks, one per component; an array of
/// tuples is not dense (it goes lane by lane).
fn dense_layout(shape: &Shape) -> bool {
    match shape {
        Shape::Tuple(items) => items.iter().all(dense_layout),
        other => real_leaves(other),
    }
}

fn real_leaves(shape: &Shape) -> bool {
    match shape {
        Shape::Real | Shape::Vector(_) | Shape::RowVector(_) | Shape::Matrix(..) => true,
        Shape::Array(_, elem) => real_leaves(elem),
        _ => false,
    }
}

/// The slot of a value of `shape` (one [`dense_layout`]) from its rows
/// `[element][lane]` in Stan's order: a tuple's components are
/// consecutive, each a slot of its own.
fn dense_slot(shape: &Shape, z: usize, rows: Vec<f64>) -> Slot {
    let Shape::Tuple(items) = shape else {
        return Slot::Real(Dense::new(shape.clone(), z, rows));
    };
    let mut at = 0;
    let components = items
        .iter()
        .map(|item| {
            let len = item.num_reals() * z;
            let part = crate::lanes::pool::copy(&rows[at..at + len]);
            at += len;
            Arc::new(dense_slot(item, z, part))
        })
        .collect();
    crate::lanes::pool::recycle(rows);
    Slot::Tuple(components)
}

/// `f` (value, log |J|) of every number of `rows` (`[element][lane]`,
/// lanes as wide as `logj`): the values appended to `value` in order, each
/// lane's log |J| added to `logj` element by element.
fn constrain(rows: &[f64], value: &mut Vec<f64>, logj: &mut [f64], f: impl Fn(f64) -> (f64, f64)) {
    // (`max(1)`: a batch of no lanes has no rows.)
    for xs in rows.chunks_exact(logj.len().max(1)) {
        for (lj, &x) in logj.iter_mut().zip(xs) {
            let (y, j) = f(x);
            value.push(y);
            *lj += j;
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn param_adjoint(
    s: &Stmt,
    param: usize,
    var_adj: VarId,
    lp_adj: VarId,
    transform: &Transform,
    arg_adjs: &[Option<VarId>],
    st: &mut State,
    active: &Lanes,
) -> Result<()> {
    let Some(p) = st.layout.get(param).cloned() else {
        let err = RuntimeError::fatal("a gradient-program statement outside a gradient program");
        crate::eval::fail_all(st, active, err.at(s.span));
        return Ok(());
    };
    let mut exprs = Vec::new();
    transform_exprs(transform, &mut exprs);
    let args = Evaluated::new(exprs, st, active)?;
    let active = &st.running(active);
    let Some(y_bar) = get_var(st, var_adj, active, "used before it has a value") else {
        return Ok(());
    };
    let lp_bar = if st.jacobian {
        let Some(lp) = get_var(st, lp_adj, active, "used before it has a value") else {
            return Ok(());
        };
        Some(lp)
    } else {
        None
    };
    let z = st.z;
    let n = p.unconstrained_len;
    let lp_of = |l: usize| -> std::result::Result<f64, RuntimeError> {
        match &lp_bar {
            None => Ok(0.0),
            Some(slot) => slot
                .lane_value(l)
                .as_real()
                .ok_or_else(|| RuntimeError::fatal("expected a real")),
        }
    };
    if let Some(t) = simple(transform, &args)
        && arg_adjs.iter().all(Option::is_none)
        && n == p.shape.num_reals()
        && matches!(&*y_bar, Slot::Real(d) if d.elements() == n)
        && lp_bar
            .as_ref()
            .is_none_or(|s| s.lane_value(0).as_real().is_some())
    {
        let Slot::Real(yb) = &*y_bar else {
            unreachable!()
        };
        let lp: Vec<f64> = match &lp_bar {
            None => vec![0.0; z],
            Some(slot) => match &**slot {
                Slot::Shared(v) => vec![v.as_real().unwrap_or(f64::NAN); z],
                Slot::Real(d) if d.elements() == 1 => d.data.clone(),
                other => (0..z)
                    .map(|l| other.lane_value(l).as_real().unwrap_or(f64::NAN))
                    .collect(),
            },
        };
        let rows = p.offset * z..(p.offset + n) * z;
        let (theta, gradient) = (&st.theta[rows.clone()], &mut st.gradient[rows]);
        let all = active.is_full();
        // (`max(1)`: a batch of no lanes has no rows.)
        let w = z.max(1);
        for ((xs, ys), grad) in theta
            .chunks_exact(w)
            .zip(yb.data.chunks_exact(w))
            .zip(gradient.chunks_exact_mut(w))
        {
            match t {
                // Every lane: one vectorized pass.
                Simple::Identity if all => {
                    for (g, &y) in grad.iter_mut().zip(ys) {
                        *g += y;
                    }
                }
                Simple::Identity => active.iter().for_each(|l| grad[l] += ys[l]),
                Simple::Lower(lb) => active
                    .iter()
                    .for_each(|l| grad[l] += tf::lb_constrain_vjp(xs[l], lb, ys[l], lp[l]).0),
                Simple::Upper(ub) => active
                    .iter()
                    .for_each(|l| grad[l] += tf::ub_constrain_vjp(xs[l], ub, ys[l], lp[l]).0),
            }
        }
        return Ok(());
    }
    let currents: Vec<Option<Arc<Slot>>> = arg_adjs
        .iter()
        .map(|a| a.and_then(|v| get_var(st, v, active, "used before it has a value")))
        .collect();
    let mut updated: Vec<Vec<Option<Value>>> = vec![vec![None; z]; arg_adjs.len()];
    for l in active.iter() {
        let x = lane_x(st, p.offset, n, l);
        let yb = lane::flat_reals(&y_bar.lane_value(l));
        let result = lp_of(l).and_then(|lp| {
            let cur = currents
                .iter()
                .map(|c| c.as_ref().map(|c| c.lane_value(l)))
                .collect();
            lane::param_adjoint(&mut args.lookup(l), transform, &p.shape, &x, &yb, lp, cur)
        });
        match result {
            Ok((x_bar, new_adjs)) => {
                for (k, xb) in x_bar.into_iter().enumerate() {
                    st.gradient[(p.offset + k) * z + l] += xb;
                }
                for (slot, v) in updated.iter_mut().zip(new_adjs) {
                    slot[l] = v;
                }
            }
            Err(err) => st.fail(l, err.at(s.span)),
        }
    }
    let written = st.running(active);
    for (adj, values) in arg_adjs.iter().zip(updated) {
        if let Some(adj) = adj
            && values.iter().any(Option::is_some)
        {
            set_var(
                st,
                *adj,
                Arc::new(crate::eval::from_partial(values)),
                &written,
            );
        }
    }
    Ok(())
}
