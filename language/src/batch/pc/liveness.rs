//! Liveness of variables over the merged graph of a PC program: which
//! variables may be read, before being overwritten, after each point.
//!
//! Two views of a call ([`CallEdges`]):
//! - [`CallEdges::Interprocedural`]: a `PushJump` continues at the callee's
//!   entry and a `Return` at every return block of a call to its function
//!   (the supergraph; sound for any question about storage).
//! - [`CallEdges::CallerFrame`]: a call is one step from the call block to
//!   its return block that leaves the caller's variables alone — the
//!   caller-saves contract. Argument writes (`Arg`) and the `Push`/`Pop`/
//!   `Peek` ops are invisible, so the answer is the original program's
//!   liveness of the caller's frame: "is `v` needed after this call?".

use super::effects::{self, Effects};
use super::{BlockId, Op, Program, Terminator};
use crate::mir::VarId;

/// A set of variables as a bit set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarSet(Vec<u64>);

impl VarSet {
    pub fn new(num_vars: usize) -> VarSet {
        VarSet(vec![0; num_vars.div_ceil(64)])
    }
    pub fn contains(&self, v: VarId) -> bool {
        let i = v.0 as usize;
        self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
    pub fn insert(&mut self, v: VarId) {
        let i = v.0 as usize;
        self.0[i / 64] |= 1 << (i % 64);
    }
    pub fn remove(&mut self, v: VarId) {
        let i = v.0 as usize;
        self.0[i / 64] &= !(1 << (i % 64));
    }
    /// `self |= other`; whether `self` changed.
    pub fn union_with(&mut self, other: &VarSet) -> bool {
        let mut changed = false;
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            let n = *a | b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }
    pub fn iter(&self) -> impl Iterator<Item = VarId> + '_ {
        (0..self.0.len() * 64)
            .filter(|&i| self.0[i / 64] >> (i % 64) & 1 == 1)
            .map(|i| VarId(i as u32))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallEdges {
    Interprocedural,
    CallerFrame,
}

/// Live variables at the start and end of every block.
#[derive(Clone, Debug)]
pub struct Liveness {
    pub edges: CallEdges,
    pub live_in: Vec<VarSet>,
    pub live_out: Vec<VarSet>,
}

/// The effects of `op` as seen by the `edges` view.
pub fn op_effects(op: &Op, edges: CallEdges) -> Effects {
    match (edges, op) {
        (CallEdges::CallerFrame, Op::Push(_) | Op::Pop(_) | Op::Peek(_)) => Effects::default(),
        (CallEdges::CallerFrame, Op::Arg { value, .. }) => effects::of_expr(value),
        _ => effects::of_op(op),
    }
}

/// Successors of block `b` in the `edges` view.
pub fn successors(p: &Program, b: BlockId, edges: CallEdges) -> Vec<BlockId> {
    let block = p.block(b);
    match (&block.term, edges) {
        (Terminator::Jump(t), _) => vec![*t],
        (
            Terminator::Branch {
                then, otherwise, ..
            },
            _,
        ) => vec![*then, *otherwise],
        (Terminator::PushJump { target, .. }, CallEdges::Interprocedural) => vec![*target],
        (Terminator::PushJump { ret, .. }, CallEdges::CallerFrame) => vec![*ret],
        (Terminator::Return, CallEdges::CallerFrame) => vec![],
        (Terminator::Return, CallEdges::Interprocedural) => p
            .blocks
            .iter()
            .filter_map(|c| match c.term {
                Terminator::PushJump { callee, ret, .. } if callee == block.function => Some(ret),
                _ => None,
            })
            .collect(),
    }
}

/// Live variables before op `i` of block `b` given the live set after it.
fn step_back(live: &mut VarSet, e: &Effects) {
    for v in &e.kills {
        live.remove(*v);
    }
    for v in &e.reads {
        live.insert(*v);
    }
}

/// Solve liveness for the whole program (backward fixed point).
pub fn analyse(p: &Program, edges: CallEdges) -> Liveness {
    let n = p.blocks.len();
    let nv = p.mir.vars.len();
    let succ: Vec<Vec<BlockId>> = (0..n)
        .map(|b| successors(p, BlockId(b as u32), edges))
        .collect();
    // Per block: effects of the ops in order, then the terminator's reads.
    let effects: Vec<Vec<Effects>> = p
        .blocks
        .iter()
        .map(|b| {
            b.ops
                .iter()
                .map(|op| op_effects(op, edges))
                .chain([effects::of_terminator(&b.term)])
                .collect()
        })
        .collect();
    let mut live_in = vec![VarSet::new(nv); n];
    let mut live_out = vec![VarSet::new(nv); n];
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..n).rev() {
            let mut out = VarSet::new(nv);
            for s in &succ[b] {
                out.union_with(&live_in[s.0 as usize]);
            }
            let mut live = out.clone();
            for e in effects[b].iter().rev() {
                step_back(&mut live, e);
            }
            live_out[b] = out;
            if live != live_in[b] {
                live_in[b] = live;
                changed = true;
            }
        }
    }
    Liveness {
        edges,
        live_in,
        live_out,
    }
}

impl Liveness {
    /// Live variables after each op of block `b` (`result[i]` is after op
    /// `i`; the last entry is before the terminator).
    pub fn after_ops(&self, p: &Program, b: BlockId) -> Vec<VarSet> {
        let block = p.block(b);
        let mut live = self.live_out[b.0 as usize].clone();
        step_back(&mut live, &effects::of_terminator(&block.term));
        let mut after = vec![live.clone(); block.ops.len()];
        for i in (0..block.ops.len()).rev() {
            after[i] = live.clone();
            step_back(&mut live, &op_effects(&block.ops[i], self.edges));
        }
        after
    }
}
