//! Arithmetic on literals and identities that leave a value unchanged:
//! `x - 0`, `x * 1`, `1 * x`, `x / 1`, `-(-x)` become `x`; `-0.5 * 1.0`
//! becomes `-0.5` (the densities' `(y - 0) / 1` and the adjoints' `1.0 *`
//! after constant propagation).
//!
//! # Invariants
//! - Only exact rewrites: IEEE arithmetic gives `x - 0 = x`, `x * 1 = x`,
//!   `x / 1 = x` and `-(-x) = x` for every `x` (zeros keep their sign,
//!   NaN stays NaN). `x + 0` is not rewritten (`-0 + 0` is `+0`).
//! - An identity applies only when the result's static type equals `x`'s
//!   (a scalar `1` times a vector is the vector; an int times `1.0` is not
//!   the int).
//! - Literal arithmetic is done only on reals (or an int with a real),
//!   with the interpreter's f64 operations; int arithmetic (overflow,
//!   integer division) is left to run time.

use crate::mir::visit::{deep_exprs_mut, rewrite};
use crate::mir::{Expr, ExprKind, Prim, Stmt};
use crate::types::{AdLevel, Type};

/// Simplify every expression of `body`; identities only when
/// `identities` (values of a real static type are reals: not so for a
/// function's `real` argument called with an int, which `x * 1.0` would
/// turn into a real). Returns whether anything changed.
pub(crate) fn run(body: &mut [Stmt], identities: bool) -> bool {
    let mut changed = false;
    for s in body.iter_mut() {
        deep_exprs_mut(s, &mut |e| {
            rewrite(e, &mut |x| changed |= simplify(x, identities))
        });
    }
    changed
}

/// Simplify the node `e` (its operands already are). Returns whether it
/// changed.
pub(crate) fn simplify(e: &mut Expr, identities: bool) -> bool {
    let ExprKind::Prim(p, args) = &e.kind else {
        return false;
    };
    if let Some(x) = fold_literals(*p, args, &e.ty) {
        *e = Expr {
            kind: ExprKind::Real(x),
            ty: Type::Real,
            ad: AdLevel::DataOnly,
            span: e.span,
        };
        return true;
    }
    if !identities {
        return false;
    }
    if let Some(x) = double_negation(*p, args, &e.ty) {
        *e = x;
        return true;
    }
    if let Some(k) = identity_operand(*p, args, &e.ty) {
        let ExprKind::Prim(_, mut args) = std::mem::replace(&mut e.kind, ExprKind::JacobianOn)
        else {
            unreachable!()
        };
        *e = args.swap_remove(k);
        return true;
    }
    false
}

fn literal(e: &Expr) -> Option<f64> {
    match e.kind {
        ExprKind::Real(x) => Some(x),
        ExprKind::Int(i) => Some(i as f64),
        _ => None,
    }
}

fn fold_literals(p: Prim, args: &[Expr], ty: &Type) -> Option<f64> {
    use Prim::*;
    if *ty != Type::Real {
        return None;
    }
    match (p, args) {
        (Neg, [x]) => match x.kind {
            ExprKind::Real(x) => Some(-x),
            _ => None,
        },
        (Add | Sub | Mul | EltMul | Div | EltDiv, [x, y]) => {
            // At least one real: no integer arithmetic.
            if x.ty != Type::Real && y.ty != Type::Real {
                return None;
            }
            let (x, y) = (literal(x)?, literal(y)?);
            Some(match p {
                Add => x + y,
                Sub => x - y,
                Mul | EltMul => x * y,
                _ => x / y,
            })
        }
        _ => None,
    }
}

/// The operand `e` equals when `p(args)` is an identity.
fn identity_operand(p: Prim, args: &[Expr], ty: &Type) -> Option<usize> {
    use Prim::*;
    let is = |e: &Expr, v: f64| literal(e) == Some(v);
    let same = |k: usize| args[k].ty == *ty;
    match (p, args) {
        (Sub, [_, y]) if is(y, 0.0) && same(0) => Some(0),
        (Mul | EltMul, [_, y]) if is(y, 1.0) && same(0) => Some(0),
        (Mul | EltMul, [x, _]) if is(x, 1.0) && same(1) => Some(1),
        (Div | EltDiv, [_, y]) if is(y, 1.0) && same(0) => Some(0),
        _ => None,
    }
}

/// `-(-x)`: `x`.
fn double_negation(p: Prim, args: &[Expr], ty: &Type) -> Option<Expr> {
    match (p, args) {
        (Prim::Neg, [inner]) => match &inner.kind {
            ExprKind::Prim(Prim::Neg, xs) if xs.len() == 1 && xs[0].ty == *ty => {
                Some(xs[0].clone())
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn identities_and_literal_arithmetic() {
        let mut t = TestProgram::new();
        let (x, v, a, b, c) = (
            t.param("x"),
            t.param_vector("v"),
            t.real("a"),
            t.vector("b"),
            t.real("c"),
        );
        let body = vec![
            t.read_param(x),
            t.read_param(v),
            // (x - 0) / 1
            t.let_(a, t.div(t.sub(t.var(x), t.int(0)), t.int(1))),
            // 1 * v: a vector
            t.let_(b, t.mul(t.int(1), t.var(v))),
            // -0.5 * 1.0, and 1.0 * 2 (an int times a real is real)
            t.let_(
                c,
                t.add(t.mul(t.lit(-0.5), t.lit(1.0)), t.mul(t.lit(1.0), t.int(2))),
            ),
            // x + 0 keeps its sign of zero: unchanged
            t.target_add(t.add(t.var(x), t.lit(0.0))),
        ];
        let after = t.run(body, |g| {
            super::run(&mut g.body, true);
        });
        assert_eq!(
            after,
            [
                "x = read_param(0);",
                "v = read_param(1);",
                "let a = x;",
                "let b = v;",
                "let c = 1.5;",
                "target += add(x, 0.0);",
            ]
        );
    }
}
