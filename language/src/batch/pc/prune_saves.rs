//! Optimization (a), per-variable caller-saves: a call saves and restores
//! a variable only if the caller needs it after the call AND the callee
//! (with everything it calls) can write it — which, since every function
//! writes only its own frame, the callee's parameters and result, happens
//! only through recursion. A non-recursive program keeps no save at all.
//! Passing a parameter unchanged to a recursive call (`Arg { param: v,
//! value: v }`) writes nothing: a parameter that a recursion only passes
//! on (NUTS's step size, metric and initial energy in `build_tree`) is the
//! same at every depth and needs no save.

use super::liveness::{self, CallEdges, VarSet};
use super::{BlockId, Op, Program, Terminator, effects};

/// Per function: the variables it or anything it calls may write.
pub fn modified_vars(p: &Program) -> Vec<VarSet> {
    let nv = p.mir.vars.len();
    let mut sets = vec![VarSet::new(nv); p.functions.len()];
    for b in &p.blocks {
        let set = &mut sets[b.function.0 as usize];
        for op in &b.ops {
            if passed_on_unchanged(op) {
                continue;
            }
            for v in effects::of_op(op).writes {
                set.insert(v);
            }
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for b in &p.blocks {
            if let Terminator::PushJump { callee, .. } = b.term {
                let callee_set = sets[callee.0 as usize].clone();
                changed |= sets[b.function.0 as usize].union_with(&callee_set);
            }
        }
    }
    sets
}

/// An op that leaves its variable as the invocation had it: an argument
/// that is the parameter itself, or a restore of a value the invocation
/// saved. (By induction over the depth of a recursion: if these are the
/// only writes of a variable, every invocation sees the value its caller
/// had, and returns it unchanged.)
fn passed_on_unchanged(op: &Op) -> bool {
    matches!(op, Op::Pop(_) | Op::Peek(_)) || super::identity_args::is_identity(op)
}

pub fn run(p: &mut Program) {
    let live = liveness::analyse(p, CallEdges::CallerFrame);
    let modified = modified_vars(p);
    for b in 0..p.blocks.len() {
        let Terminator::PushJump { ret, callee, .. } = p.blocks[b].term else {
            continue;
        };
        let ret_ops = &p.block(ret).ops;
        let restores = ret_ops
            .iter()
            .take_while(|op| matches!(op, Op::Pop(_)))
            .count();
        let Some(last_pop) = restores.checked_sub(1) else {
            continue;
        };
        let after_call = live.after_ops(p, ret)[last_pop].clone();
        let keep = |v: &crate::mir::VarId| {
            after_call.contains(*v) && modified[callee.0 as usize].contains(*v)
        };
        let saved: Vec<_> = p.blocks[b]
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Push(v) => Some(*v),
                _ => None,
            })
            .collect();
        let dropped: Vec<_> = saved.into_iter().filter(|v| !keep(v)).collect();
        let drop = |op: &Op| matches!(op, Op::Push(v) if dropped.contains(v));
        p.blocks[b].ops.retain(|op| !drop(op));
        remove_restores(p, ret, last_pop, &dropped);
    }
    p.sharing = None;
}

/// Remove the `Pop`s of `vars` among the first `last_pop + 1` ops of `ret`.
fn remove_restores(p: &mut Program, ret: BlockId, last_pop: usize, vars: &[crate::mir::VarId]) {
    let ops = std::mem::take(&mut p.blocks[ret.0 as usize].ops);
    p.blocks[ret.0 as usize].ops = ops
        .into_iter()
        .enumerate()
        .filter(|(i, op)| !(*i <= last_pop && matches!(op, Op::Pop(v) if vars.contains(v))))
        .map(|(_, op)| op)
        .collect();
}
