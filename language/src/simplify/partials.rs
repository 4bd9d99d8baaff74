//! Derivative rules of common elementwise functions written out as
//! arithmetic: `d1_square(x)` becomes `2.0 .* x`, `d1_log(x)` becomes
//! `inv(x)`, `d1_exp(x)` becomes `exp(x)`, … Every backend has fast
//! kernels for these primitives, while a [`ExprKind::Partial`] goes
//! through the generic derivative table one element at a time; and the
//! result can be shared with the forward sweep (`exp(x)` is often already
//! computed) by common-subexpression elimination.
//!
//! # Invariants
//! - Each rewrite is `bat_math`'s derivative formula for that function,
//!   operation for operation (`Primitive::grad`), built from primitives
//!   whose kernels use the same scalar functions: the values are
//!   bit-identical (tests/simplify_partials.rs compares them with the
//!   interpreter's derivative table).
//! - Only one-argument functions; the rewritten expression has the
//!   partial's shape (elementwise operations on the argument, scalars
//!   broadcast).

use crate::mir::visit::{deep_exprs_mut, rewrite};
use crate::mir::{Expr, ExprKind, Prim, Stmt};
use crate::types::{AdLevel, Type};

/// Rewrite the partials of `body` that have an arithmetic form. Returns
/// whether anything changed.
pub(crate) fn run(body: &mut [Stmt]) -> bool {
    let mut changed = false;
    for s in body.iter_mut() {
        deep_exprs_mut(s, &mut |e| {
            rewrite(e, &mut |x| {
                if let Some(arith) = arithmetic(x) {
                    *x = arith;
                    changed = true;
                }
            })
        });
    }
    changed
}

/// The arithmetic form of partial `e`, if it has one.
pub fn arithmetic(e: &Expr) -> Option<Expr> {
    let ExprKind::Partial { prim, arg, args } = &e.kind else {
        return None;
    };
    let [x] = args.as_slice() else {
        return None;
    };
    if *arg != 0 {
        return None;
    }
    let ty = e.ty.clone();
    let span = e.span;
    let op = |p: Prim, args: Vec<Expr>| Expr {
        kind: ExprKind::Prim(p, args),
        ty: ty.clone(),
        ad: AdLevel::DataOnly,
        span,
    };
    let lit = |v: f64| Expr {
        kind: ExprKind::Real(v),
        ty: Type::Real,
        ad: AdLevel::DataOnly,
        span,
    };
    let x = || x.clone();
    use Prim::*;
    Some(match prim {
        // 2 x
        Square => op(EltMul, vec![lit(2.0), x()]),
        // 1 / x
        Log => op(Inv, vec![x()]),
        // exp(x)
        Exp | Expm1 => op(Exp, vec![x()]),
        // 1 / (1 + x)
        Log1p => op(Inv, vec![op(Add, vec![lit(1.0), x()])]),
        // -1 / (1 - x)
        Log1m => op(EltDiv, vec![lit(-1.0), op(Sub, vec![lit(1.0), x()])]),
        // 0.5 / sqrt(x)
        Sqrt => op(EltDiv, vec![lit(0.5), op(Sqrt, vec![x()])]),
        // -1 / (x x)
        Inv => op(EltDiv, vec![lit(-1.0), op(EltMul, vec![x(), x()])]),
        Sin => op(Cos, vec![x()]),
        // -sin(x)
        Cos => op(Neg, vec![op(Sin, vec![x()])]),
        // inv_logit(x) inv_logit(-x)
        InvLogit => op(
            EltMul,
            vec![
                op(InvLogit, vec![x()]),
                op(InvLogit, vec![op(Neg, vec![x()])]),
            ],
        ),
        // inv_logit(-x)
        LogInvLogit => op(InvLogit, vec![op(Neg, vec![x()])]),
        // -inv_logit(x)
        Log1mInvLogit => op(Neg, vec![op(InvLogit, vec![x()])]),
        // inv_logit(x)
        Log1pExp => op(InvLogit, vec![x()]),
        _ => return None,
    })
}
