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
//!
//! A third statement `let c = check_not_nan(b, k);` (or `check_finite`),
//! as a logistic regression's gradient checks its linear predictor, is
//! answered by the product too: the kernel counts the sums that are not
//! finite as it adds `s`, and when there are none every lane passes — `c`
//! gets the check's value (0) without the check's own pass over the N × Z
//! numbers (5–6 ms of a 190 ms gradient at 1024 lanes). When some sum is
//! not finite (in any lane of the batch, running or not) the check runs
//! as usual and fails the lanes it fails.

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

/// Run `first` and `second` fused (and `third`, when it checks their sum
/// and the sums pass), if they have the form above and their values allow
/// it. Returns how many statements ran: 0 (nothing run, nothing changed),
/// 2 or 3. The form is looked at before the last-read table, which every
/// statement of a block passes through.
pub fn run(
    first: &Stmt,
    second: &Stmt,
    third: Option<&Stmt>,
    st: &mut State,
    active: &Lanes,
    last_reads: Option<&LastReads>,
) -> Result<usize> {
    if !st.gemm {
        return Ok(0);
    }
    let Some(p) = pattern(first, second) else {
        return Ok(0);
    };
    let moves = |s: &Stmt| last_reads.and_then(|m| m.at(s)).map_or(&[][..], |m| &m[..]);
    if !moves(second).contains(&p.a) {
        return Ok(0);
    }
    let check = third.filter(|t| checked_var(t) == Some(p.b));
    let active = &st.running(active);
    if active.is_empty() {
        return Ok(2);
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
        return Ok(0);
    };
    let Some((sum, not_finite)) = gemm::multiply_then_add(&matrix, &vector, &addend) else {
        return Ok(0);
    };
    drop((matrix, vector, addend));
    // What the two statements' last reads would have taken (`a` among
    // them) is let go as they would have let it go.
    for v in moves(first).iter().chain(moves(second)) {
        st.vars[v.0 as usize] = None;
    }
    super::set_var(st, p.b, Arc::new(sum), active);
    let (Some(check), 0) = (check, not_finite) else {
        return Ok(2);
    };
    let StmtKind::Let { var: c, .. } = check.kind else {
        unreachable!("checked_var matched a let");
    };
    for v in moves(check) {
        st.vars[v.0 as usize] = None;
    }
    super::set_var(st, c, Arc::new(Slot::shared(Value::Real(0.0))), active);
    Ok(3)
}

/// `b` of `let c = check_not_nan(b, k);` or `let c = check_finite(b, k);`
/// (`k` a literal: the argument's position, for the error message).
fn checked_var(stmt: &Stmt) -> Option<VarId> {
    let StmtKind::Let { value, .. } = &stmt.kind else {
        return None;
    };
    let ExprKind::Prim(Prim::CheckNotNan | Prim::CheckFinite, args) = &value.kind else {
        return None;
    };
    match args.as_slice() {
        [
            Expr {
                kind: ExprKind::Var(b),
                ..
            },
            Expr {
                kind: ExprKind::Int(_),
                ..
            },
        ] => Some(*b),
        _ => None,
    }
}

/// Whether `first` and `second` have the fused form (whatever values
/// they will hold).
pub fn fusable(first: &Stmt, second: &Stmt) -> bool {
    pattern(first, second).is_some()
}

/// Whether `third` checks what fused `first` and `second` compute (and is
/// answered by the product when the sums are finite).
pub fn checks_the_sum(first: &Stmt, second: &Stmt, third: &Stmt) -> bool {
    pattern(first, second).is_some_and(|p| checked_var(third) == Some(p.b))
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
