//! Batched vs shared values (pfor, Agarwal 2019 §4.3): a forward dataflow
//! fixed point marking every variable, op and branch condition `Shared`
//! (the same for every lane: computed from data, transformed data and
//! constants only) or `Batched` (one per lane).
//!
//! A value is batched when it depends on a parameter, a random draw,
//! `target()`, an AD stack that holds a batched value, a stacked variable,
//! or is written in a
//! *divergent* block: one that only some lanes of a batch may run, i.e.
//! control dependent on a batched branch (reachable from the branch before
//! its immediate post-dominator), or any block of a function called from
//! one. A variable assigned under a per-lane branch is batched even if its
//! value is data.
//!
//! When some branch is batched, lanes can also fall out of step (a lane
//! that left a loop early runs later blocks at other times), so a shared
//! variable must moreover hold one value for the whole run: it has a
//! single writing op that does not read the variable itself. Without
//! batched branches all lanes run the same blocks in the same order
//! (`lanes_in_step`).

use super::liveness::{CallEdges, successors};
use super::{BlockId, Op, Program, Storage, Terminator, effects};
use crate::mir::Origin;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    Shared,
    Batched,
}

#[derive(Clone, Debug)]
pub struct Sharing {
    /// Per variable.
    pub vars: Vec<Share>,
    /// Per block, per op: whether the op's value (every expression it
    /// evaluates) is the same for all lanes.
    pub ops: Vec<Vec<Share>>,
    /// Per block: the branch condition's sharing (`None`: not a branch).
    pub branches: Vec<Option<Share>>,
    /// Per block: only some lanes may run it.
    pub divergent: Vec<bool>,
    /// No batched branch: all lanes run the same blocks in the same order.
    pub lanes_in_step: bool,
}

impl Sharing {
    pub fn var(&self, v: crate::mir::VarId) -> Share {
        self.vars[v.0 as usize]
    }
}

pub fn analyse(p: &mut Program) {
    let nv = p.mir.vars.len();
    let nb = p.blocks.len();
    let effects: Vec<Vec<effects::Effects>> = p
        .blocks
        .iter()
        .map(|b| b.ops.iter().map(effects::of_op).collect())
        .collect();
    let mut batched = vec![false; nv];
    for (i, info) in p.mir.vars.iter().enumerate() {
        batched[i] =
            info.origin == Origin::Parameter || matches!(p.storage[i], Storage::Stack { .. });
    }
    let mut writes = vec![0usize; nv];
    let mut self_reads = vec![false; nv];
    for e in effects.iter().flatten() {
        for w in &e.writes {
            writes[w.0 as usize] += 1;
            self_reads[w.0 as usize] |= e.reads.contains(w);
        }
    }
    let post_dominators = PostDominators::new(p);
    let mut divergent = vec![false; nb];
    // AD stacks holding per-lane values (or pushed by only some lanes).
    let mut batched_stacks = vec![false; p.num_ad_stacks as usize];
    let value_batched = |e: &effects::Effects, batched: &[bool], stacks: &[bool]| {
        e.per_lane_source
            || e.reads.iter().any(|v| batched[v.0 as usize])
            || e.pops.iter().any(|s| stacks[s.0 as usize])
    };
    let op_batched = |e: &effects::Effects, op: &Op, batched: &[bool], stacks: &[bool], div| {
        div || matches!(op, Op::Push(_) | Op::Pop(_) | Op::Peek(_))
            || value_batched(e, batched, stacks)
    };
    let cond_batched = |b: usize, batched: &[bool], stacks: &[bool]| match &p.blocks[b].term {
        Terminator::Branch { cond, .. } => value_batched(&effects::of_expr(cond), batched, stacks),
        _ => false,
    };
    loop {
        let mut changed = false;
        for b in 0..nb {
            for (op, e) in p.blocks[b].ops.iter().zip(&effects[b]) {
                if op_batched(e, op, &batched, &batched_stacks, divergent[b]) {
                    for w in &e.writes {
                        changed |= !std::mem::replace(&mut batched[w.0 as usize], true);
                    }
                    if let Some(s) = e.pushes {
                        changed |= !std::mem::replace(&mut batched_stacks[s.0 as usize], true);
                    }
                }
            }
        }
        let batched_branches: Vec<usize> = (0..nb)
            .filter(|&b| cond_batched(b, &batched, &batched_stacks))
            .collect();
        if !batched_branches.is_empty() {
            // Lanes out of step: a stack shared by all lanes would be
            // pushed and popped at different times.
            for s in &mut batched_stacks {
                changed |= !std::mem::replace(s, true);
            }
            for v in 0..nv {
                if writes[v] > 1 || self_reads[v] {
                    changed |= !std::mem::replace(&mut batched[v], true);
                }
            }
        }
        for b in batched_branches {
            for r in post_dominators.region(p, BlockId(b as u32)) {
                changed |= !std::mem::replace(&mut divergent[r.0 as usize], true);
            }
        }
        changed |= spread_into_callees(p, &mut divergent);
        if !changed {
            break;
        }
    }
    let share = |b: bool| if b { Share::Batched } else { Share::Shared };
    let ops = (0..nb)
        .map(|b| {
            p.blocks[b]
                .ops
                .iter()
                .zip(&effects[b])
                .map(|(op, e)| share(op_batched(e, op, &batched, &batched_stacks, divergent[b])))
                .collect()
        })
        .collect();
    let branches: Vec<Option<Share>> = (0..nb)
        .map(|b| match p.blocks[b].term {
            Terminator::Branch { .. } => Some(share(cond_batched(b, &batched, &batched_stacks))),
            _ => None,
        })
        .collect();
    let lanes_in_step = !branches.contains(&Some(Share::Batched));
    p.sharing = Some(Sharing {
        vars: batched.into_iter().map(share).collect(),
        ops,
        branches,
        divergent,
        lanes_in_step,
    });
}

/// Every block of a function called from a divergent block is divergent.
fn spread_into_callees(p: &Program, divergent: &mut [bool]) -> bool {
    let mut changed = false;
    let mut again = true;
    while again {
        again = false;
        for b in 0..p.blocks.len() {
            if let (true, Terminator::PushJump { callee, .. }) = (divergent[b], &p.blocks[b].term) {
                let f = p.function(*callee);
                for c in f.first_block.0..f.first_block.0 + f.num_blocks {
                    if !std::mem::replace(&mut divergent[c as usize], true) {
                        again = true;
                        changed = true;
                    }
                }
            }
        }
    }
    changed
}

/// Post-dominator sets per block within each function (a call is one step
/// to its return block; `Return` goes to a virtual exit).
struct PostDominators {
    /// `sets[b]` over the function's local block indexes.
    sets: Vec<Vec<bool>>,
}

impl PostDominators {
    fn new(p: &Program) -> PostDominators {
        let mut sets = vec![Vec::new(); p.blocks.len()];
        for f in &p.functions {
            let first = f.first_block.0 as usize;
            let n = f.num_blocks as usize;
            let local = |b: BlockId| b.0 as usize - first;
            let succ: Vec<Vec<usize>> = (first..first + n)
                .map(|b| {
                    successors(p, BlockId(b as u32), CallEdges::CallerFrame)
                        .into_iter()
                        .map(local)
                        .collect()
                })
                .collect();
            // Local index n is the virtual exit.
            let mut pdom = vec![vec![true; n + 1]; n + 1];
            pdom[n] = vec![false; n + 1];
            pdom[n][n] = true;
            let mut changed = true;
            while changed {
                changed = false;
                for b in (0..n).rev() {
                    let exits = matches!(p.blocks[first + b].term, Terminator::Return);
                    let mut new = vec![true; n + 1];
                    let targets: Vec<usize> = if exits { vec![n] } else { succ[b].clone() };
                    for s in targets {
                        for (x, y) in new.iter_mut().zip(&pdom[s]) {
                            *x &= *y;
                        }
                    }
                    new[b] = true;
                    if new != pdom[b] {
                        pdom[b] = new;
                        changed = true;
                    }
                }
            }
            for b in 0..n {
                sets[first + b] = std::mem::take(&mut pdom[b]);
            }
        }
        PostDominators { sets }
    }

    /// Blocks control dependent on branch block `b`: reachable from its
    /// successors without passing a strict post-dominator of `b`.
    fn region(&self, p: &Program, b: BlockId) -> Vec<BlockId> {
        let f = p.function(p.block(b).function);
        let first = f.first_block.0 as usize;
        let stop = |c: BlockId| c != b && self.sets[b.0 as usize][c.0 as usize - first];
        let mut seen = vec![false; f.num_blocks as usize];
        let mut work: Vec<BlockId> = successors(p, b, CallEdges::CallerFrame);
        let mut region = Vec::new();
        while let Some(c) = work.pop() {
            if stop(c) || std::mem::replace(&mut seen[c.0 as usize - first], true) {
                continue;
            }
            region.push(c);
            work.extend(successors(p, c, CallEdges::CallerFrame));
        }
        region
    }
}
