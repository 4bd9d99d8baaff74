//! Jump threading (beyond the five passes of §3.2): a block with no ops
//! that only jumps on (`b: jump t`, left where the CFG lowering rejoins
//! an `if` or continues after a branch, or emptied by the passes before)
//! costs every lane that passes through it one executor step — one block
//! dispatch of a compiled program, one scheduling round of a batched one.
//! NUTS's `build_tree_rng` passed three of them per sub-tree merge. Every
//! jump, branch target and return block leading to such a block goes
//! straight to the end of its chain of empty jumps instead.
//!
//! # Invariants (of the output)
//! - Blocks keep their ids and functions (each function's range stays
//!   contiguous, its entry first); an empty jump block that was a jump or
//!   return target is unreachable afterwards unless it is its function's
//!   entry (call targets are never rewritten).
//! - Every run takes the same path through the non-empty blocks with the
//!   same values: only blocks without ops are skipped. A chain of empty
//!   blocks that loops back on itself (`while (1) {}`) is left alone.

use super::{BlockId, Program, Terminator};

/// Thread every jump, branch and return address over empty jump blocks
/// (see the module docs); returns how many targets changed.
pub fn run(p: &mut Program) -> usize {
    let end: Vec<BlockId> = (0..p.blocks.len())
        .map(|b| chain_end(p, BlockId(b as u32)))
        .collect();
    let mut changed = 0;
    let mut retarget = |t: &mut BlockId| {
        let e = end[t.0 as usize];
        if e != *t {
            *t = e;
            changed += 1;
        }
    };
    for block in &mut p.blocks {
        match &mut block.term {
            Terminator::Jump(t) => retarget(t),
            Terminator::Branch {
                then, otherwise, ..
            } => {
                retarget(then);
                retarget(otherwise);
            }
            Terminator::PushJump { ret, .. } => retarget(ret),
            Terminator::Return => {}
        }
    }
    if changed > 0 {
        p.sharing = None;
    }
    changed
}

/// Where a run entering `b` reaches its first block with ops or a
/// terminator other than a jump (`b` itself when it is not an empty jump,
/// or when its chain loops).
fn chain_end(p: &Program, b: BlockId) -> BlockId {
    let mut at = b;
    let mut seen = vec![b];
    loop {
        let block = p.block(at);
        let Terminator::Jump(next) = block.term else {
            return at;
        };
        if !block.ops.is_empty() {
            return at;
        }
        if seen.contains(&next) {
            return b;
        }
        seen.push(next);
        at = next;
    }
}
