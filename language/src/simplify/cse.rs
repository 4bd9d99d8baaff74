//! Common-subexpression elimination: after `let u = e;` in a statement
//! list, a later `e` in the same list (a whole `let` value or any part of
//! an expression) becomes `u` — e.g. `log(sigma)` of two density terms,
//! or `exp(x)` of a derivative rule where the forward sweep computed
//! `let t = exp(x)`. (`let t = u;` is then removed by copy propagation.)
//!
//! # Invariants
//! - `e` is pure (no pop, call or random draw) and does not read the
//!   target (which `target +=` changes).
//! - `u` is written only by its `let`, and nothing between the `let` and
//!   the reuse (nested statements included) writes `u` or a variable `e`
//!   reads: both evaluate `e` on the same values, so they give the same
//!   value, and the second cannot fail where the first succeeded. A
//!   statement's own expressions are evaluated before it writes anything,
//!   except a `while` condition (evaluated again after the body): those
//!   are left alone. Nested lists start with nothing available.

use std::collections::{HashMap, HashSet};

use super::analysis::{has_effect, key};
use crate::mir::visit::{
    any_node, bodies_mut, children_mut, deep_writes, own_exprs_mut, walk, write_counts,
};
use crate::mir::{Expr, ExprKind, Program, Stmt, StmtKind, VarId};

/// Replace repeated `let` values by the first one's variable. Returns
/// whether anything changed.
pub(crate) fn run(program: &Program, body: &mut [Stmt]) -> bool {
    let writes = write_counts(body, program.vars.len());
    let mut changed = false;
    list(program, &writes, body, &mut changed);
    changed
}

struct Available {
    var: VarId,
    reads: HashSet<VarId>,
}

fn list(program: &Program, writes: &[u32], stmts: &mut [Stmt], changed: &mut bool) {
    let mut available: HashMap<String, Available> = HashMap::new();
    for s in stmts.iter_mut() {
        for body in bodies_mut(s) {
            list(program, writes, body, changed);
        }
        let mut written = HashSet::new();
        deep_writes(s, &mut |v| {
            written.insert(v);
        });
        // A `while` condition is evaluated again after its body.
        if !available.is_empty() && !matches!(s.kind, StmtKind::While { .. }) {
            let own = match &s.kind {
                StmtKind::Let { var, .. } => Some(*var),
                _ => None,
            };
            own_exprs_mut(s, &mut |e| reuse(program, &available, own, e, changed));
        }
        available.retain(|_, a| !written.contains(&a.var) && a.reads.is_disjoint(&written));
        if let StmtKind::Let { var, value } = &s.kind
            && writes[var.0 as usize] == 1
            && candidate(value)
            && program.vars[var.0 as usize].ty == value.ty
        {
            let mut reads = HashSet::new();
            walk(value, &mut |x| {
                if let ExprKind::Var(v) = x.kind {
                    reads.insert(v);
                }
            });
            if !reads.contains(var) {
                available
                    .entry(key(value))
                    .or_insert(Available { var: *var, reads });
            }
        }
    }
}

/// Replace the largest subexpressions of `e` that are available by the
/// variables holding them (not the variable `own` being defined).
fn reuse(
    program: &Program,
    available: &HashMap<String, Available>,
    own: Option<VarId>,
    e: &mut Expr,
    changed: &mut bool,
) {
    if candidate(e)
        && let Some(a) = available.get(&key(e))
        && Some(a.var) != own
        && program.vars[a.var.0 as usize].ty == e.ty
    {
        e.kind = ExprKind::Var(a.var);
        *changed = true;
        return;
    }
    children_mut(e, &mut |c| reuse(program, available, own, c, changed));
}

/// Worth sharing and safe to: an operation (not a variable or literal)
/// without effects that does not read the target.
fn candidate(e: &Expr) -> bool {
    !matches!(
        e.kind,
        ExprKind::Var(_) | ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Imag(_)
    ) && !has_effect(e)
        && !any_node(e, &|x| matches!(x.kind, ExprKind::Target))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn a_repeated_value_reuses_the_first() {
        let mut t = TestProgram::new();
        let (x, a, b, c, d) = (
            t.param("x"),
            t.real("a"),
            t.real("b"),
            t.real("c"),
            t.real("d"),
        );
        let body = vec![
            t.read_param(x),
            t.let_(a, t.log(t.var(x))),
            t.let_(b, t.log(t.var(x))),
            t.target_add(t.add(t.var(a), t.var(b))),
            // `x` changes: log(x) is computed again.
            t.add_assign(x, t.lit(1.0)),
            t.let_(c, t.log(t.var(x))),
            t.let_(d, t.log(t.var(x))),
            t.target_add(t.add(t.var(c), t.var(d))),
        ];
        let after = t.run(body, |g| {
            super::run(&g.program, &mut g.body);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "let a = log(x);",
                "let b = a;",
                "target += add(a, b);",
                "x += 1.0;",
                "let c = log(x);",
                "let d = c;",
                "target += add(c, d);",
            ]
        );
    }
}
