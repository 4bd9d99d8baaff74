//! Program-counter autobatching (Radul et al. 2020, Alg. 2) over the CFG
//! IR: the blocks of all functions numbered in one sequence, a program
//! counter and a return-address stack per lane, and per-variable per-lane
//! stacks saving the frames of recursive functions. Lanes at different
//! depths of a recursion run a block together; there is no host recursion.
//!
//! Only functions on a call cycle save their frame: a lane is never inside
//! a non-recursive function twice, and a masked write never touches the
//! lanes that did not make the call, so per-lane variable storage suffices
//! (Radul et al. §3.2: variables not live across a recursive call get no
//! stack).

use super::block::{self, Returned};
use super::schedule::WaitQueue;
use super::{ExecConfig, ExecError, Result};
use crate::eval::eval;
use crate::lanes::{Lanes, Slot, State};
use language::batch::cfg::{FunctionKind, Program, Terminator};
use language::interp::RuntimeError;
use language::mir::{FunId, VarId};
use language::value::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The merged numbering of all functions' blocks.
struct Layout {
    /// First point of each function.
    offsets: Vec<usize>,
    /// The function and block of each point.
    points: Vec<(FunId, usize)>,
    /// Functions on a call cycle.
    recursive: Vec<bool>,
}

impl Layout {
    fn new(p: &Program) -> Layout {
        let mut offsets = Vec::with_capacity(p.functions.len());
        let mut points = Vec::new();
        for (f, fun) in p.functions.iter().enumerate() {
            offsets.push(points.len());
            points.extend((0..fun.blocks.len()).map(|b| (FunId(f as u32), b)));
        }
        let n = p.functions.len();
        let callees: Vec<Vec<usize>> = p
            .functions
            .iter()
            .map(|fun| {
                fun.blocks
                    .iter()
                    .filter_map(|b| match &b.term {
                        Terminator::Call { fun, .. } => Some(fun.0 as usize),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let recursive = (0..n)
            .map(|f| {
                let mut seen = vec![false; n];
                let mut work = callees[f].clone();
                while let Some(g) = work.pop() {
                    if g == f {
                        return true;
                    }
                    if !std::mem::replace(&mut seen[g], true) {
                        work.extend(&callees[g]);
                    }
                }
                false
            })
            .collect();
        Layout {
            offsets,
            points,
            recursive,
        }
    }

    fn point(&self, f: FunId, b: usize) -> usize {
        self.offsets[f.0 as usize] + b
    }
}

/// Where a lane goes when the function it is in returns.
#[derive(Clone, Copy)]
struct ReturnTo {
    point: usize,
    ret: Option<VarId>,
}

pub(super) fn run(
    p: &Program,
    f: FunId,
    st: &mut State,
    lanes: &Lanes,
    config: &ExecConfig,
) -> Result<Option<Slot>> {
    let layout = Layout::new(p);
    let base_depth = super::base_depth(p, f);
    let z = st.z;
    let mut calls: Vec<Vec<ReturnTo>> = vec![Vec::new(); z];
    // saved[var][lane]: the frames of recursive functions set aside.
    let mut saved: BTreeMap<VarId, Vec<Vec<Option<Value>>>> = BTreeMap::new();
    let mut queue = WaitQueue::default();
    queue.add(layout.point(f, 0), lanes.iter());
    let mut returned = Returned::default();
    while let Some((point, waiting)) = queue.take(&*config.choice, z) {
        let (g, b) = layout.points[point];
        let fun = p.function(g);
        if fun.kind == FunctionKind::External {
            let msg = format!("external function `{}` has no host here", fun.name);
            block::fail(st, &waiting, &RuntimeError::fatal(msg));
            continue;
        }
        let bl = &fun.blocks[b];
        block::run_ops(&bl.ops, st, &waiting, config)?;
        let active = st.running(&waiting);
        if active.is_empty() {
            continue;
        }
        match &bl.term {
            Terminator::Jump(t) => queue.add(layout.point(g, t.0 as usize), active.iter()),
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => {
                let (yes, no) = block::branch(cond, st, &active)?;
                queue.add(layout.point(g, then.0 as usize), yes.iter());
                queue.add(layout.point(g, otherwise.0 as usize), no.iter());
            }
            Terminator::Call {
                fun: h,
                args,
                ret,
                next,
            } => {
                let callee = p.function(*h);
                let args = block::eval_args(args, st, &active)?;
                let mut active = st.running(&active);
                if callee.kind == FunctionKind::User {
                    if args.len() != callee.params.len() {
                        return Err(ExecError::Setup(format!(
                            "`{}` takes {} arguments, given {}",
                            callee.name,
                            callee.params.len(),
                            args.len()
                        )));
                    }
                    let too_deep = super::too_deep(&callee.name, config.max_depth);
                    for l in active.iter() {
                        if base_depth + calls[l].len() >= config.max_depth {
                            st.fail(l, too_deep.clone());
                        }
                    }
                    active = st.running(&active);
                    if layout.recursive[h.0 as usize] {
                        for v in callee.params.iter().chain(&callee.locals) {
                            let stacks = saved.entry(*v).or_insert_with(|| vec![Vec::new(); z]);
                            let slot = &st.vars[v.0 as usize];
                            for l in active.iter() {
                                stacks[l].push(slot.as_ref().map(|s| s.lane_value(l)));
                            }
                        }
                    }
                    for (param, arg) in callee.params.iter().zip(args) {
                        block::set_masked(st, *param, arg, &active);
                    }
                }
                let back = ReturnTo {
                    point: layout.point(g, next.0 as usize),
                    ret: *ret,
                };
                for l in active.iter() {
                    calls[l].push(back);
                }
                queue.add(layout.point(*h, 0), active.iter());
            }
            Terminator::Return(e) => {
                let value = match e {
                    Some(e) => Some(eval(e, st, &active)?),
                    None => None,
                };
                let active = st.running(&active);
                let (done, back) = active.split(|l| calls[l].is_empty());
                if let Some(v) = &value {
                    returned.add(v.clone(), &done);
                }
                if back.is_empty() {
                    continue;
                }
                if fun.kind == FunctionKind::User && layout.recursive[g.0 as usize] {
                    for v in fun.params.iter().chain(&fun.locals) {
                        restore(st, *v, saved.get_mut(v), &back);
                    }
                }
                let value = match (&fun.ret, value) {
                    (Some(ty), Some(v)) => Some(block::promote(v, ty, st, &back)),
                    (_, v) => v,
                };
                let mut targets: BTreeMap<(usize, Option<u32>), Vec<usize>> = BTreeMap::new();
                for l in back.iter() {
                    let to = calls[l].pop().expect("split on a non-empty stack");
                    targets
                        .entry((to.point, to.ret.map(|v| v.0)))
                        .or_default()
                        .push(l);
                }
                for ((to, ret), ls) in targets {
                    let lanes = Lanes::from_indices(z, ls);
                    if let Some(var) = ret {
                        match &value {
                            Some(v) => block::set_masked(st, VarId(var), v.clone(), &lanes),
                            None => {
                                let err =
                                    RuntimeError::fatal("a void function was used as a value");
                                block::fail(st, &lanes, &err);
                            }
                        }
                    }
                    queue.add(to, st.running(&lanes).iter());
                }
            }
        }
    }
    Ok(returned.value.map(Arc::unwrap_or_clone))
}

/// Pop variable `var`'s saved values of `lanes` back into its storage.
fn restore(
    st: &mut State,
    var: VarId,
    stacks: Option<&mut Vec<Vec<Option<Value>>>>,
    lanes: &Lanes,
) {
    let Some(stacks) = stacks else { return };
    let popped: Vec<(usize, Value)> = lanes
        .iter()
        .filter_map(|l| stacks[l].pop().flatten().map(|v| (l, v)))
        .collect();
    if popped.is_empty() {
        return;
    }
    let z = st.z;
    let slot = &mut st.vars[var.0 as usize];
    let mut values = match slot {
        Some(s) => s.to_lane_values(z),
        None => vec![popped[0].1.clone(); z],
    };
    for (l, v) in popped {
        values[l] = v;
    }
    *slot = Some(Arc::new(Slot::from_lane_values(values)));
}
