//! Result forwarding (beyond the five passes of §3.2): the lowering binds
//! a call's value to a temporary in the return block (`Let x = f$result`)
//! and SRA then splits the declared local from it component by component
//! (`a.1 = x.1; a.2 = x.2; ...`), so every return of a tuple copied the
//! whole tuple twice. Runs after pass (a), which drops the naive
//! lowering's saves of `x`. When every read of `x` in the program is in that
//! block, after the `Let` and before anything writes `f$result` (an op
//! that both reads `x` and writes `f$result` counts as after), the
//! reads take `f$result` itself and the `Let` goes: one copy fewer per
//! return (per recursive call of NUTS's `build_tree_rng`, a tuple of 87
//! numbers for ten parameters).
//!
//! # Invariants (of the output)
//! - Values and effects are those of the input: each rewritten read sees
//!   the value the `Let` copied, because nothing writes `f$result` (nor
//!   `x`) between the `Let` and the read.
//! - `x` no longer occurs in the program (its storage class and frame
//!   entries stay; later passes find it dead and never save it).

use super::{Op, Program, effects};
use crate::mir::{Expr, ExprKind, StmtKind, VarId, visit};
use std::collections::{HashMap, HashSet};

/// Forward every qualifying call result (see the module docs); returns how
/// many `Let`s went.
pub fn run(p: &mut Program) -> usize {
    let results: HashSet<VarId> = p.functions.iter().filter_map(|f| f.result).collect();
    let blocks_of = blocks_mentioning(p);
    let mut forwarded = 0;
    for b in 0..p.blocks.len() {
        let mut i = 0;
        while i < p.blocks[b].ops.len() {
            match forwardable(p, b, i, &results, &blocks_of) {
                Some((x, r)) => {
                    let ops = &mut p.blocks[b].ops;
                    ops.remove(i);
                    for op in &mut ops[i..] {
                        for_each_op_expr(op, &mut |e| {
                            if let ExprKind::Var(v) = &mut e.kind
                                && *v == x
                            {
                                *v = r;
                            }
                        });
                    }
                    forwarded += 1;
                }
                None => i += 1,
            }
        }
    }
    if forwarded > 0 {
        p.sharing = None;
    }
    forwarded
}

/// `(x, r)` when op `i` of block `b` is `Let x = r`, `r` a function's
/// result variable of `x`'s type, and every other occurrence of `x` is a
/// read in a later op of the block that comes before any write of `r`
/// or `x` and writes neither itself.
fn forwardable(
    p: &Program,
    b: usize,
    i: usize,
    results: &HashSet<VarId>,
    blocks_of: &HashMap<VarId, HashSet<usize>>,
) -> Option<(VarId, VarId)> {
    let block = &p.blocks[b];
    let Op::Stmt(s) = &block.ops[i] else {
        return None;
    };
    let StmtKind::Let { var: x, value } = &s.kind else {
        return None;
    };
    let ExprKind::Var(r) = value.kind else {
        return None;
    };
    let (x, vars) = (*x, &p.mir.vars);
    if !results.contains(&r) || r == x || vars[x.0 as usize].ty != vars[r.0 as usize].ty {
        return None;
    }
    if blocks_of.get(&x).is_some_and(|bs| bs.len() > 1) {
        return None;
    }
    let mentions = |e: &effects::Effects, v: VarId| e.reads.contains(&v) || e.writes.contains(&v);
    if block.ops[..i]
        .iter()
        .any(|op| mentions(&effects::of_op(op), x))
        || mentions(&effects::of_terminator(&block.term), x)
    {
        return None;
    }
    // An op that reads `x` and writes `r` is refused too: a backend may
    // write a tuple's components in place one by one (`r = (x.2, x.1)`).
    let mut result_written = false;
    for op in &block.ops[i + 1..] {
        let e = effects::of_op(op);
        result_written |= e.writes.contains(&r);
        if e.writes.contains(&x) || (result_written && e.reads.contains(&x)) {
            return None;
        }
    }
    Some((x, r))
}

/// The blocks each variable occurs in (ops and terminators).
fn blocks_mentioning(p: &Program) -> HashMap<VarId, HashSet<usize>> {
    let mut map: HashMap<VarId, HashSet<usize>> = HashMap::new();
    for (b, block) in p.blocks.iter().enumerate() {
        let all = block
            .ops
            .iter()
            .map(effects::of_op)
            .chain([effects::of_terminator(&block.term)]);
        for e in all {
            for v in e.reads.iter().chain(&e.writes) {
                map.entry(*v).or_default().insert(b);
            }
        }
    }
    map
}

/// Every expression (and subexpression) of an op.
fn for_each_op_expr(op: &mut Op, f: &mut dyn FnMut(&mut Expr)) {
    match op {
        Op::Stmt(s) => visit::for_each_expr(std::slice::from_mut(s), f),
        Op::Arg { value, .. } | Op::SetResult { value, .. } => visit::expr(value, f),
        Op::Push(_) | Op::Pop(_) | Op::Peek(_) => {}
    }
}
