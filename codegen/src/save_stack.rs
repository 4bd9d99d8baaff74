//! One save stack for all variables saved around calls, when the PC
//! program's saves nest as call frames.
//!
//! The PC IR gives every variable saved around a call its own stack
//! (Radul et al. §3.2: per-variable caller-saves stacks; the CPU executor
//! keeps them). Generated code paid for that per variable: NUTS's
//! `build_tree_rng` saves eleven variables around its second recursive
//! call, and each push and pop read, checked and wrote its own depth
//! counter (~660 instructions per sub-tree merge, an eighth of a leapfrog
//! step's cost on eight schools).
//!
//! When the saves nest as frames — a call site saves its variables just
//! before calling and its return block restores exactly those, in reverse
//! order, before anything else can save — one stack of doubles with one
//! depth counter holds the same values in the same order: a run of pushes
//! becomes one check, the copies and one depth write ([`super::emit`]
//! `push_vars` / `restore_vars`). [`saves_nest_as_frames`] decides it per
//! program; a program it refuses keeps per-variable stacks.

use std::collections::HashSet;

use language::batch::pc::{self, BlockId, Op, Terminator};
use language::mir::VarId;

/// Whether every save of `p` belongs to a call frame, so that one stack
/// of doubles can hold all of them:
/// - no `Peek` (a fused pop-push leaves a value saved across blocks);
/// - a block that saves ends in a call (`PushJump`), and restores nothing
///   after its first save;
/// - the return block of every call restores, before any save, exactly
///   the variables its call saved (each once) in reverse order;
/// - a block that restores is reached only by returns (not by a jump, a
///   branch or as a function's entry), so each restore meets the frame its
///   own call pushed — the callee, saving only around calls of its own and
///   restoring those on their returns, leaves the stack as it found it.
pub fn saves_nest_as_frames(p: &pc::Program) -> bool {
    let mut reached_otherwise: HashSet<BlockId> = HashSet::new();
    for f in &p.functions {
        reached_otherwise.insert(f.first_block);
    }
    for block in &p.blocks {
        match &block.term {
            Terminator::Jump(t) => {
                reached_otherwise.insert(*t);
            }
            Terminator::Branch {
                then, otherwise, ..
            } => {
                reached_otherwise.insert(*then);
                reached_otherwise.insert(*otherwise);
            }
            Terminator::PushJump { target, .. } => {
                reached_otherwise.insert(*target);
            }
            Terminator::Return => {}
        }
    }
    for (b, block) in p.blocks.iter().enumerate() {
        let Some((restores, saves)) = split_saves(&block.ops) else {
            return false;
        };
        if !restores.is_empty() && reached_otherwise.contains(&BlockId(b as u32)) {
            return false;
        }
        match &block.term {
            Terminator::PushJump { ret, .. } => {
                let distinct: HashSet<&VarId> = saves.iter().collect();
                if distinct.len() != saves.len() {
                    return false;
                }
                let Some((back, _)) = split_saves(&p.block(*ret).ops) else {
                    return false;
                };
                if !back.iter().eq(saves.iter().rev()) {
                    return false;
                }
            }
            _ if !saves.is_empty() => return false,
            _ => {}
        }
    }
    true
}

/// The variables a block restores then saves (`Pop`s, `Push`es in
/// order); `None` when it peeks or restores after a save.
fn split_saves(ops: &[Op]) -> Option<(Vec<VarId>, Vec<VarId>)> {
    let (mut restores, mut saves) = (Vec::new(), Vec::new());
    for op in ops {
        match op {
            Op::Peek(_) => return None,
            Op::Pop(_) if !saves.is_empty() => return None,
            Op::Pop(v) => restores.push(*v),
            Op::Push(v) => saves.push(*v),
            Op::Stmt(_) | Op::Arg { .. } | Op::SetResult { .. } => {}
        }
    }
    Some((restores, saves))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pc_of(source: &str) -> pc::Program {
        let (program, diagnostics) = language::compile_model(source, "frames");
        let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
        let gradient = language::ad::gradient(&program).unwrap();
        let cfg = language::batch::lower_gradient(&gradient).unwrap();
        pc::build(&cfg).unwrap()
    }

    const RECURSIVE: &str = "
        functions {
          real f(real x, int k) {
            if (k <= 0) return x;
            real a = 2 * x;
            real b = f(a, k - 1);
            return a * b + x;
          }
        }
        parameters { real y; }
        model { target += f(y, 3); }
    ";

    #[test]
    fn the_sampler_program_saves_in_frames() {
        // bat's sampler program (the `bat` crate compiles the same file).
        let source = include_str!("../../src/sampler/nuts.stan");
        let (program, diagnostics) = language::compile_with_externals(source, "nuts");
        let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
        let cfg = language::batch::lower(&program, &[], 0).unwrap();
        let p = pc::build(&cfg).unwrap();
        assert!(
            p.blocks
                .iter()
                .any(|b| b.ops.iter().any(|o| matches!(o, Op::Push(_))))
        );
        assert!(saves_nest_as_frames(&p));
    }

    #[test]
    fn a_recursive_user_function_saves_in_frames() {
        let p = pc_of(RECURSIVE);
        assert!(
            p.blocks
                .iter()
                .any(|b| b.ops.iter().any(|o| matches!(o, Op::Push(_))))
        );
        assert!(saves_nest_as_frames(&p));
    }

    /// The first call site of `p` (a block that saves before calling).
    fn saving_call(p: &pc::Program) -> usize {
        p.blocks
            .iter()
            .position(|b| {
                matches!(b.term, Terminator::PushJump { .. })
                    && b.ops.iter().any(|o| matches!(o, Op::Push(_)))
            })
            .unwrap()
    }

    #[test]
    fn saves_that_do_not_nest_are_refused() {
        let good = pc_of(RECURSIVE);
        let call = saving_call(&good);
        let Terminator::PushJump { ret, .. } = good.blocks[call].term else {
            unreachable!()
        };
        let ret = ret.0 as usize;

        // A restore in another order than the saves'.
        let mut p = good.clone();
        let pops: Vec<usize> = (0..p.blocks[ret].ops.len())
            .filter(|&i| matches!(p.blocks[ret].ops[i], Op::Pop(_)))
            .collect();
        if pops.len() >= 2 {
            p.blocks[ret].ops.swap(pops[0], pops[1]);
            assert!(!saves_nest_as_frames(&p), "restores out of order");
        }

        // A value left saved (a peek instead of a pop).
        let mut p = good.clone();
        let first_pop = p.blocks[ret]
            .ops
            .iter()
            .position(|o| matches!(o, Op::Pop(_)));
        let i = first_pop.unwrap();
        let Op::Pop(v) = p.blocks[ret].ops[i] else {
            unreachable!()
        };
        p.blocks[ret].ops[i] = Op::Peek(v);
        assert!(!saves_nest_as_frames(&p), "peek");

        // A save not followed by a call.
        let mut p = good.clone();
        let Op::Push(v) = *p.blocks[call]
            .ops
            .iter()
            .find(|o| matches!(o, Op::Push(_)))
            .unwrap()
        else {
            unreachable!()
        };
        let other = (0..p.blocks.len())
            .find(|&b| matches!(p.blocks[b].term, Terminator::Return))
            .unwrap();
        p.blocks[other].ops.push(Op::Push(v));
        assert!(!saves_nest_as_frames(&p), "save before a return");

        // A restoring block that a jump also reaches.
        let mut p = good.clone();
        p.blocks[other].term = Terminator::Jump(BlockId(ret as u32));
        assert!(
            !saves_nest_as_frames(&p),
            "restoring block reached by a jump"
        );
    }
}
