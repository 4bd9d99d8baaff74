//! Program-counter autobatching (Radul et al. 2020, Alg. 2) over the PC IR
//! ([`language::batch::pc`]): one merged block graph of all functions, a
//! program-counter stack per lane, and per-variable per-lane stacks for the
//! variables the PC IR saves around recursive calls (`Push`/`Pop`/`Peek`).
//! Lanes at different depths of a recursion run a block together; there is
//! no host recursion. Every variable has one slot per lane (its register);
//! a stack holds only the saved values below the current one, so a read
//! never looks at a stack (cached tops for every stack variable).

use super::block::{self, StmtOps};
use super::flow;
use super::host::BatchHost;
use super::iterations::{self, Plans};
use super::schedule::WaitQueue;
use super::{ExecConfig, Result};
use crate::eval::eval;
use crate::lanes::{Lanes, Slot, State};
use language::batch::pc::liveness::{Liveness, VarSet};
use language::batch::pc::lower::external_call;
use language::batch::pc::{BlockId, FunctionKind, Op, Program, Terminator};
use language::mir::{FunId, VarId};
use language::value::Value;
use runtime::RuntimeError;
use std::collections::HashMap;
use std::sync::Arc;

/// Run function `f` of `p` on `lanes` until each returns (empty
/// program-counter stack) or fails. A function's returned value is left
/// in its result variable.
pub(super) fn run(
    p: &Program,
    loops: &Plans,
    f: FunId,
    st: &mut State,
    lanes: &Lanes,
    config: &ExecConfig,
    host: &mut dyn BatchHost,
) -> Result<()> {
    run_refilling(p, loops, None, f, st, lanes, config, host, false)
}

/// The variables live at the start of each block of a PC program
/// (interprocedural: a return continues at every return block of a call
/// of its function). A lane waiting at a block reads no variable outside
/// that block's set before writing it, so a masked write of a variable no
/// waiting lane's block has in its set need not keep the other lanes'
/// values ([`State::read_elsewhere`]). Only when nothing but the entry's
/// result is read after an invocation returns: generated quantities, for
/// one, are variables read once the run is over, dead in the program.
pub(super) struct LiveIn(Vec<VarSet>);

impl LiveIn {
    /// `live` must be the program's interprocedural liveness.
    pub(super) fn of(live: Liveness) -> LiveIn {
        LiveIn(live.live_in)
    }

    /// What lanes waiting in `queue` may read, and the result of `f`
    /// (read for the lanes that return).
    fn read_by_waiting(&self, p: &Program, f: FunId, queue: &WaitQueue) -> VarSet {
        let mut vars = VarSet::new(p.mir.vars.len());
        for b in queue.points() {
            vars.union_with(&self.0[b]);
        }
        if let Some(result) = p.function(f).result {
            vars.insert(result);
        }
        vars
    }
}

/// As [`run`]; with `live` (when the caller reads nothing of a finished
/// invocation but its result), masked writes skip what no other lane
/// reads. With `refill`, each lane whose invocation finishes (returns
/// or fails) reports its result to `host`
/// ([`BatchHost::invocation_finished`]) and, if the host gives it another
/// invocation ([`BatchHost::next_invocation`]), starts that one at once
/// from the function's first block, while the other lanes go on: lanes
/// never wait for each other at invocation boundaries either.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_refilling(
    p: &Program,
    loops: &Plans,
    live: Option<&LiveIn>,
    f: FunId,
    st: &mut State,
    lanes: &Lanes,
    config: &ExecConfig,
    host: &mut dyn BatchHost,
    refill: bool,
) -> Result<()> {
    let mut z = st.z;
    let base_depth = usize::from(p.function(f).kind == FunctionKind::User);
    let mut calls: Vec<Vec<BlockId>> = vec![Vec::new(); z];
    let mut scratch = Scratch::default();
    let barrier = barriers(p, config);
    let flow = flow::Flow::of(p, &barrier);
    let mut queue = WaitQueue::with_barriers(barrier, flow.to_barrier, flow.upstream);
    let first = p.function(f).first_block.0 as usize;
    queue.add(first, lanes.iter());
    let mut compactable = true;
    loop {
        // (The count of waiting lanes only when the rest would allow it.)
        if compactable && z >= MIN_COMPACTED_LANES && (1..=z / 4).contains(&queue.len()) {
            compactable = compact(st, &mut queue, &mut calls, &mut scratch, host);
            z = st.z;
        }
        let Some((b, waiting)) = queue.take(&*config.choice, z) else {
            break;
        };
        let bl = p.block(BlockId(b as u32));
        // A loop over data in a small batch: its iterations as lanes, and
        // the lanes on to the loop's exit.
        let looped = match loops.get(b) {
            Some(plan) => iterations::run(plan, p, st, &waiting)?.then(|| plan.exit()),
            None => None,
        };
        let to_exit;
        let term = match looped {
            Some(exit) => {
                to_exit = Terminator::Jump(exit);
                &to_exit
            }
            None => {
                st.read_elsewhere = live.map(|live| live.read_by_waiting(p, f, &queue));
                let ran = run_ops(&bl.ops, st, &waiting, config, p, &mut scratch, host);
                st.read_elsewhere = None;
                ran?;
                &bl.term
            }
        };
        let active = st.running(&waiting);
        // Lanes whose invocation returned in this step.
        let mut returned = Vec::new();
        match term {
            _ if active.is_empty() => {}
            Terminator::Jump(t) => queue.add(t.0 as usize, active.iter()),
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => {
                let (yes, no) = block::branch(cond, st, &active)?;
                queue.add(then.0 as usize, yes.iter());
                queue.add(otherwise.0 as usize, no.iter());
            }
            Terminator::PushJump {
                ret,
                callee,
                target,
            } => {
                let callee = p.function(*callee);
                if callee.kind == FunctionKind::External {
                    let msg = format!("external function `{}` has no host here", callee.name);
                    block::fail(st, &active, &RuntimeError::fatal(msg));
                } else {
                    for l in active.iter() {
                        if base_depth + calls[l].len() >= config.max_depth {
                            // (The message only when a lane needs it: every
                            // call formatting it cost as much as a cheap op.)
                            st.fail(
                                l,
                                runtime::RuntimeError::too_deep(&callee.name, config.max_depth),
                            );
                        } else {
                            calls[l].push(*ret);
                        }
                    }
                    queue.add(target.0 as usize, st.running(&active).iter());
                }
            }
            Terminator::Return => {
                // Few distinct return blocks (a function's call sites):
                // found by a scan, not a map lookup per lane.
                let mut targets: Vec<(usize, Vec<usize>)> = Vec::new();
                for l in active.iter() {
                    match calls[l].pop() {
                        Some(r) => {
                            let to = r.0 as usize;
                            match targets.iter_mut().find(|(t, _)| *t == to) {
                                Some((_, ls)) => ls.push(l),
                                None => targets.push((to, vec![l])),
                            }
                        }
                        None => returned.push(l),
                    }
                }
                for (to, ls) in targets {
                    queue.add(to, ls);
                }
            }
        }
        if refill {
            // Every lane of this step that failed in it, and every lane
            // that returned, finished its invocation.
            let mut finished: Vec<usize> = waiting.iter().filter(|&l| !st.is_running(l)).collect();
            finished.extend(returned);
            let restarted = restart(p, f, st, host, &finished, &mut calls, &mut scratch);
            queue.add(first, restarted);
        }
    }
    Ok(())
}

/// The smallest batch [`compact`] shrinks: below it, a step costs about
/// the same whatever its width.
const MIN_COMPACTED_LANES: usize = 16;

/// Shrink the batch to the lanes still running (those waiting in `queue`:
/// every other lane finished with no more work), renumbered in order, when
/// at most a quarter of it runs and the host agrees
/// ([`BatchHost::compact`]). Every step costs in proportion to the batch's
/// width (slots are Z wide: masked writes, copies of shared slots,
/// full-width results of sparse kernels), so chains that run long after
/// the others finished (a sampler's slowest chains: 40% of an eight-schools
/// run with 1024 chains) ran at the cost of the whole batch. Returns
/// whether to try again later (`false` once the host declines).
fn compact(
    st: &mut State,
    queue: &mut WaitQueue,
    calls: &mut Vec<Vec<BlockId>>,
    scratch: &mut Scratch,
    host: &mut dyn BatchHost,
) -> bool {
    let keep = queue.lanes();
    if !host.compact(&keep) {
        return false;
    }
    let mut new = vec![usize::MAX; st.z];
    for (i, &l) in keep.iter().enumerate() {
        new[l] = i;
    }
    *st = st.compact(&Lanes::from_ascending(st.z, keep.clone()));
    *calls = keep
        .iter()
        .map(|&l| std::mem::take(&mut calls[l]))
        .collect();
    for stack in scratch.saved.values_mut() {
        stack.keep_lanes(&keep);
    }
    queue.renumber(&new);
    true
}

/// Report the lanes `finished` to the host and start the next invocation
/// in those the host gives one: its arguments set, its random stream,
/// empty call and variable stacks, a fresh target and output. Returns the
/// lanes restarted.
fn restart(
    p: &Program,
    f: FunId,
    st: &mut State,
    host: &mut dyn BatchHost,
    finished: &[usize],
    calls: &mut [Vec<BlockId>],
    scratch: &mut Scratch,
) -> Vec<usize> {
    let fun = p.function(f);
    let mut args: Vec<(usize, Vec<Value>)> = Vec::new();
    for &l in finished {
        let value = fun.result.and_then(|r| st.vars[r.0 as usize].as_deref());
        let result = block::lane_outcome(st, l, value, fun.ret.as_ref());
        host.invocation_finished(l, result);
        let Some((values, rng)) = host.next_invocation(l) else {
            continue;
        };
        if values.len() != fun.params.len() {
            let msg = format!(
                "`{}` takes {} arguments, given {}",
                fun.name,
                fun.params.len(),
                values.len()
            );
            st.fail(l, RuntimeError::fatal(msg));
            continue;
        }
        st.restart(l);
        st.set_rng(l, rng);
        calls[l].clear();
        for stack in scratch.saved.values_mut() {
            stack.clear_lane(l);
        }
        args.push((l, values));
    }
    block::set_args(st, &fun.params, &args);
    args.into_iter().map(|(l, _)| l).collect()
}

/// `barrier[block]`: the block calls an external function of
/// [`ExecConfig::synchronize_at`].
fn barriers(p: &Program, config: &ExecConfig) -> Vec<bool> {
    if config.synchronize_at.is_empty() {
        return Vec::new();
    }
    p.blocks
        .iter()
        .map(|b| {
            b.ops.iter().any(|op| {
                external_call(p, op).is_some_and(|(f, _, _)| {
                    config
                        .synchronize_at
                        .iter()
                        .any(|name| *name == p.function(f).name)
                })
            })
        })
        .collect()
}

/// A block's ops for `lanes`: runs of MIR statements as in the CFG
/// executor (masked or gathered), calling ops masked, external calls by
/// one host call for all of `lanes` that are still running.
fn run_ops(
    ops: &[Op],
    st: &mut State,
    lanes: &Lanes,
    config: &ExecConfig,
    p: &Program,
    scratch: &mut Scratch,
    host: &mut dyn BatchHost,
) -> Result<()> {
    let mut i = 0;
    while i < ops.len() {
        let active = st.running(lanes);
        if active.is_empty() {
            return Ok(());
        }
        let run_len = ops[i..]
            .iter()
            .take_while(|op| matches!(op, Op::Stmt(_)) && external_call(p, op).is_none())
            .count();
        if run_len > 0 {
            let stmts = StmtOps::Pc(&ops[i..i + run_len]);
            block::run_ops(stmts, st, &active, config, &mut scratch.footprints)?;
            i += run_len;
            continue;
        }
        let timed = super::profile::start();
        match &ops[i] {
            op @ Op::Stmt(_) => {
                let (f, args, ret) =
                    external_call(p, op).expect("other statements run in the runs above");
                let args = block::eval_args(args, st, &active)?;
                let active = st.running(&active);
                let name = &p.function(f).name;
                let value = super::profile::inside_host_call(|| {
                    super::host::serve(host, name, &args, ret.is_some(), st, &active)
                });
                if let (Some(var), Some(v)) = (ret, value) {
                    block::set_masked(st, var, v, &st.running(&active));
                }
            }
            Op::Arg { param, value } => {
                let v = eval(value, st, &active)?;
                block::set_masked(st, *param, v, &st.running(&active));
            }
            Op::SetResult { var, value } => {
                let v = eval(value, st, &active)?;
                let live = st.running(&active);
                let ty = p.mir.vars[var.0 as usize].ty.clone();
                let v = block::promote(v, &ty, st, &live);
                block::set_masked(st, *var, v, &live);
            }
            Op::Push(v) => {
                let z = st.z;
                let stack = scratch.saved.entry(*v).or_insert_with(|| VarStack::new(z));
                stack.push(st.vars[v.0 as usize].as_ref(), &active);
            }
            Op::Pop(v) | Op::Peek(v) => {
                let keep = matches!(ops[i], Op::Peek(_));
                restore(st, p, *v, scratch.saved.get_mut(v), &active, keep);
            }
        }
        super::profile::record(
            timed,
            std::ptr::from_ref(&ops[i]).cast(),
            || op_label(p, &ops[i]),
            active.len(),
            st.z,
        );
        i += 1;
    }
    Ok(())
}

/// An op other than a run of statements, for the op profile.
fn op_label(p: &Program, op: &Op) -> String {
    match op {
        Op::Stmt(s) => match external_call(p, op) {
            Some((f, _, _)) => format!("call {}", p.function(f).name),
            None => language::mir::print::print_stmt(&p.mir, s),
        },
        Op::Arg { param, .. } => format!("arg {}", p.var_name(*param)),
        Op::SetResult { var, .. } => format!("result {}", p.var_name(*var)),
        Op::Push(v) => format!("push {}", p.var_name(*v)),
        Op::Pop(v) => format!("pop {}", p.var_name(*v)),
        Op::Peek(v) => format!("peek {}", p.var_name(*v)),
    }
}

/// What a run keeps besides the state: the saved values of the variable
/// stacks, and the footprints of the blocks it gathers.
#[derive(Default)]
pub(super) struct Scratch {
    saved: HashMap<VarId, VarStack>,
    footprints: block::Footprints,
}

/// The values `Push` set aside for one variable, for every lane: level
/// `d` holds, at lane `l`, what lane `l` saved when its stack was `d`
/// deep. Levels are whole slots, so saving and restoring a dense variable
/// copies only the lanes concerned, element by element — or nothing, when
/// no other lane needs the values replaced: then the level and the
/// variable share one slot.
pub(super) struct VarStack {
    levels: Vec<Level>,
    /// Saved values per lane.
    depth: Vec<u32>,
    /// `saved_at[d]`: lanes with a value saved at level `d` (deeper than `d`).
    saved_at: Vec<usize>,
}

struct Level {
    /// `None` until some lane saved a value at this level.
    values: Option<Arc<Slot>>,
    /// The lane saved "no value" (the variable was unset).
    unset: Vec<bool>,
}

impl VarStack {
    fn new(z: usize) -> VarStack {
        VarStack {
            levels: Vec::new(),
            depth: vec![0; z],
            saved_at: Vec::new(),
        }
    }

    /// Save `current` (the variable's slot, `None` if unset) for `lanes`.
    fn push(&mut self, current: Option<&Arc<Slot>>, lanes: &Lanes) {
        let z = lanes.z();
        for (d, group) in by_depth(lanes, &self.depth, 0) {
            while self.levels.len() <= d {
                self.levels.push(Level {
                    values: None,
                    unset: vec![false; z],
                });
                self.saved_at.push(0);
            }
            let level = &mut self.levels[d];
            for l in group.iter() {
                level.unset[l] = current.is_none();
            }
            if let Some(slot) = current {
                match &mut level.values {
                    // No lane needs this level's values: share the slot.
                    Some(values) if self.saved_at[d] > 0 => {
                        Slot::merge_lanes(values, slot.clone(), &group)
                    }
                    values => *values = Some(slot.clone()),
                }
            }
        }
        for l in lanes.iter() {
            self.saved_at[self.depth[l] as usize] += 1;
            self.depth[l] += 1;
        }
    }

    /// Take lane `l`'s saved value off the top of its stack.
    fn drop_top(&mut self, l: usize) {
        if self.depth[l] > 0 {
            self.depth[l] -= 1;
            self.saved_at[self.depth[l] as usize] -= 1;
        }
    }

    /// Forget everything lane `l` saved.
    fn clear_lane(&mut self, l: usize) {
        while self.depth[l] > 0 {
            self.drop_top(l);
        }
    }

    /// Keep only lanes `keep` (ascending), renumbered `0..keep.len()`
    /// ([`compact`]).
    fn keep_lanes(&mut self, keep: &[usize]) {
        for level in &mut self.levels {
            if let Some(values) = &mut level.values {
                *values = Arc::new(values.gather(keep));
            }
            level.unset = keep.iter().map(|&l| level.unset[l]).collect();
        }
        self.depth = keep.iter().map(|&l| self.depth[l]).collect();
        self.saved_at = vec![0; self.levels.len()];
        for &d in &self.depth {
            for saved in &mut self.saved_at[..d as usize] {
                *saved += 1;
            }
        }
    }
}

/// `lanes` grouped by `depth[l] - below` (lanes whose depth is not above
/// `below` are left out).
fn by_depth(lanes: &Lanes, depth: &[u32], below: u32) -> Vec<(usize, Lanes)> {
    // One pass for the range of depths (and whether any lane is below
    // it), one more only when they differ.
    let (mut lo, mut hi, mut under) = (u32::MAX, 0, false);
    for l in lanes.iter() {
        let d = depth[l];
        if d < below {
            under = true;
        } else {
            lo = lo.min(d);
            hi = hi.max(d);
        }
    }
    if lo > hi {
        return Vec::new();
    }
    if lo == hi && !under {
        return vec![((lo - below) as usize, lanes.clone())];
    }
    // Depths are small (the recursion depth): one bucket per depth in
    // range, in increasing depth, each in increasing lane order.
    let mut buckets = vec![Vec::new(); (hi - lo + 1) as usize];
    for l in lanes.iter().filter(|&l| depth[l] >= below) {
        buckets[(depth[l] - lo) as usize].push(l);
    }
    buckets
        .into_iter()
        .enumerate()
        .filter(|(_, ls)| !ls.is_empty())
        .map(|(i, ls)| {
            (
                (lo + i as u32 - below) as usize,
                // Each bucket is ascending: filled in `lanes`' order.
                Lanes::from_ascending(lanes.z(), ls),
            )
        })
        .collect()
}

/// Set variable `var` of `lanes` to the top of its stack (popped unless
/// `keep`); a lane whose stack is empty fails (a lowering bug).
fn restore(
    st: &mut State,
    p: &Program,
    var: VarId,
    stack: Option<&mut VarStack>,
    lanes: &Lanes,
    keep: bool,
) {
    let empty: Vec<usize> = match &stack {
        None => lanes.indices().to_vec(),
        Some(stack) => lanes.iter().filter(|&l| stack.depth[l] == 0).collect(),
    };
    if !empty.is_empty() {
        let err = RuntimeError::fatal(format!(
            "the stack of `{}` is empty (PC lowering bug)",
            p.var_name(var)
        ));
        block::fail(st, &Lanes::from_indices(st.z, empty), &err);
    }
    let Some(stack) = stack else { return };
    let groups = by_depth(lanes, &stack.depth, 1);
    let one_level = groups.len() == 1;
    for (d, group) in groups {
        let level = &stack.levels[d];
        // A saved "unset" leaves the lane's storage as it is.
        let restored = group.retain(|l| !level.unset[l]);
        let Some(values) = &level.values else {
            continue;
        };
        if restored.is_empty() {
            continue;
        }
        // All lanes restore from this level and no other lane reads the
        // variable: it becomes the level's slot, nothing is copied.
        if one_level && restored.len() == group.len() && !st.is_read_elsewhere(var) {
            st.vars[var.0 as usize] = Some(values.clone());
            continue;
        }
        match &mut st.vars[var.0 as usize] {
            // A masked update: the variable is not cloned whole first when
            // someone else holds it too.
            Some(slot) => Slot::merge_lanes(slot, values.clone(), &restored),
            empty => *empty = Some(values.clone()),
        }
    }
    if !keep {
        for l in lanes.iter() {
            stack.drop_top(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `by_depth` against the plain definition: each lane of `lanes` at
    /// depth ≥ `below` in the group `depth - below`, groups by increasing
    /// depth, lanes ascending.
    #[test]
    fn lanes_grouped_by_depth_as_defined() {
        let naive = |lanes: &Lanes, depth: &[u32], below: u32| {
            let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
            let mut ds: Vec<u32> = lanes
                .iter()
                .map(|l| depth[l])
                .filter(|&d| d >= below)
                .collect();
            ds.sort_unstable();
            ds.dedup();
            for d in ds {
                let ls = lanes.iter().filter(|&l| depth[l] == d).collect();
                groups.push(((d - below) as usize, ls));
            }
            groups
        };
        let z = 40;
        // A small deterministic generator: depths 0..5, subsets of lanes.
        let mut x: u64 = 12345;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for case in 0..500 {
            let spread = 1 + next(5);
            let depth: Vec<u32> = (0..z).map(|_| next(spread) as u32).collect();
            let lanes = match case % 3 {
                0 => Lanes::all(z),
                1 => Lanes::none(z),
                _ => Lanes::from_indices(z, (0..z).filter(|_| next(2) == 0).collect()),
            };
            for below in 0..3 {
                let got: Vec<(usize, Vec<usize>)> = by_depth(&lanes, &depth, below)
                    .into_iter()
                    .map(|(d, ls)| (d, ls.indices().to_vec()))
                    .collect();
                assert_eq!(
                    got,
                    naive(&lanes, &depth, below),
                    "case {case}, below {below}"
                );
            }
        }
    }
}
