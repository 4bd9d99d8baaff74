//! The parameter transform of gradient programs: `ReadParam` (constrain
//! θ, add log |J|) and `ParamAdjoint` (its reverse) for a batch. Identity,
//! lower- and upper-bounded parameters with shared scalar bounds run as
//! batched loops over the same `bat_math` transforms the interpreter
//! uses; everything else goes lane by lane through the interpreter.

use super::{Evaluated, get_var, set_var, transform_exprs};
use crate::eval::Result;
use crate::lanes::{Dense, Lanes, Slot, State};
use bat_math::transforms as tf;
use language::interp::{RuntimeError, lane};
use language::mir::{Stmt, Transform, VarId};
use language::value::Value;
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
    {
        let rows = &st.theta[p.offset * z..(p.offset + n) * z];
        let mut value = Vec::with_capacity(n * z);
        let mut logj = vec![0.0; z];
        for e in 0..n {
            let xs = &rows[e * z..(e + 1) * z];
            for (l, &x) in xs.iter().enumerate() {
                let (y, lj) = match t {
                    Simple::Identity => (x, 0.0),
                    Simple::Lower(lb) => tf::lb_constrain(x, lb),
                    Simple::Upper(ub) => tf::ub_constrain(x, ub),
                };
                value.push(y);
                logj[l] += lj;
            }
        }
        if st.jacobian {
            for l in active.iter() {
                st.target[l] += logj[l];
            }
        }
        let slot = Slot::Real(Dense::new(p.shape.clone(), z, value));
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
        for e in 0..n {
            let row = p.offset + e;
            for l in active.iter() {
                let x = st.theta[row * z + l];
                let y = yb.data[e * z + l];
                let xb = match t {
                    Simple::Identity => y,
                    Simple::Lower(lb) => tf::lb_constrain_vjp(x, lb, y, lp[l]).0,
                    Simple::Upper(ub) => tf::ub_constrain_vjp(x, ub, y, lp[l]).0,
                };
                st.gradient[row * z + l] += xb;
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
