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
//!   bit-identical (a unit test compares them).
//! - Only one-argument functions; the rewritten expression has the
//!   partial's shape (elementwise operations on the argument, scalars
//!   broadcast).

use super::visit::{deep_exprs_mut, rewrite};
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
pub(crate) fn arithmetic(e: &Expr) -> Option<Expr> {
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

#[cfg(test)]
mod tests {
    use crate::interp::lane;
    use crate::mir::{Expr, ExprKind, Prim};
    use crate::span::Span;
    use crate::types::{AdLevel, Type};
    use crate::value::Value;

    /// Evaluate an expression tree of primitives over one real `x`.
    fn eval(e: &Expr, x: f64) -> Value {
        match &e.kind {
            ExprKind::Real(v) => Value::Real(*v),
            ExprKind::Var(_) => Value::Real(x),
            ExprKind::Prim(p, args) => {
                let args: Vec<Value> = args.iter().map(|a| eval(a, x)).collect();
                lane::eval_prim(*p, &args).unwrap()
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn arithmetic_forms_equal_the_derivative_table_bit_for_bit() {
        use Prim::*;
        let var = Expr {
            kind: ExprKind::Var(crate::mir::VarId(0)),
            ty: Type::Real,
            ad: AdLevel::AutoDiff,
            span: Span::default(),
        };
        let xs: Vec<f64> = (-40..=40)
            .map(|k| k as f64 * 0.37)
            .chain([
                0.0, -0.0, 1e-300, -1e-300, 1e300, 1.0, -1.0, 0.5, 36.0, -36.0, 800.0, -800.0,
            ])
            .chain([f64::INFINITY, f64::NEG_INFINITY, f64::NAN])
            .collect();
        let prims = [
            Square,
            Log,
            Exp,
            Expm1,
            Log1p,
            Log1m,
            Sqrt,
            Inv,
            Sin,
            Cos,
            InvLogit,
            LogInvLogit,
            Log1mInvLogit,
            Log1pExp,
        ];
        for p in prims {
            let partial = Expr {
                kind: ExprKind::Partial {
                    prim: p,
                    arg: 0,
                    args: vec![var.clone()],
                },
                ..var.clone()
            };
            let arith = super::arithmetic(&partial).expect("an arithmetic form");
            for &x in &xs {
                let table = lane::partial(p, 0, &[Value::Real(x)]).unwrap();
                let ours = eval(&arith, x);
                let (Value::Real(a), Value::Real(b)) = (&table, &ours) else {
                    panic!("{p:?}: {table:?} vs {ours:?}");
                };
                assert!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    "d/dx {p:?} at {x}: table {a}, arithmetic {b}"
                );
            }
        }
    }
}
