//! Dead-code elimination: statements that only compute a value nobody
//! reads are removed.
//!
//! # Invariants
//! - Kept, always: every statement with an effect — `target +=`,
//!   `jacobian +=`, pushes and every statement that pops, `read_param`,
//!   `param_adjoint` (it writes the gradient output), prints, rejects,
//!   fatal errors, constraint checks, void calls, declarations (they
//!   check sizes), `while` loops (they may not terminate), and any
//!   statement drawing random numbers or calling a user function that has
//!   effects (or, in the forward sweep, any user function: it may fail).
//! - A `let` goes only when no statement left updates its variable either
//!   (writes it other than by a `let`: an accumulation `a += e` that must
//!   stay, because it may fail, needs `a` defined).
//! - A statement writing a variable is removed only when no statement
//!   left reads that variable (anywhere: liveness is flow-insensitive,
//!   so loops need no special care). Accumulating into a variable
//!   (`a += e`, `a[i] = e`) is not a read of it.
//! - In the forward sweep a removed statement must also be unable to fail
//!   ([`cannot_fail`]): the user's program would have stopped there. In the
//!   reverse sweep (from `let target_adj = 1.0` on) every statement either
//!   recomputes an expression the forward sweep already evaluated
//!   successfully on the same, restored values, or applies a derivative
//!   rule to operands of matching shapes, so dead ones are removed even
//!   when they contain argument checks or indexing (e.g. the adjoints of
//!   `check_*` terms, recomputed checks in reversed loops).
//! - A branch or `for` loop whose bodies became empty is removed when
//!   its condition or bounds are pure (and, in the forward sweep, cannot
//!   fail) and its loop variable is not read elsewhere.

use super::analysis::{cannot_fail, has_effect, has_effect_given};
use crate::mir::visit::{add_reads, bodies, bodies_mut, own_exprs, own_writes, read_counts};
use crate::mir::{Stmt, StmtKind};

/// Remove dead statements from `body`, whose top-level statements from
/// `reverse_start` on are the reverse sweep; `pure[f]`: calls of function
/// `f` have no effect (see [`super::analysis::pure_functions`]). Returns
/// whether anything changed.
pub(crate) fn run(
    body: &mut Vec<Stmt>,
    num_vars: usize,
    reverse_start: usize,
    pure: &[bool],
) -> bool {
    let mut changed = false;
    loop {
        let mut counts = Counts {
            reads: read_counts(body, num_vars),
            updates: update_counts(body, num_vars),
        };
        let mut removed = false;
        // Backwards, so that a chain of dead temporaries goes in one pass.
        for i in (0..body.len()).rev() {
            let reverse = i >= reverse_start;
            let s = &mut body[i];
            sweep_nested(s, &mut counts, reverse, pure, &mut removed);
            if removable(s, &counts, reverse, pure) {
                forget(s, &mut counts);
                body.remove(i);
                removed = true;
            }
        }
        if !removed {
            return changed;
        }
        changed = true;
    }
}

/// Reads and updates (writes other than by `let`) of each variable by the
/// statements left.
struct Counts {
    reads: Vec<u32>,
    updates: Vec<u32>,
}

fn update_counts(body: &[Stmt], num_vars: usize) -> Vec<u32> {
    let mut counts = vec![0; num_vars];
    for s in body {
        updates(s, &mut |v| counts[v.0 as usize] += 1);
    }
    counts
}

/// The variables `s` and its nested statements update.
fn updates(s: &Stmt, f: &mut dyn FnMut(crate::mir::VarId)) {
    if !matches!(s.kind, StmtKind::Let { .. }) {
        own_writes(s, f);
    }
    for body in bodies(s) {
        for t in body {
            updates(t, f);
        }
    }
}

fn sweep_list(
    list: &mut Vec<Stmt>,
    counts: &mut Counts,
    reverse: bool,
    pure: &[bool],
    removed: &mut bool,
) {
    for i in (0..list.len()).rev() {
        let s = &mut list[i];
        sweep_nested(s, counts, reverse, pure, removed);
        if removable(s, counts, reverse, pure) {
            forget(s, counts);
            list.remove(i);
            *removed = true;
        }
    }
}

fn sweep_nested(
    s: &mut Stmt,
    counts: &mut Counts,
    reverse: bool,
    pure: &[bool],
    removed: &mut bool,
) {
    for body in bodies_mut(s) {
        sweep_list(body, counts, reverse, pure, removed);
    }
}

fn forget(s: &Stmt, counts: &mut Counts) {
    let mut mine = vec![0; counts.reads.len()];
    add_reads(s, &mut mine);
    for (c, m) in counts.reads.iter_mut().zip(mine) {
        *c -= m;
    }
    updates(s, &mut |v| counts.updates[v.0 as usize] -= 1);
}

/// `s` may go: it has no effect, writes only variables nobody reads, and
/// (in the forward sweep) cannot fail.
fn removable(s: &Stmt, counts: &Counts, reverse: bool, pure_funs: &[bool]) -> bool {
    let mut pure = true;
    let mut safe = true;
    own_exprs(s, &mut |e| {
        // A call recomputed by the reverse sweep returns what it returned
        // in the forward sweep; in the forward sweep it may fail.
        pure &= if reverse {
            !has_effect_given(e, pure_funs)
        } else {
            !has_effect(e)
        };
        safe &= reverse || cannot_fail(e);
    });
    if !pure || !safe {
        return false;
    }
    let dead = |v: crate::mir::VarId| counts.reads[v.0 as usize] == 0;
    match &s.kind {
        StmtKind::Let { var, .. } => dead(*var) && counts.updates[var.0 as usize] == 0,
        StmtKind::AddAssign { lhs, .. } => dead(lhs.var) && (reverse || lhs.path.is_empty()),
        // Whole assignments check sizes: only the reverse sweep's
        // adjoint resets go.
        StmtKind::Assign { lhs, .. } => reverse && dead(lhs.var),
        StmtKind::If { .. } | StmtKind::Block(_) => bodies(s).iter().all(|b| b.is_empty()),
        StmtKind::For { var, .. } | StmtKind::ForDown { var, .. } => {
            dead(*var) && bodies(s).iter().all(|b| b.is_empty())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn removes_unread_adjoint_chains_and_keeps_checks() {
        // The check's adjoint is never read; the check itself is.
        let mut t = TestProgram::new();
        let (x, c, s, c_adj, s_adj) = (
            t.param("x"),
            t.real("c"),
            t.real("s"),
            t.real("c_adj"),
            t.real("s_adj"),
        );
        let body = vec![
            t.read_param(x),
            t.let_(c, t.check_not_nan(t.var(x))),
            t.let_(s, t.add(t.var(c), t.var(x))),
            t.target_add(t.var(s)),
            t.let_(t.target_adj, t.lit(1.0)),
            t.let_(s_adj, t.var(t.target_adj)),
            t.let_(c_adj, t.zeros(c)),
            t.add_assign(c_adj, t.var(s_adj)),
            t.param_adjoint(x, s_adj),
        ];
        let after = t.run(body, |g| {
            let n = g.program.vars.len();
            super::run(&mut g.body, n, 4, &[]);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "let c = check_not_nan(x, 1);",
                "let s = add(c, x);",
                "target += s;",
                "let target_adj = 1.0;",
                "let s_adj = target_adj;",
                "param_adjoint(0, x, s_adj, target_adj) -> ();",
            ]
        );
    }

    #[test]
    fn forward_statements_that_may_fail_stay() {
        // An unread index may be out of range: the forward sweep keeps it.
        let mut t = TestProgram::new();
        let (x, y, u, w) = (t.param("x"), t.data_vector("y"), t.real("u"), t.real("w"));
        let body = vec![
            t.read_param(x),
            t.let_(u, t.index(y, 3)),
            t.let_(w, t.add(t.var(x), t.lit(1.0))),
            t.let_(t.target_adj, t.lit(1.0)),
            t.let_(u, t.index(y, 3)),
            t.param_adjoint(x, t.target_adj),
        ];
        let after = t.run(body, |g| {
            let n = g.program.vars.len();
            super::run(&mut g.body, n, 3, &[]);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "let u = y[3];",
                "let target_adj = 1.0;",
                "param_adjoint(0, x, target_adj, target_adj) -> ();",
            ]
        );
    }

    #[test]
    fn a_let_stays_while_an_accumulation_into_it_stays() {
        // `a += y[3]` may fail, so it stays although `a` is never read;
        // then `a` must stay defined (a function body: no reverse sweep).
        let mut t = TestProgram::new();
        let (x, y, a) = (t.param("x"), t.data_vector("y"), t.real("a"));
        let body = vec![
            t.read_param(x),
            t.let_(a, t.zeros(x)),
            t.add_assign(a, t.index(y, 3)),
            t.target_add(t.var(x)),
        ];
        let after = t.run(body, |g| {
            let n = g.program.vars.len();
            let len = g.body.len();
            super::run(&mut g.body, n, len, &[]);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "let a = zeros_like(x);",
                "a += y[3];",
                "target += x;",
            ]
        );
    }
}
