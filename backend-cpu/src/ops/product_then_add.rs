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

use crate::eval::{Result, eval, gemm};
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
/// values allow it (`moves_*`: the variables each statement's last read
/// moves); `false` when they were not run.
pub fn run(
    first: &Stmt,
    second: &Stmt,
    st: &mut State,
    active: &Lanes,
    moves_first: Option<&[VarId]>,
    moves_second: Option<&[VarId]>,
) -> Result<bool> {
    if !st.gemm {
        return Ok(false);
    }
    let Some(p) = pattern(first, second) else {
        return Ok(false);
    };
    if !moves_second.is_some_and(|m| m.contains(&p.a)) || !values_fit(&p, st) {
        return Ok(false);
    }
    let active = &st.running(active);
    if active.is_empty() {
        return Ok(true);
    }
    st.moving.extend_from_slice(moves_first.unwrap_or_default());
    let operands = eval(p.matrix, st, active).and_then(|m| Ok((m, eval(p.vector, st, active)?)));
    st.moving.clear();
    let (matrix, vector) = operands?;
    let addend = eval(p.addend, st, active)?;
    let sum = gemm::multiply_then_add(&matrix, &vector, &addend)
        .expect("the operands' forms were checked");
    super::set_var(st, p.b, Arc::new(sum), active);
    st.vars[p.a.0 as usize] = None;
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

/// The variables hold what [`gemm::multiply_then_add`] takes (looked at,
/// not taken).
fn values_fit(p: &Pattern<'_>, st: &State) -> bool {
    let slot = |e: &Expr| match e.kind {
        ExprKind::Var(v) => st.vars[v.0 as usize].clone(),
        _ => None,
    };
    let (Some(m), Some(v)) = (slot(p.matrix), slot(p.vector)) else {
        return false;
    };
    let cols = match &*m {
        Slot::Shared(m) => match &**m {
            Value::Matrix { cols, .. } => *cols,
            _ => return false,
        },
        _ => return false,
    };
    let vector_fits = matches!(&*v, Slot::Real(d)
        if d.shape == language::data::Shape::Vector(cols) && d.z == st.z);
    let addend_fits = match p.addend.kind {
        ExprKind::Real(_) => true,
        _ => match slot(p.addend).as_deref() {
            Some(Slot::Real(d)) => d.shape == language::data::Shape::Real && d.z == st.z,
            Some(Slot::Shared(x)) => matches!(**x, Value::Real(_)),
            _ => false,
        },
    };
    vector_fits && addend_fits
}
