//! Single-use temporaries inlined into the statement that reads them:
//! `let t = e; x_adj += t .* y;` becomes `x_adj += e .* y;` — one
//! statement (one op of the batching IRs) instead of two, and a value the
//! executors may update in place instead of one held by a variable.
//!
//! # Invariants
//! - `t` is written only by its `let` and read exactly once, by the very
//!   next statement of the same list, in that statement's own expressions
//!   (not a nested statement's, not a field). That statement is a plain
//!   one (`let`, a declaration, `=`, `+=`, `target +=`) that evaluates all
//!   its expressions before writing anything, so `e` sees the same values.
//! - `e` has no effect (no pop, call or random draw), so evaluating it a
//!   little later changes nothing else; and in the forward sweep it cannot
//!   fail ([`cannot_fail`]), so no failure moves. In the reverse sweep
//!   nothing fails where the forward sweep succeeded (see `dce`).

use super::analysis::{cannot_fail, has_effect};
use crate::mir::visit::{
    bodies_mut, deep_exprs, field_reads, own_exprs_mut, read_counts, reads_var, rewrite, walk,
    write_counts,
};
use crate::mir::{ExprKind, Program, Stmt, StmtKind, VarId};

/// Inline every qualifying temporary of `body`, whose top-level
/// statements from `reverse_start` on are the reverse sweep. Returns
/// whether anything changed.
pub(crate) fn run(program: &Program, body: &mut Vec<Stmt>, reverse_start: usize) -> bool {
    let n = program.vars.len();
    let reads = read_counts(body, n);
    let writes = write_counts(body, n);
    let mut changed = false;
    let mut i = 0;
    let mut start = reverse_start;
    while i < body.len() {
        let reverse = i >= start;
        for b in bodies_mut(&mut body[i]) {
            list(b, &reads, &writes, reverse, &mut changed);
        }
        if try_inline(body, i, &reads, &writes, reverse) {
            changed = true;
            if i < start {
                start -= 1;
            }
            continue;
        }
        i += 1;
    }
    changed
}

fn list(stmts: &mut Vec<Stmt>, reads: &[u32], writes: &[u32], reverse: bool, changed: &mut bool) {
    let mut i = 0;
    while i < stmts.len() {
        for b in bodies_mut(&mut stmts[i]) {
            list(b, reads, writes, reverse, changed);
        }
        if try_inline(stmts, i, reads, writes, reverse) {
            *changed = true;
            continue;
        }
        i += 1;
    }
}

/// Inline `stmts[i]` into `stmts[i + 1]` if it qualifies; it is then
/// removed.
fn try_inline(
    stmts: &mut Vec<Stmt>,
    i: usize,
    reads: &[u32],
    writes: &[u32],
    reverse: bool,
) -> bool {
    let StmtKind::Let { var: t, value } = &stmts[i].kind else {
        return false;
    };
    let t = *t;
    let ti = t.0 as usize;
    if writes[ti] != 1 || reads[ti] != 1 || has_effect(value) || reads_var(value, t) {
        return false;
    }
    if !reverse && !cannot_fail(value) {
        return false;
    }
    let Some(next) = stmts.get(i + 1) else {
        return false;
    };
    if !matches!(
        next.kind,
        StmtKind::Let { .. }
            | StmtKind::Decl { .. }
            | StmtKind::Assign { .. }
            | StmtKind::AddAssign { .. }
            | StmtKind::TargetAdd(_)
    ) || !reads_in_own_exprs(next, t)
    {
        return false;
    }
    let value = value.clone();
    let mut done = false;
    own_exprs_mut(&mut stmts[i + 1], &mut |e| {
        rewrite(e, &mut |x| {
            if !done && matches!(x.kind, ExprKind::Var(v) if v == t) {
                *x = value.clone();
                done = true;
            }
        })
    });
    debug_assert!(done, "the read was found");
    stmts.remove(i);
    true
}

/// `s` reads `v` in its own expressions (not in a field).
fn reads_in_own_exprs(s: &Stmt, v: VarId) -> bool {
    let mut in_fields = false;
    field_reads(s, &mut |w| in_fields |= w == v);
    let mut found = false;
    deep_exprs(s, &mut |e| {
        walk(e, &mut |x| {
            found |= matches!(x.kind, ExprKind::Var(w) if w == v)
        })
    });
    found && !in_fields
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn a_single_use_temporary_moves_into_its_reader() {
        let mut t = TestProgram::new();
        let (x, a, b, c) = (t.param("x"), t.real("a"), t.real("b"), t.real("c"));
        let body = vec![
            t.read_param(x),
            // Forward: log may not fail (NaN), so it moves.
            t.let_(a, t.log(t.var(x))),
            t.target_add(t.var(a)),
            t.let_(t.target_adj, t.lit(1.0)),
            t.let_(b, t.mul(t.var(x), t.lit(2.0))),
            t.let_(c, t.add(t.var(b), t.var(x))),
            // Read twice: stays.
            t.target_add(t.add(t.var(c), t.var(c))),
            t.param_adjoint(x, c),
        ];
        let after = t.run(body, |g| {
            let n = g.program.clone();
            super::run(&n, &mut g.body, 3);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "target += log(x);",
                "let target_adj = 1.0;",
                "let c = add(multiply(x, 2.0), x);",
                "target += add(c, c);",
                "param_adjoint(0, x, c, target_adj) -> ();",
            ]
        );
    }

    /// The logistic functions give ±inf or NaN, never an error: their
    /// forward temporaries move (`sum(log_inv_logit(η))`, evaluated
    /// without a held N-element temporary).
    #[test]
    fn forward_logistic_temporaries_move() {
        use crate::mir::Prim;
        let mut t = TestProgram::new();
        let (x, a, b) = (t.param("x"), t.real("a"), t.real("b"));
        let body = vec![
            t.read_param(x),
            t.let_(a, t.unary(Prim::LogInvLogit, t.var(x))),
            t.target_add(t.var(a)),
            t.let_(b, t.unary(Prim::Log1mInvLogit, t.var(x))),
            t.target_add(t.var(b)),
            t.let_(t.target_adj, t.lit(1.0)),
            t.param_adjoint(x, t.target_adj),
        ];
        let after = t.run(body, |g| {
            let n = g.program.clone();
            super::run(&n, &mut g.body, 5);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "target += log_inv_logit(x);",
                "target += log1m_inv_logit(x);",
                "let target_adj = 1.0;",
                "param_adjoint(0, x, target_adj, target_adj) -> ();",
            ]
        );
    }
}
