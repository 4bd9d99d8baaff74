//! Identity arguments (beyond the five passes of §3.2): a recursive call
//! that passes a parameter on unchanged (`Arg { param: v, value: v }`,
//! NUTS's step size, metric, energy and, at the first sub-tree, the whole
//! starting point in `build_tree_rng`) writes nothing, yet every executor
//! copied the value onto itself. The op goes. Runs after pass (a), which
//! reads these ops to see that such a parameter needs no save.
//!
//! # Invariants (of the output)
//! - No `Arg` writes a parameter with its own value; every other op is
//!   kept, in order. Values are those of the input: the parameter already
//!   holds the value the op would write.

use super::{Op, Program};
use crate::mir::ExprKind;

/// Remove every identity argument; returns how many went.
pub fn run(p: &mut Program) -> usize {
    let mut removed = 0;
    for block in &mut p.blocks {
        let before = block.ops.len();
        block.ops.retain(|op| !is_identity(op));
        removed += before - block.ops.len();
    }
    if removed > 0 {
        p.sharing = None;
    }
    removed
}

/// `Arg { param: v, value: v }`: an argument that is the parameter itself
/// (also what pass (a) treats as passing the parameter on unchanged).
pub(super) fn is_identity(op: &Op) -> bool {
    matches!(op, Op::Arg { param, value } if matches!(value.kind, ExprKind::Var(v) if v == *param))
}
