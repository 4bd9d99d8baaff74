//! The iterations of a counted loop over data run as the lanes of one
//! batch: a small batch (e.g. 4 chains) that loops element by element over
//! N data points pays the executor's fixed cost per operation N times;
//! run as N × Z lanes, each operation is one batched kernel.
//!
//! A loop qualifies (see [`LoopPlan::of`]) when its body (straight-line
//! blocks, inner loops and branches; no calls) lets iterations depend on
//! each other only through accumulations: `target += e` and `acc += e` /
//! `acc[i] += e` into real variables the body reads nowhere else. Every
//! other variable the body writes is written whole before the body reads
//! it and is dead after the loop, so it is the iteration's own; AD stacks
//! the body pushes it pops again within the iteration (checked as it
//! runs: each iteration gets stacks of its own).
//!
//! Exactness: each accumulation is recorded per iteration as the value it
//! adds (run on a fresh accumulator of −0.0, and −0.0 + x = x exactly),
//! then added to each chain's accumulator in loop order, statement by
//! statement, which is the interpreter's sequence of additions. A chain
//! fails with the error of its earliest failing iteration, the one the
//! interpreter stops at. After the loop the counter holds its exit value,
//! as in the interpreter.

use super::block;
use super::{ExecError, Result};
use crate::lanes::{Dense, LaneStatus, Lanes, Slot, State, dense_shape};
use crate::ops::exec_op;
use language::batch::pc::liveness::Liveness;
use language::batch::pc::{BlockId, Op, Program, Terminator, effects};
use language::data::Shape;
use language::mir::{Expr, ExprKind, Index, LValueStep, Prim, Stmt, StmtKind, VarId};
use language::value::Value;
use runtime::RuntimeError;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Most lanes (chains × iterations) run at once; longer loops run in
/// chunks of iterations, one after the other.
const MAX_LANES: usize = 4096;
/// At most this many elements of per-chain values are copied to the
/// iterations of one chunk (8 MB of reals).
const MAX_COPIED: usize = 1 << 20;
/// Batches of more chains than this run loops as they are: each operation
/// already has enough lanes.
const MAX_CHAINS: usize = 64;
/// Accumulators larger than this are not recorded per iteration (each
/// record is added element by element).
const MAX_ACCUMULATOR: usize = 64;

/// A loop whose iterations can run as lanes.
#[derive(Debug)]
pub(super) struct LoopPlan {
    counter: VarId,
    bound: VarId,
    /// Counting up (`counter <= bound`, `counter + 1`) or down.
    up: bool,
    /// The body's first block, and the latch it ends at.
    entry: BlockId,
    latch: BlockId,
    exit: BlockId,
    /// Variables the body reads and never writes.
    invariants: Vec<VarId>,
    /// Variables the body only adds to.
    accumulators: Vec<VarId>,
    /// The body pushes or pops AD stacks.
    stacks: bool,
}

/// The loops of a program that qualify, by header block.
#[derive(Debug, Default)]
pub(super) struct Plans(HashMap<usize, LoopPlan>);

impl Plans {
    /// `live` must be `p`'s interprocedural liveness.
    pub(super) fn of(p: &Program, live: &Liveness) -> Plans {
        Plans(
            (0..p.blocks.len())
                .filter_map(|b| LoopPlan::of(p, BlockId(b as u32), live).map(|plan| (b, plan)))
                .collect(),
        )
    }

    pub(super) fn get(&self, header: usize) -> Option<&LoopPlan> {
        self.0.get(&header)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl LoopPlan {
    /// The plan of the loop whose header is `header`: a block with no ops
    /// branching on `counter <= bound` (or `>=`) into a body of
    /// straight-line blocks (inner loops and branches allowed, no calls,
    /// no exit but the latch `counter = counter ± 1` back to the header).
    fn of(p: &Program, header: BlockId, live: &Liveness) -> Option<LoopPlan> {
        let h = p.block(header);
        let Terminator::Branch {
            cond,
            then,
            otherwise,
        } = &h.term
        else {
            return None;
        };
        if !h.ops.is_empty() {
            return None;
        }
        let ExprKind::Prim(cmp @ (Prim::Leq | Prim::Geq), args) = &cond.kind else {
            return None;
        };
        let [counter, bound] = args.as_slice() else {
            return None;
        };
        let (ExprKind::Var(counter), ExprKind::Var(bound)) = (&counter.kind, &bound.kind) else {
            return None;
        };
        let up = *cmp == Prim::Leq;
        let (region, latch) = region(p, header, *then, *otherwise, *counter, up)?;
        let mut plan = LoopPlan {
            counter: *counter,
            bound: *bound,
            up,
            entry: *then,
            latch,
            exit: *otherwise,
            invariants: Vec::new(),
            accumulators: Vec::new(),
            stacks: false,
        };
        plan.classify(p, &region, live)?;
        Some(plan)
    }

    /// The block the loop exits to.
    pub(super) fn exit(&self) -> BlockId {
        self.exit
    }

    /// Sort the body's variables into its own (written whole before any
    /// read in every iteration, dead after the loop), invariants and
    /// accumulators; `None` if some iteration could see another's value.
    fn classify(&mut self, p: &Program, region: &[BlockId], live: &Liveness) -> Option<()> {
        let stmts: Vec<&Stmt> = region
            .iter()
            .flat_map(|b| &p.block(*b).ops)
            .filter_map(|op| match op {
                Op::Stmt(s) => Some(s),
                _ => None,
            })
            .collect();
        let mut killed = Vec::new();
        for s in &stmts {
            killed.extend(effects::of_stmt(s).kills);
        }
        let mut reads: Vec<VarId> = Vec::new();
        for b in region {
            reads.extend(effects::of_terminator(&p.block(*b).term).reads);
        }
        for s in &stmts {
            let e = effects::of_stmt(s);
            if e.per_lane_source {
                return None;
            }
            self.stacks |= e.pushes.is_some() || !e.pops.is_empty();
            match &s.kind {
                StmtKind::Let { .. }
                | StmtKind::Decl { .. }
                | StmtKind::TargetAdd(_)
                | StmtKind::JacobianAdd(_)
                | StmtKind::Push { .. } => reads.extend(e.reads),
                StmtKind::Assign { lhs, .. } | StmtKind::AddAssign { lhs, .. }
                    if killed.contains(&lhs.var) =>
                {
                    reads.extend(e.reads)
                }
                StmtKind::AddAssign { lhs, rhs } => {
                    let index = match lhs.path.as_slice() {
                        [] => None,
                        [LValueStep::Index(idx)] => match idx.as_slice() {
                            [Index::Single(i)] => Some(i),
                            _ => return None,
                        },
                        _ => return None,
                    };
                    // What the update reads besides its own variable.
                    reads.extend(effects::of_expr(rhs).reads);
                    if let Some(i) = index {
                        reads.extend(effects::of_expr(i).reads);
                    }
                    if !self.accumulators.contains(&lhs.var) {
                        self.accumulators.push(lhs.var);
                    }
                }
                _ => return None,
            }
        }
        let at_entry = &live.live_in[self.entry.0 as usize];
        let after = &live.live_in[self.exit.0 as usize];
        // An own variable live into the body is read before it is written
        // (a value carried from the previous iteration); live after the
        // loop, its last value would be needed.
        if killed
            .iter()
            .any(|v| at_entry.contains(*v) || after.contains(*v))
            || self.accumulators.iter().any(|a| reads.contains(a))
            || killed.contains(&self.counter)
            || killed.contains(&self.bound)
            || self.accumulators.contains(&self.counter)
            || self.accumulators.contains(&self.bound)
        {
            return None;
        }
        reads.sort_unstable();
        reads.dedup();
        self.invariants = reads
            .into_iter()
            .filter(|v| !killed.contains(v) && *v != self.counter)
            .collect();
        Some(())
    }
}

/// The blocks of the body of the loop at `header` entered at `entry`
/// (sorted), and its latch; `None` if the body leaves the loop other
/// than by the latch, calls, or returns.
fn region(
    p: &Program,
    header: BlockId,
    entry: BlockId,
    exit: BlockId,
    counter: VarId,
    up: bool,
) -> Option<(Vec<BlockId>, BlockId)> {
    let mut latch = None;
    let mut seen = vec![entry];
    let mut work = vec![entry];
    while let Some(b) = work.pop() {
        let bl = p.block(b);
        if b == header || b == exit || !bl.ops.iter().all(|op| matches!(op, Op::Stmt(_))) {
            return None;
        }
        let next = match &bl.term {
            Terminator::Jump(t) => vec![*t],
            Terminator::Branch {
                then, otherwise, ..
            } => vec![*then, *otherwise],
            _ => return None,
        };
        for t in next {
            if is_step(p, t, header, counter, up) {
                if latch.is_some_and(|l| l != t) {
                    return None;
                }
                latch = Some(t);
            } else if !seen.contains(&t) {
                seen.push(t);
                work.push(t);
            }
        }
    }
    seen.sort_unstable();
    Some((seen, latch?))
}

/// `latch` is `counter = counter ± 1` jumping to `header`.
fn is_step(p: &Program, latch: BlockId, header: BlockId, counter: VarId, up: bool) -> bool {
    let l = p.block(latch);
    if !matches!(l.term, Terminator::Jump(h) if h == header) {
        return false;
    }
    let [Op::Stmt(s)] = l.ops.as_slice() else {
        return false;
    };
    let StmtKind::Let { var, value } = &s.kind else {
        return false;
    };
    let step = if up { Prim::Add } else { Prim::Sub };
    let ExprKind::Prim(prim, args) = &value.kind else {
        return false;
    };
    let [
        Expr {
            kind: ExprKind::Var(v),
            ..
        },
        Expr {
            kind: ExprKind::Int(1),
            ..
        },
    ] = args.as_slice()
    else {
        return false;
    };
    *var == counter && *prim == step && *v == counter
}

/// What one accumulation of an iteration added, per lane of the
/// iterations' batch.
enum Record {
    Target(Vec<f64>),
    Var(VarId, Dense<f64>),
}

/// Run the loop `plan` (its header reached by `lanes`) with its iterations
/// as lanes, leaving the lanes' state as running the loop would and the
/// lanes ready to go to the loop's exit. `Ok(false)`: the loop does not
/// qualify for these lanes (nothing was changed), run it as it is.
pub(super) fn run(plan: &LoopPlan, p: &Program, st: &mut State, lanes: &Lanes) -> Result<bool> {
    let chains: Vec<usize> = st.running(lanes).indices().to_vec();
    let m = chains.len();
    if m == 0 || m > MAX_CHAINS {
        return Ok(false);
    }
    let (Some(first), Some(last)) = (
        uniform_int(st, plan.counter, &chains),
        uniform_int(st, plan.bound, &chains),
    ) else {
        return Ok(false);
    };
    let iterations = if plan.up {
        last - first + 1
    } else {
        first - last + 1
    };
    // Per-chain values the iterations read are copied to each of them.
    let width: usize = plan
        .invariants
        .iter()
        .filter_map(|v| st.vars[v.0 as usize].as_deref())
        .map(|s| match s {
            Slot::Real(d) => d.elements(),
            Slot::Int(d) => d.elements(),
            Slot::Shared(_) => 0,
            _ => 1,
        })
        .sum();
    let per_chunk = (MAX_LANES.min(MAX_COPIED / width.max(1)) / m) as i64;
    if iterations < 2 || per_chunk < 2 {
        return Ok(false);
    }
    let Some(shapes) = accumulator_shapes(plan, st) else {
        return Ok(false);
    };
    // Each chain's accumulators as dense storage of its batch (the same
    // values) to add the records into.
    for a in &plan.accumulators {
        if let Some(slot) = st.vars[a.0 as usize].as_mut()
            && slot.is_shared()
        {
            *slot = Arc::new(slot.broadcast(st.z));
        }
    }
    let mut failed: Vec<Option<RuntimeError>> = vec![None; m];
    let mut done = 0;
    while done < iterations {
        let k = per_chunk.min(iterations - done);
        let step = |i: i64| {
            if plan.up {
                first + done + i
            } else {
                first - done - i
            }
        };
        // Lane `i * m + c` runs iteration `i` of chain `chains[c]`.
        let zk = k as usize * m;
        let of_chain: Vec<usize> = (0..zk).map(|x| chains[x % m]).collect();
        let mut vars: Vec<Option<Arc<Slot>>> = vec![None; st.vars.len()];
        for v in &plan.invariants {
            vars[v.0 as usize] = st.vars[v.0 as usize]
                .as_ref()
                .map(|s| Arc::new(s.gather(&of_chain)));
        }
        let counters = (0..zk).map(|x| step((x / m) as i64)).collect();
        vars[plan.counter.0 as usize] =
            Some(Arc::new(Slot::Int(Dense::new(Shape::Int, zk, counters))));
        let mut sub = State::with_vars(st.program, vars, zk);
        sub.jacobian = st.jacobian;
        sub.gemm = st.gemm;
        if plan.stacks {
            // Each iteration's own stacks, over a mark it must not pop.
            let fresh = || {
                let mut stack = Vec::with_capacity(16);
                stack.push(mark());
                stack
            };
            sub.stacks = (0..st.stacks.len())
                .map(|_| (0..zk).map(|_| fresh()).collect())
                .collect();
        }
        let mut records = Vec::new();
        let fits = run_body(plan, p, &mut sub, &shapes, &mut records)?
            && sub.stacks.iter().flatten().enumerate().all(|(x, stack)| {
                let balanced = stack.first().is_some_and(is_mark);
                balanced && (stack.len() == 1 || !sub.is_running(x % zk))
            });
        if !fits {
            if done == 0 {
                // Nothing of the chains' state was changed yet.
                return Ok(false);
            }
            let msg = "a loop run as lanes stopped fitting after its first iterations";
            return Err(ExecError::Setup(msg.into()));
        }
        // The earliest failing iteration of each chain.
        for x in 0..zk {
            if let LaneStatus::Failed(err) = &sub.status[x]
                && failed[x % m].is_none()
            {
                failed[x % m] = Some((**err).clone());
            }
        }
        replay(&records, st, &chains, &failed, k as usize);
        done += k;
    }
    for (c, err) in failed.into_iter().enumerate() {
        if let Some(err) = err {
            st.fail(chains[c], err);
        }
    }
    let exit = if plan.up { last + 1 } else { last - 1 };
    set_lanes(st, plan.counter, &Slot::shared(Value::Int(exit)), &chains);
    Ok(true)
}

/// The bottom of an iteration's AD stacks: popping it means the iteration
/// takes values an earlier one pushed.
fn mark() -> Value {
    Value::Tuple(Vec::new())
}

fn is_mark(v: &Value) -> bool {
    matches!(v, Value::Tuple(items) if items.is_empty())
}

/// Run the loop body on every lane of `sub` (one iteration each) until
/// each reaches the latch, recording each accumulation. `Ok(false)`: an
/// accumulator did not stay dense.
fn run_body(
    plan: &LoopPlan,
    p: &Program,
    sub: &mut State,
    shapes: &HashMap<VarId, Shape>,
    records: &mut Vec<Record>,
) -> Result<bool> {
    let zk = sub.z;
    let mut waiting: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    waiting.insert(plan.entry.0 as usize, (0..zk).collect());
    while let Some((b, lanes)) = waiting.pop_first() {
        let lanes = sub.running(&Lanes::from_indices(zk, lanes));
        if lanes.is_empty() {
            continue;
        }
        let block = p.block(BlockId(b as u32));
        for op in &block.ops {
            if let Op::Stmt(s) = op
                && !run_recorded(plan, s, sub, &lanes, shapes, records)?
            {
                return Ok(false);
            }
        }
        let lanes = sub.running(&lanes);
        let mut go = |to: BlockId, lanes: &Lanes| {
            if to != plan.latch && !lanes.is_empty() {
                waiting
                    .entry(to.0 as usize)
                    .or_default()
                    .extend(lanes.iter());
            }
        };
        match &block.term {
            Terminator::Jump(to) => go(*to, &lanes),
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => {
                let (yes, no) = block::branch(cond, sub, &lanes)?;
                go(*then, &yes);
                go(*otherwise, &no);
            }
            _ => unreachable!("loop bodies end in jumps and branches (LoopPlan::of)"),
        }
    }
    Ok(true)
}

/// Statement `s` for `lanes`; an accumulation is recorded (the other lanes
/// add −0.0). `Ok(false)`: an accumulator did not stay dense.
fn run_recorded(
    plan: &LoopPlan,
    s: &Stmt,
    sub: &mut State,
    lanes: &Lanes,
    shapes: &HashMap<VarId, Shape>,
    records: &mut Vec<Record>,
) -> Result<bool> {
    let zk = sub.z;
    match &s.kind {
        StmtKind::TargetAdd(_) | StmtKind::JacobianAdd(_) => {
            sub.target = vec![-0.0; zk];
            exec_op(s, sub, lanes)?;
            records.push(Record::Target(std::mem::take(&mut sub.target)));
        }
        StmtKind::AddAssign { lhs, .. } if plan.accumulators.contains(&lhs.var) => {
            let shape = &shapes[&lhs.var];
            let zeros = vec![-0.0; shape.num_reals() * zk];
            let fresh = Slot::Real(Dense::new(shape.clone(), zk, zeros));
            sub.vars[lhs.var.0 as usize] = Some(Arc::new(fresh));
            exec_op(s, sub, lanes)?;
            match sub.vars[lhs.var.0 as usize]
                .take()
                .map(Arc::unwrap_or_clone)
            {
                Some(Slot::Real(d)) if d.shape == *shape => records.push(Record::Var(lhs.var, d)),
                _ => return Ok(false),
            }
        }
        _ => exec_op(s, sub, lanes)?,
    }
    Ok(true)
}

/// Each chain's accumulations in loop order: iteration by iteration, the
/// records in statement order.
fn replay(
    records: &[Record],
    st: &mut State,
    chains: &[usize],
    failed: &[Option<RuntimeError>],
    k: usize,
) {
    let z = st.z;
    let m = chains.len();
    for (c, &l) in chains.iter().enumerate() {
        if failed[c].is_some() {
            continue;
        }
        for i in 0..k {
            let x = i * m + c;
            for r in records {
                match r {
                    Record::Target(t) => st.target[l] += t[x],
                    Record::Var(v, d) => {
                        let Some(Slot::Real(acc)) =
                            st.vars[v.0 as usize].as_mut().map(Arc::make_mut)
                        else {
                            continue;
                        };
                        let zk = d.z;
                        for e in 0..d.elements() {
                            acc.data[e * z + l] += d.data[e * zk + x];
                        }
                    }
                }
            }
        }
    }
}

/// The dense real shape of each accumulator (its value before the loop),
/// or `None` if one is not a small real value.
fn accumulator_shapes(plan: &LoopPlan, st: &State) -> Option<HashMap<VarId, Shape>> {
    plan.accumulators
        .iter()
        .map(|a| {
            let shape = match st.vars[a.0 as usize].as_deref()? {
                Slot::Real(d) => d.shape.clone(),
                Slot::Shared(v) => match dense_shape(v)? {
                    (shape, false) => shape,
                    _ => return None,
                },
                _ => return None,
            };
            (shape.num_reals() <= MAX_ACCUMULATOR).then_some((*a, shape))
        })
        .collect()
}

/// The int `var` holds on every lane of `lanes`.
fn uniform_int(st: &State, var: VarId, lanes: &[usize]) -> Option<i64> {
    match st.vars[var.0 as usize].as_deref()? {
        Slot::Shared(v) => match **v {
            Value::Int(i) => Some(i),
            _ => None,
        },
        Slot::Int(d) if d.shape == Shape::Int => {
            let first = d.data[lanes[0]];
            lanes.iter().all(|&l| d.data[l] == first).then_some(first)
        }
        _ => None,
    }
}

/// Set lanes `chains` of `var` to `value` (a slot over those lanes, in
/// that order); the other lanes keep theirs.
fn set_lanes(st: &mut State, var: VarId, value: &Slot, chains: &[usize]) {
    let z = st.z;
    if chains.len() == z {
        st.vars[var.0 as usize] = Some(Arc::new(value.clone()));
        return;
    }
    match &mut st.vars[var.0 as usize] {
        Some(old) => Arc::make_mut(old).scatter(value, chains, z),
        empty => {
            // Lanes outside `chains` get some chain's value (never read).
            let mut of_lane = vec![0; z];
            for (c, &l) in chains.iter().enumerate() {
                of_lane[l] = c;
            }
            *empty = Some(Arc::new(value.gather(&of_lane)));
        }
    }
}
