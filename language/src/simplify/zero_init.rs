//! Adjoints initialised by their first contribution: `let a = zeros_like(x);
//! ... a += e;` becomes `let a = e;` when nothing between mentions `a`.
//!
//! # Invariants
//! - Only within one statement list: the `+=` is the first statement
//!   after the `let` (in the same list) that mentions `a` at all, so no
//!   read or write of `a` is skipped, and no `break`, `continue` or
//!   `return` (in function bodies) lies between, so the `+=` runs exactly
//!   when the `let` did.
//! - `zeros(x) + e` equals `e` exactly (up to the sign of a zero: 0 + (−0)
//!   is +0) when `e` has `a`'s shape. The static types must be equal and
//!   made of reals (no ints, whose zeros would turn `e` into an int, no
//!   tuples, whose int components `+=` keeps). Equal static types mean
//!   equal shapes for accumulations into a whole adjoint: the AD adds a
//!   share of another shape only as a scalar broadcast or as the same
//!   elements in a container of another type (`ad` module docs; the
//!   interpreter checks it in debug builds).
//! - `e` must not read `a` (it would read the zeros).

use crate::mir::visit::{bodies_mut, has_jump, mentions, reads_var};
use crate::mir::{ExprKind, Program, Stmt, StmtKind};

/// Fold every zero initialisation into the first accumulation that
/// follows it. Returns whether anything changed.
pub(crate) fn run(program: &Program, body: &mut Vec<Stmt>) -> bool {
    let mut changed = false;
    fold_list(program, body, &mut changed);
    changed
}

fn fold_list(program: &Program, list: &mut Vec<Stmt>, changed: &mut bool) {
    for s in list.iter_mut() {
        for body in bodies_mut(s) {
            fold_list(program, body, changed);
        }
    }
    let mut i = 0;
    while i < list.len() {
        if let Some(j) = first_accumulation(program, list, i) {
            let StmtKind::AddAssign { rhs, .. } = &list[j].kind else {
                unreachable!("checked by first_accumulation")
            };
            let StmtKind::Let { var, .. } = list[i].kind else {
                unreachable!("checked by first_accumulation")
            };
            let value = rhs.clone();
            let span = list[j].span;
            list[j] = Stmt {
                kind: StmtKind::Let { var, value },
                span,
            };
            list.remove(i);
            *changed = true;
            continue;
        }
        i += 1;
    }
}

/// If `list[i]` is `let a = zeros_like(..)` whose next mention is a
/// foldable `a += e`, that statement's index.
fn first_accumulation(program: &Program, list: &[Stmt], i: usize) -> Option<usize> {
    let StmtKind::Let { var, value } = &list[i].kind else {
        return None;
    };
    if !matches!(value.kind, ExprKind::ZerosLike(_)) {
        return None;
    }
    let ty = &program.vars[var.0 as usize].ty;
    if !ty.is_real_typed() {
        return None;
    }
    let j = (i + 1..list.len()).find(|&j| mentions(&list[j], *var))?;
    // A jump in between would skip the new `let` but not the old one.
    if list[i + 1..j].iter().any(has_jump) {
        return None;
    }
    match &list[j].kind {
        StmtKind::AddAssign { lhs, rhs }
            if lhs.var == *var && lhs.path.is_empty() && rhs.ty == *ty && !reads_var(rhs, *var) =>
        {
            Some(j)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn zeros_then_first_contribution_becomes_a_let() {
        let mut t = TestProgram::new();
        let (x, v, a, b, r) = (
            t.param("x"),
            t.param_vector("v"),
            t.real("a"),
            t.vector("b"),
            t.real("r"),
        );
        let body = vec![
            t.let_(t.target_adj, t.lit(1.0)),
            t.let_(a, t.zeros(x)),
            t.let_(b, t.zeros(v)),
            t.let_(r, t.zeros(x)),
            t.add_assign(a, t.var(t.target_adj)),
            t.add_assign(a, t.var(t.target_adj)),
            // A scalar broadcast into a vector keeps the zeros.
            t.add_assign(b, t.var(t.target_adj)),
            // Read before accumulated: keeps the zeros.
            t.target_add(t.var(r)),
            t.add_assign(r, t.var(a)),
        ];
        let after = t.run(body, |g| {
            super::run(&g.program, &mut g.body);
        });
        assert_eq!(
            after,
            [
                "let target_adj = 1.0;",
                "let b = zeros_like(v);",
                "let r = zeros_like(x);",
                "let a = target_adj;",
                "a += target_adj;",
                "b += target_adj;",
                "target += r;",
                "r += a;",
            ]
        );
    }
}
