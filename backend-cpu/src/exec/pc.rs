//! Program-counter autobatching (Radul et al. 2020, Alg. 2) over the PC IR
//! ([`language::batch::pc`]): one merged block graph of all functions, a
//! program-counter stack per lane, and per-variable per-lane stacks for the
//! variables the PC IR saves around recursive calls (`Push`/`Pop`/`Peek`).
//! Lanes at different depths of a recursion run a block together; there is
//! no host recursion. Every variable has one slot per lane (its register);
//! a stack holds only the saved values below the current one, so a read
//! never looks at a stack (cached tops for every stack variable).

use super::block::{self, StmtOps};
use super::host::BatchHost;
use super::schedule::WaitQueue;
use super::{ExecConfig, Result};
use crate::eval::eval;
use crate::lanes::{Lanes, Slot, State};
use language::batch::pc::lower::external_call;
use language::batch::pc::{BlockId, FunctionKind, Op, Program, Terminator};
use language::interp::RuntimeError;
use language::mir::{FunId, VarId};
use language::value::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Run function `f` of `p` on `lanes` until each returns (empty
/// program-counter stack) or fails. A function's returned value is left
/// in its result variable.
pub(super) fn run(
    p: &Program,
    f: FunId,
    st: &mut State,
    lanes: &Lanes,
    config: &ExecConfig,
    host: &mut dyn BatchHost,
) -> Result<()> {
    let z = st.z;
    let base_depth = usize::from(p.function(f).kind == FunctionKind::User);
    let mut calls: Vec<Vec<BlockId>> = vec![Vec::new(); z];
    // saved[var][lane]: values set aside by `Push` (None: was unset).
    let mut saved: HashMap<VarId, Vec<Vec<Option<Value>>>> = HashMap::new();
    let mut queue = WaitQueue::default();
    queue.add(p.function(f).first_block.0 as usize, lanes.iter());
    while let Some((b, waiting)) = queue.take(&*config.choice, z) {
        let bl = p.block(BlockId(b as u32));
        run_ops(&bl.ops, st, &waiting, config, p, &mut saved, host)?;
        let active = st.running(&waiting);
        if active.is_empty() {
            continue;
        }
        match &bl.term {
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
                    continue;
                }
                let too_deep = super::too_deep(&callee.name, config.max_depth);
                for l in active.iter() {
                    if base_depth + calls[l].len() >= config.max_depth {
                        st.fail(l, too_deep.clone());
                    } else {
                        calls[l].push(*ret);
                    }
                }
                queue.add(target.0 as usize, st.running(&active).iter());
            }
            Terminator::Return => {
                let mut targets: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
                for l in active.iter() {
                    if let Some(r) = calls[l].pop() {
                        targets.entry(r.0 as usize).or_default().push(l);
                    }
                }
                for (to, ls) in targets {
                    queue.add(to, ls);
                }
            }
        }
    }
    Ok(())
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
    saved: &mut HashMap<VarId, Vec<Vec<Option<Value>>>>,
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
            block::run_ops(stmts, st, &active, config)?;
            i += run_len;
            continue;
        }
        match &ops[i] {
            op @ Op::Stmt(_) => {
                let (f, args, ret) =
                    external_call(p, op).expect("other statements run in the runs above");
                let args = block::eval_args(args, st, &active)?;
                let active = st.running(&active);
                let name = &p.function(f).name;
                let value = super::host::serve(host, name, &args, ret.is_some(), st, &active);
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
                let stacks = saved.entry(*v).or_insert_with(|| vec![Vec::new(); z]);
                let slot = &st.vars[v.0 as usize];
                for l in active.iter() {
                    stacks[l].push(slot.as_ref().map(|s| s.lane_value(l)));
                }
            }
            Op::Pop(v) | Op::Peek(v) => {
                let keep = matches!(ops[i], Op::Peek(_));
                restore(st, p, *v, saved.get_mut(v), &active, keep);
            }
        }
        i += 1;
    }
    Ok(())
}

/// Set variable `var` of `lanes` to the top of its stack (popped unless
/// `keep`); a lane whose stack is empty fails (a lowering bug).
fn restore(
    st: &mut State,
    p: &Program,
    var: VarId,
    stacks: Option<&mut Vec<Vec<Option<Value>>>>,
    lanes: &Lanes,
    keep: bool,
) {
    let mut empty = Vec::new();
    let mut tops: Vec<(usize, Value)> = Vec::new();
    match stacks {
        None => empty.extend(lanes.iter()),
        Some(stacks) => {
            for l in lanes.iter() {
                let top = if keep {
                    stacks[l].last().cloned()
                } else {
                    stacks[l].pop()
                };
                match top {
                    None => empty.push(l),
                    // A saved "unset" leaves the lane's storage as it is.
                    Some(None) => {}
                    Some(Some(v)) => tops.push((l, v)),
                }
            }
        }
    }
    if !empty.is_empty() {
        let err = RuntimeError::fatal(format!(
            "the stack of `{}` is empty (PC lowering bug)",
            p.var_name(var)
        ));
        block::fail(st, &Lanes::from_indices(st.z, empty), &err);
    }
    if tops.is_empty() {
        return;
    }
    let z = st.z;
    let slot = &mut st.vars[var.0 as usize];
    let mut values = match slot {
        Some(s) => s.to_lane_values(z),
        None => vec![tops[0].1.clone(); z],
    };
    for (l, v) in tops {
        values[l] = v;
    }
    *slot = Some(Arc::new(Slot::from_lane_values(values)));
}
