//! What both executors do with one block's lanes: run its ops (masked or
//! gathered), split lanes at a branch, set call results, collect return
//! values.

use super::{ExecConfig, Result};
use crate::eval::eval;
use crate::lanes::{Dense, Footprint, Lanes, Slot, State, dense_shape};
use crate::ops::exec_op;
use language::batch::pc::Op;
use language::batch::pc::effects;
use language::mir::{Expr, Stmt, VarId};
use language::types::Type;
use runtime::{RuntimeError, lane};
use std::collections::HashMap;
use std::sync::Arc;

/// Run `ops` for `lanes`: on the whole batch with masked writes, or — when
/// the lanes are fewer than [`ExecConfig::gather_below`] of the batch — on
/// a gathered sub-batch written back afterwards. A lane that fails stops
/// running further ops.
pub fn run_ops(
    ops: StmtOps,
    st: &mut State,
    lanes: &Lanes,
    config: &ExecConfig,
    footprints: &mut Footprints,
) -> Result<()> {
    if ops.len() == 0 || lanes.is_empty() {
        return Ok(());
    }
    let gather = !lanes.is_full() && (lanes.len() as f64) < config.gather_below * st.z as f64;
    let running = st.running(lanes);
    let width = if gather { lanes.len() } else { st.z };
    st.work.record(ops.len(), width, running.len());
    if gather {
        // Only what the ops use goes to the sub-batch and back.
        let footprint = footprints.of(ops);
        let mut sub = st.gather_footprint(lanes, footprint);
        let all = Lanes::all(sub.z);
        let r = masked(ops, &mut sub, &all);
        st.scatter_footprint(sub, lanes, footprint);
        r
    } else {
        on_running(ops, st, &running)
    }
}

/// The [`Footprint`] of each run of ops an executor gathers, computed once
/// per run (keyed by the ops' place in the program).
#[derive(Default)]
pub struct Footprints {
    known: HashMap<(usize, usize), Footprint>,
}

impl Footprints {
    fn of(&mut self, ops: StmtOps) -> &Footprint {
        self.known.entry(ops.key()).or_insert_with(|| {
            let mut vars = Vec::new();
            let mut written = Vec::new();
            let mut ad_stacks = false;
            for s in ops.iter() {
                let e = effects::of_stmt(s);
                vars.extend(e.reads.iter().chain(&e.writes).copied());
                written.extend(e.writes.iter().copied());
                ad_stacks |= !e.pops.is_empty() || e.pushes.is_some();
            }
            vars.sort_unstable();
            vars.dedup();
            written.sort_unstable();
            written.dedup();
            Footprint {
                vars,
                written,
                ad_stacks,
            }
        })
    }
}

/// The ops on `lanes` with masked writes. A lane that fails within the
/// block is not taken out before the block ends (a scan of the lanes'
/// status per op would cost as much as a cheap op): the ops skip failed
/// lanes themselves and a failed lane's first error is what it reports.
fn masked(ops: StmtOps, st: &mut State, lanes: &Lanes) -> Result<()> {
    let active = st.running(lanes);
    on_running(ops, st, &active)
}

/// [`masked`] for lanes already known to be running.
fn on_running(ops: StmtOps, st: &mut State, active: &Lanes) -> Result<()> {
    if active.is_empty() {
        return Ok(());
    }
    // Borrowed out of the state for the run (no reference count touched
    // per statement); an empty table is not looked up.
    let last_reads = st.last_reads.take();
    let table = last_reads.as_deref().filter(|m| !m.is_empty());
    let done = run_each(ops, st, active, table);
    st.last_reads = last_reads;
    done
}

fn run_each(
    ops: StmtOps,
    st: &mut State,
    active: &Lanes,
    last_reads: Option<&super::last_reads::LastReads>,
) -> Result<()> {
    let mut ops = ops.iter();
    while let Some(op) = ops.next() {
        let timed = super::profile::start();
        // `let a = multiply(X, v); let b = add(s, a);` as one product (and
        // a check of `b` that follows).
        let mut ahead = ops.clone();
        let fused = match ahead.next() {
            Some(next) => {
                crate::ops::product_then_add::run(op, next, ahead.next(), st, active, last_reads)?
            }
            None => 0,
        };
        if fused > 0 {
            for _ in 1..fused {
                ops.next();
            }
        } else {
            if let Some(moves) = last_reads.and_then(|m| m.at(op)) {
                st.moving.extend_from_slice(moves);
            }
            let done = exec_op(op, st, active);
            st.moving.clear();
            done?;
        }
        super::profile::record(
            timed,
            std::ptr::from_ref(op).cast(),
            || language::mir::print::print_stmt(st.program, op),
            active.len(),
            st.z,
        );
    }
    Ok(())
}

/// A block's straight-line statements: a CFG block's ops, or a run of
/// `Op::Stmt` of a PC IR block.
#[derive(Clone, Copy)]
pub enum StmtOps<'a> {
    Cfg(&'a [Stmt]),
    Pc(&'a [Op]),
}

impl<'a> StmtOps<'a> {
    /// Where the ops are in the program (their address and number).
    fn key(self) -> (usize, usize) {
        match self {
            StmtOps::Cfg(s) => (s.as_ptr() as usize, s.len()),
            StmtOps::Pc(s) => (s.as_ptr() as usize, s.len()),
        }
    }

    fn len(self) -> usize {
        match self {
            StmtOps::Cfg(s) => s.len(),
            StmtOps::Pc(s) => s.len(),
        }
    }

    fn iter(self) -> impl Iterator<Item = &'a Stmt> + Clone {
        let (cfg, pc) = match self {
            StmtOps::Cfg(s) => (s, &[][..]),
            StmtOps::Pc(s) => (&[][..], s),
        };
        cfg.iter().chain(pc.iter().filter_map(|op| match op {
            Op::Stmt(s) => Some(s),
            _ => None,
        }))
    }
}

/// The running lanes of `lanes` where `cond` holds, and those where it
/// does not.
pub fn branch(cond: &Expr, st: &mut State, lanes: &Lanes) -> Result<(Lanes, Lanes)> {
    let c = eval(cond, st, lanes)?;
    let live = st.running(lanes);
    // One answer for every lane (a loop over data's bound check).
    if let Slot::Shared(v) = &*c
        && let Ok(t) = lane::truthy(v)
    {
        let none = Lanes::none(st.z);
        return Ok(if t { (live, none) } else { (none, live) });
    }
    let truth: Vec<(usize, std::result::Result<bool, RuntimeError>)> = match &*c {
        Slot::Shared(v) => {
            let t = lane::truthy(v);
            live.iter().map(|l| (l, t.clone())).collect()
        }
        other => live
            .iter()
            .map(|l| {
                let t = other
                    .scalar_truth(l)
                    .map_or_else(|| lane::truthy(&other.lane_value(l)), Ok);
                (l, t)
            })
            .collect(),
    };
    let mut yes = Vec::new();
    let mut no = Vec::new();
    for (l, t) in truth {
        match t {
            Ok(true) => yes.push(l),
            Ok(false) => no.push(l),
            Err(e) => st.fail(l, e.at(cond.span)),
        }
    }
    // Both lists are ascending (filled in `live`'s order); when every
    // lane goes one way, that side is `live` itself.
    let z = st.z;
    Ok(match (yes.len() == live.len(), no.len() == live.len()) {
        (true, _) => (live, Lanes::none(z)),
        (_, true) => (Lanes::none(z), live),
        _ => (Lanes::from_ascending(z, yes), Lanes::from_ascending(z, no)),
    })
}

/// The values of call arguments for `lanes`, left to right.
pub fn eval_args(args: &[Expr], st: &mut State, lanes: &Lanes) -> Result<Vec<Arc<Slot>>> {
    args.iter()
        .map(|a| eval(a, st, lanes).map_err(Into::into))
        .collect()
}

/// Set variable `var` to `value` on `lanes` (the CFG's `Let`: whole
/// variable, no shape check); other lanes keep theirs.
pub fn set_masked(st: &mut State, var: VarId, value: Arc<Slot>, lanes: &Lanes) {
    crate::ops::set_var(st, var, value, lanes)
}

/// Lane `l`'s outcome of an invocation that returned `value` (`None` for
/// `void`): its error if it failed, else its value converted to the return
/// type `ret` as the interpreter returns it.
pub fn lane_outcome(
    st: &State,
    l: usize,
    value: Option<&Slot>,
    ret: Option<&Type>,
) -> super::LaneResult<Option<language::value::Value>> {
    if let crate::lanes::LaneStatus::Failed(e) = &st.status[l] {
        return Err((**e).clone());
    }
    Ok(value.map(|v| match ret {
        Some(ty) => lane::promote(v.lane_value(l), ty),
        None => v.lane_value(l),
    }))
}

/// Set the parameters `params` of the lanes in `args` (a lane and its
/// arguments, in order); the other lanes of a fresh slot get the first
/// lane's values, never read.
pub fn set_args(st: &mut State, params: &[VarId], args: &[(usize, Vec<language::value::Value>)]) {
    let Some((_, filler)) = args.first() else {
        return;
    };
    let lanes = Lanes::from_indices(st.z, args.iter().map(|(l, _)| *l).collect());
    for (k, param) in params.iter().enumerate() {
        let mut values = vec![filler[k].clone(); st.z];
        for (l, a) in args {
            values[*l] = a[k].clone();
        }
        set_masked(st, *param, Arc::new(Slot::from_lane_values(values)), &lanes);
    }
}

/// Record `err` as the failure of every running lane of `lanes`.
pub fn fail(st: &mut State, lanes: &Lanes, err: &RuntimeError) {
    for l in lanes.iter() {
        st.fail(l, err.clone());
    }
}

/// Ints promoted to reals where the function's return type says real, as
/// the interpreter does with a returned value.
pub fn promote(value: Arc<Slot>, ty: &Type, st: &State, lanes: &Lanes) -> Arc<Slot> {
    let Some(first) = lanes.first() else {
        return value;
    };
    match &*value {
        Slot::Shared(v) => Arc::new(Slot::shared(lane::promote((**v).clone(), ty))),
        Slot::Int(d) => {
            let probe = lane::promote(value.lane_value(first), ty);
            match dense_shape(&probe) {
                Some((_, true)) => value,
                Some((shape, false)) => Arc::new(Slot::Real(Dense::new(
                    shape,
                    d.z,
                    d.data.iter().map(|&i| i as f64).collect(),
                ))),
                None => Arc::new(per_lane_promote(&value, ty, st.z)),
            }
        }
        Slot::Real(_) => {
            let before = value.lane_value(first);
            let probe = lane::promote(before.clone(), ty);
            if probe == before {
                value
            } else {
                Arc::new(per_lane_promote(&value, ty, st.z))
            }
        }
        Slot::Tuple(items) => match ty {
            Type::Tuple(types) if types.len() == items.len() => Arc::new(Slot::Tuple(
                items
                    .iter()
                    .zip(types)
                    .map(|(item, ty)| promote(item.clone(), ty, st, lanes))
                    .collect(),
            )),
            _ => Arc::new(per_lane_promote(&value, ty, st.z)),
        },
        Slot::PerLane(_) => Arc::new(per_lane_promote(&value, ty, st.z)),
    }
}

fn per_lane_promote(value: &Slot, ty: &Type, z: usize) -> Slot {
    Slot::from_lane_values(
        value
            .to_lane_values(z)
            .into_iter()
            .map(|v| lane::promote(v, ty))
            .collect(),
    )
}

/// Returned values of the lanes that have returned so far.
#[derive(Default)]
pub struct Returned {
    pub value: Option<Arc<Slot>>,
}

impl Returned {
    pub fn add(&mut self, value: Arc<Slot>, lanes: &Lanes) {
        if lanes.is_empty() {
            return;
        }
        match &mut self.value {
            None => self.value = Some(value),
            Some(old) => Slot::merge_lanes(old, value, lanes),
        }
    }
}
