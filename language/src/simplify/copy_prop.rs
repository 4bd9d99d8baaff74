//! Copy and constant propagation: `let a = b;` (or `let a = 1.0;`)
//! followed by reads of `a` becomes those reads of `b` (or of the
//! literal), and the `let` goes — the `a_adj += b_adj` chains the AD
//! makes of every temporary.
//!
//! # Invariants
//! - `a` has no other definition anywhere (it is written by this `let`
//!   only), and every read of `a` is in the statements after the `let` in
//!   the same list (nested ones included). So each read sees the value of
//!   this `let`, from the same run of the list.
//! - Otherwise (`a` is written elsewhere too, e.g. an adjoint that gets
//!   more contributions later) the copy is *coalesced* when `b` is a
//!   temporary defined by `let b = e` earlier in the same list and read
//!   only by the copy: `let b = e` becomes `let a = e` and the copy goes,
//!   provided nothing between them mentions `a` or jumps (`break`,
//!   `continue`, `return` in function bodies), and `e` does not read `a`.
//! - `b` is not written between the `let` and the last statement reading
//!   `a`; the last one may write `b` only if it is a plain statement
//!   (`let`, `=`, `+=`), which evaluates everything it reads before
//!   writing.
//! - `a` and `b` (or the literal) have the same static type: no value
//!   changes type.
//! - A literal replaces every read in an expression after the `let` in
//!   its list; the `let` stays while something else reads `a` (e.g.
//!   `param_adjoint`'s adjoint field, which must name a variable).

use crate::mir::visit::{
    bodies_mut, deep_exprs_mut, read_counts, reads_of, rewrite, write_counts, writes,
};
use crate::mir::{Expr, ExprKind, Program, Stmt, StmtKind, VarId};
use crate::types::AdLevel;

/// Propagate every copy and literal `let` that qualifies. Returns whether
/// anything changed.
pub(crate) fn run(program: &Program, body: &mut Vec<Stmt>) -> bool {
    let n = program.vars.len();
    let mut counts = Counts {
        reads: read_counts(body, n),
        writes: write_counts(body, n),
    };
    let mut changed = false;
    propagate_list(program, body, &mut counts, &mut changed);
    changed
}

struct Counts {
    reads: Vec<u32>,
    writes: Vec<u32>,
}

enum Source {
    Var(VarId),
    Literal(Expr),
}

fn propagate_list(
    program: &Program,
    list: &mut Vec<Stmt>,
    counts: &mut Counts,
    changed: &mut bool,
) {
    let mut i = 0;
    while i < list.len() {
        match try_propagate(program, list, i, counts) {
            Outcome::Removed => {
                *changed = true;
                continue;
            }
            Outcome::Replaced => *changed = true,
            Outcome::Unchanged => {}
        }
        for body in bodies_mut(&mut list[i]) {
            propagate_list(program, body, counts, changed);
        }
        i += 1;
    }
}

enum Outcome {
    /// Every read replaced, the `let` removed.
    Removed,
    /// Reads in expressions replaced; the `let` stays for the others.
    Replaced,
    Unchanged,
}

fn source(program: &Program, s: &Stmt) -> Option<(VarId, Source)> {
    let StmtKind::Let { var, value } = &s.kind else {
        return None;
    };
    let ty = &program.vars[var.0 as usize].ty;
    if value.ty != *ty {
        return None;
    }
    match value.kind {
        ExprKind::Var(b) if b != *var && program.vars[b.0 as usize].ty == *ty => {
            Some((*var, Source::Var(b)))
        }
        ExprKind::Int(_) | ExprKind::Real(_) => Some((*var, Source::Literal(value.clone()))),
        _ => None,
    }
}

/// Propagate `list[i]` if it is a qualifying `let`.
fn try_propagate(
    program: &Program,
    list: &mut Vec<Stmt>,
    i: usize,
    counts: &mut Counts,
) -> Outcome {
    let Some((a, src)) = source(program, &list[i]) else {
        return Outcome::Unchanged;
    };
    let ai = a.0 as usize;
    let total = counts.reads[ai];
    if let Source::Var(b) = src
        && counts.writes[ai] != 1
    {
        return coalesce(list, i, a, b, counts);
    }
    if counts.writes[ai] != 1 || total == 0 {
        return Outcome::Unchanged;
    }
    if let Source::Literal(_) = src {
        // Every read after the `let` in this list sees the literal.
        let mut replaced = 0;
        for s in &mut list[i + 1..] {
            replaced += replace_reads(s, a, &src);
        }
        if replaced == 0 {
            return Outcome::Unchanged;
        }
        counts.reads[ai] -= replaced;
        if counts.reads[ai] > 0 {
            return Outcome::Replaced;
        }
        counts.writes[ai] = 0;
        list.remove(i);
        return Outcome::Removed;
    }
    // The statements after the `let` holding every read of `a`.
    let mut seen = 0;
    let mut last = None;
    for (j, s) in list.iter().enumerate().skip(i + 1) {
        let r = reads_of(s, a);
        if r > 0 {
            seen += r;
            last = Some(j);
            if seen == total {
                break;
            }
        }
    }
    let Some(last) = last.filter(|_| seen == total) else {
        return Outcome::Unchanged;
    };
    let Source::Var(b) = src else {
        unreachable!("literals are done above")
    };
    if list[i + 1..last].iter().any(|s| writes(s, b)) {
        return Outcome::Unchanged;
    }
    let end = &list[last];
    if writes(end, b) && !is_plain(end) {
        return Outcome::Unchanged;
    }
    for s in &mut list[i + 1..=last] {
        replace_reads(s, a, &src);
        rename_fields(s, a, b);
    }
    // The `let` read `b` once; its readers now read `b` instead.
    counts.reads[b.0 as usize] += total;
    counts.reads[b.0 as usize] -= 1;
    counts.reads[ai] = 0;
    counts.writes[ai] = 0;
    list.remove(i);
    Outcome::Removed
}

/// `let b = e; ... let a = b;` where `b` is read only by the copy and
/// nothing between mentions `a`: `let a = e; ...` (for an `a` written
/// elsewhere too, e.g. an adjoint accumulated later).
fn coalesce(list: &mut Vec<Stmt>, i: usize, a: VarId, b: VarId, counts: &mut Counts) -> Outcome {
    let bi = b.0 as usize;
    if counts.writes[bi] != 1 || counts.reads[bi] != 1 {
        return Outcome::Unchanged;
    }
    let Some(d) = (0..i).rev().find(|&d| writes(&list[d], b)) else {
        return Outcome::Unchanged;
    };
    let StmtKind::Let { var, value } = &list[d].kind else {
        return Outcome::Unchanged;
    };
    if *var != b
        || crate::mir::visit::reads_var(value, a)
        || list[d + 1..i]
            .iter()
            .any(|s| crate::mir::visit::mentions(s, a) || crate::mir::visit::has_jump(s))
    {
        return Outcome::Unchanged;
    }
    let value = value.clone();
    list[d].kind = StmtKind::Let { var: a, value };
    list.remove(i);
    counts.reads[bi] = 0;
    counts.writes[bi] = 0;
    Outcome::Removed
}

/// A statement that reads everything before it writes (no nested lists).
fn is_plain(s: &Stmt) -> bool {
    matches!(
        s.kind,
        StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::AddAssign { .. }
    )
}

/// Replace the expression reads of `a` in `s`; returns how many.
fn replace_reads(s: &mut Stmt, a: VarId, src: &Source) -> u32 {
    let mut n = 0;
    deep_exprs_mut(s, &mut |e| {
        rewrite(e, &mut |x| {
            if matches!(x.kind, ExprKind::Var(v) if v == a) {
                n += 1;
                match src {
                    Source::Var(b) => x.kind = ExprKind::Var(*b),
                    Source::Literal(lit) => {
                        *x = Expr {
                            span: x.span,
                            ad: AdLevel::DataOnly,
                            ..lit.clone()
                        }
                    }
                }
            }
        })
    });
    n
}

fn rename_fields(s: &mut Stmt, a: VarId, b: VarId) {
    let swap = |v: &mut VarId| {
        if *v == a {
            *v = b;
        }
    };
    match &mut s.kind {
        StmtKind::CheckConstraint { var, .. } => swap(var),
        StmtKind::ParamAdjoint {
            var,
            var_adj,
            lp_adj,
            ..
        } => {
            swap(var);
            swap(var_adj);
            swap(lp_adj);
        }
        _ => {}
    }
    for body in bodies_mut(s) {
        for t in body.iter_mut() {
            rename_fields(t, a, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn copies_and_literals_propagate() {
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
            t.let_(t.target_adj, t.lit(1.0)),
            t.let_(a, t.var(t.target_adj)),
            t.let_(b, t.var(a)),
            t.let_(c, t.mul(t.var(b), t.var(x))),
            t.let_(d, t.var(c)),
            t.param_adjoint(x, d),
        ];
        let after = t.run(body, |g| {
            super::run(&g.program, &mut g.body);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "let target_adj = 1.0;",
                "let c = multiply(1.0, x);",
                "param_adjoint(0, x, c, target_adj) -> ();",
            ]
        );
    }

    #[test]
    fn a_source_written_before_the_use_stops_propagation() {
        let mut t = TestProgram::new();
        let (x, a, b) = (t.param("x"), t.real("a"), t.real("b"));
        let body = vec![
            t.read_param(x),
            t.let_(b, t.var(x)),
            t.let_(a, t.var(b)),
            t.add_assign(b, t.var(x)),
            t.target_add(t.var(a)),
            t.let_(t.target_adj, t.lit(1.0)),
            t.param_adjoint(x, t.target_adj),
        ];
        let after = t.run(body, |g| {
            super::run(&g.program, &mut g.body);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "let b = x;",
                "let a = b;",
                "b += x;",
                "target += a;",
                "let target_adj = 1.0;",
                "param_adjoint(0, x, target_adj, target_adj) -> ();",
            ]
        );
    }
}
