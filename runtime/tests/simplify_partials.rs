//! The derivative rules that `simplify` writes out as arithmetic give,
//! bit for bit, the values of the interpreter's derivative table.

use language::mir::{Expr, ExprKind, Prim};
use language::span::Span;
use language::types::{AdLevel, Type};
use language::value::Value;
use runtime::lane;

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
        kind: ExprKind::Var(language::mir::VarId(0)),
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
        let arith = language::simplify::partials::arithmetic(&partial).expect("an arithmetic form");
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
