//! `let a = multiply(X, v); let b = add(s, a);` as one product whose rows
//! get `s` added as soon as they are final ([`gemm::multiply_then_add`]).
//!
//! A gradient program computes a linear predictor `α + X β` as these two
//! statements (the AD names every intermediate), and the second one was a
//! pass of its own over the N × Z product (for a logistic regression at
//! 512 lanes per thread, 41 MB read and written again). Fused when:
//! - the statements are consecutive in a block, `X` holds a shared
//!   matrix, `v` a dense vector of its column count, and `s` is a variable
//!   holding a real per lane or a shared real (or a real literal);
//! - the second statement is the last read of `a`
//!   ([`crate::exec::last_reads`]: no lane, now or later, reads `a`
//!   again), so `a` need not be kept; it is left without a value, as that
//!   last read would have left it.
//!
//! Reading variables has no side effects, so evaluating `s` before the
//! product changes nothing; each lane's `b` is the interpreter's
//! `s + a[i]` (or `a[i] + s`: the same sum), the same bits.

use crate::eval::{Result, gemm};
use crate::exec::last_reads::LastReads;
use crate::lanes::{Lanes, Slot, State};
use language::mir::{Expr, ExprKind, Prim, Stmt, StmtKind, VarId};
use language::value::Value;
use std::sync::Arc;

/// The fused statements' parts.
struct Pattern<'a> {
    a: VarId,
    matrix: &'a Expr,
    vector: &'a Expr,
    b: VarId,
    addend: &'a Expr,
}

/// Run `first` and `second` fused, if they have the form above and their
/// values allow it; `false` (nothing run, nothing changed) otherwise. The
/// form is looked at before the last-read table, which every statement of a
/// block passes through.
pub fn run(
    first: &Stmt,
    second: &Stmt,
    st: &mut State,
    active: &Lanes,
    last_reads: Option<&LastReads>,
) -> Result<bool> {
    if !st.gemm {
        return Ok(false);
    }
    let Some(p) = pattern(first, second) else {
        return Ok(false);
    };
    let moves = |s: &Stmt| last_reads.and_then(|m| m.at(s)).map_or(&[][..], |m| &m[..]);
    if !moves(second).contains(&p.a) {
        return Ok(false);
    }
    let active = &st.running(active);
    if active.is_empty() {
        return Ok(true);
    }
    // The operands' values as they are (reading a variable has no effect):
    // when they are not the kernel's forms, the statements run as usual.
    let value = |e: &Expr| match e.kind {
        ExprKind::Var(v) => st.vars[v.0 as usize].clone(),
        ExprKind::Real(x) => Some(Arc::new(Slot::shared(Value::Real(x)))),
        _ => None,
    };
    let (Some(matrix), Some(vector), Some(addend)) =
        (value(p.matrix), value(p.vector), value(p.addend))
    else {
        return Ok(false);
    };
    let Some(sum) = gemm::multiply_then_add(&matrix, &vector, &addend) else {
        return Ok(false);
    };
    drop((matrix, vector, addend));
    // What the two statements' last reads would have taken (`a` among
    // them) is let go as they would have let it go.
    for v in moves(first).iter().chain(moves(second)) {
        st.vars[v.0 as usize] = None;
    }
    super::set_var(st, p.b, Arc::new(sum), active);
    Ok(true)
}

/// Whether `first` and `second` have the fused form (whatever values
/// they will hold).
pub fn fusable(first: &Stmt, second: &Stmt) -> bool {
    pattern(first, second).is_some()
}

fn pattern<'a>(first: &'a Stmt, second: &'a Stmt) -> Option<Pattern<'a>> {
    let StmtKind::Let { var: a, value } = &first.kind else {
        return None;
    };
    let ExprKind::Prim(Prim::Mul, args) = &value.kind else {
        return None;
    };
    let [matrix, vector] = args.as_slice() else {
        return None;
    };
    let StmtKind::Let { var: b, value } = &second.kind else {
        return None;
    };
    let ExprKind::Prim(Prim::Add, args) = &value.kind else {
        return None;
    };
    let is_a = |e: &Expr| matches!(e.kind, ExprKind::Var(v) if v == *a);
    let addend = match args.as_slice() {
        [s, x] | [x, s] if is_a(x) => s,
        _ => return None,
    };
    let plain = |e: &Expr| match e.kind {
        ExprKind::Var(v) => v != *a,
        ExprKind::Real(_) => true,
        _ => false,
    };
    let var = |e: &Expr| matches!(e.kind, ExprKind::Var(v) if v != *a);
    (var(matrix) && var(vector) && plain(addend) && b != a).then_some(Pattern {
        a: *a,
        matrix,
        vector,
        b: *b,
        addend,
    })
}
