//! What the passes need to know about expressions beyond their
//! structure ([`crate::mir::visit`]): whether one has an effect, whether it
//! may fail, and a structural key telling equal values apart.

use crate::mir::visit::{any_node, bodies, index_exprs, own_exprs};
use crate::mir::{Expr, ExprKind, Index, Prim, Stmt, StmtKind};
use crate::types::Type;

/// `e` changes the state or may draw random numbers: a stack pop, a user
/// function call (it may print, reject or recurse), an `_rng` primitive.
pub(crate) fn has_effect(e: &Expr) -> bool {
    any_node(e, &|x| match &x.kind {
        // An ODE solve calls the system function: kept and ordered like a
        // call (never removed, moved or merged).
        ExprKind::Pop(_) | ExprKind::Call(..) | ExprKind::Ode(_) => true,
        ExprKind::Prim(p, _) => p.is_rng(),
        _ => false,
    })
}

/// [`has_effect`] counting calls of the functions `pure` marks as
/// without effects.
pub(crate) fn has_effect_given(e: &Expr, pure: &[bool]) -> bool {
    any_node(e, &|x| match &x.kind {
        ExprKind::Pop(_) | ExprKind::Ode(_) => true,
        ExprKind::Call(f, _) => !pure[f.0 as usize],
        ExprKind::Prim(p, _) => p.is_rng(),
        _ => false,
    })
}

/// Functions whose calls have no effect besides their value (or an
/// error): not external, no target, print, random draw or stack, and
/// calling only such functions.
pub(crate) fn pure_functions(program: &crate::mir::Program) -> Vec<bool> {
    let funs = &program.functions;
    let mut pure: Vec<bool> = funs
        .iter()
        .map(|f| !f.external && !f.uses_target && !f.uses_rng)
        .collect();
    loop {
        let mut changed = false;
        for (i, f) in funs.iter().enumerate() {
            if pure[i] && !f.body.iter().all(|s| stmt_is_quiet(s, &pure)) {
                pure[i] = false;
                changed = true;
            }
        }
        if !changed {
            return pure;
        }
    }
}

fn stmt_is_quiet(s: &Stmt, pure: &[bool]) -> bool {
    let mut quiet = !matches!(
        s.kind,
        StmtKind::Print(_)
            | StmtKind::TargetAdd(_)
            | StmtKind::JacobianAdd(_)
            | StmtKind::Push { .. }
            | StmtKind::ReadParam { .. }
            | StmtKind::ParamAdjoint { .. }
    );
    own_exprs(s, &mut |e| {
        quiet &=
            !has_effect_given(e, pure) && !any_node(e, &|x| matches!(x.kind, ExprKind::Target));
    });
    quiet
        && bodies(s)
            .iter()
            .all(|b| b.iter().all(|t| stmt_is_quiet(t, pure)))
}

/// `e` certainly evaluates without error on well-typed operands (given
/// that the variables it reads are set). Conservative: anything not known
/// to be total — indexing, argument checks, integer arithmetic (overflow,
/// division by zero), operations on two containers (size mismatch),
/// linear algebra, derivative rules — may fail.
pub(crate) fn cannot_fail(e: &Expr) -> bool {
    let args_ok = |args: &[Expr]| args.iter().all(cannot_fail);
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Real(_)
        | ExprKind::Imag(_)
        | ExprKind::Var(_)
        | ExprKind::Target
        | ExprKind::JacobianOn => true,
        ExprKind::ZerosLike(inner) => cannot_fail(inner),
        ExprKind::Cond(c, a, b) => cannot_fail(c) && cannot_fail(a) && cannot_fail(b),
        ExprKind::Prim(p, args) => args_ok(args) && total_prim(*p, args, &e.ty),
        _ => false,
    }
}

fn total_prim(p: Prim, args: &[Expr], ty: &Type) -> bool {
    use Prim::*;
    let one_scalar = args.iter().filter(|a| a.ty.is_scalar()).count() + 1 >= args.len();
    let real_result = ty.is_real_typed();
    match p {
        // Elementwise real functions give NaN or ±inf outside their domain.
        Exp | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Log1m | Log1pExp | Log1mExp | Sqrt
        | Cbrt | Inv | InvSqrt | InvSquare | Sin | Cos | Tan | Asin | Acos | Atan | Sinh | Cosh
        | Tanh | Asinh | Acosh | Atanh | Logit | InvLogit | LogInvLogit | Log1mInvLogit => {
            args.len() == 1 && real_result
        }
        Square => args.len() == 1 && real_result,
        Neg | Abs => args.len() == 1 && real_result,
        // Real arithmetic with at most one container operand: no size to
        // mismatch, no integer overflow.
        Add | Sub | EltMul | EltDiv => args.len() == 2 && one_scalar && real_result,
        Mul => args.len() == 2 && one_scalar && real_result,
        Div => args.len() == 2 && args[1].ty.is_scalar() && real_result,
        Transpose => args.len() == 1,
        Sum => args.len() == 1 && real_result,
        NumElements | Rows | Cols | Size => args.len() == 1,
        _ => false,
    }
}

/// A structural key of `e` (variables by id, literals by bit pattern,
/// types included, spans ignored): equal keys mean the same value.
pub(crate) fn key(e: &Expr) -> String {
    let mut out = String::new();
    write_key(e, &mut out);
    out
}

fn write_key(e: &Expr, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "<{}>", e.ty);
    match &e.kind {
        ExprKind::Int(i) => {
            let _ = write!(out, "i{i}");
        }
        ExprKind::Real(x) => {
            let _ = write!(out, "r{:x}", x.to_bits());
        }
        ExprKind::Imag(x) => {
            let _ = write!(out, "j{:x}", x.to_bits());
        }
        ExprKind::Var(v) => {
            let _ = write!(out, "v{}", v.0);
        }
        ExprKind::Target => out.push('T'),
        ExprKind::JacobianOn => out.push('J'),
        ExprKind::Pop(s) => {
            let _ = write!(out, "pop{}", s.0);
        }
        ExprKind::Prim(p, args) => {
            let _ = write!(out, "{}(", p.name());
            keys(args, out);
        }
        ExprKind::Call(f, args) => {
            let _ = write!(out, "call{}(", f.0);
            keys(args, out);
        }
        ExprKind::Partial { prim, arg, args } => {
            let _ = write!(out, "d{arg}{}(", prim.name());
            keys(args, out);
        }
        ExprKind::ArrayLit(args) => {
            out.push_str("{(");
            keys(args, out);
        }
        ExprKind::RowVectorLit(args) => {
            out.push_str("[(");
            keys(args, out);
        }
        ExprKind::TupleLit(args) => {
            out.push_str("tuple(");
            keys(args, out);
        }
        ExprKind::Index(base, idx) => {
            out.push_str("idx(");
            write_key(base, out);
            for i in idx {
                let _ = write!(
                    out,
                    ";{}",
                    match i {
                        Index::All => ":",
                        Index::Single(_) => "s",
                        Index::Multi(_) => "m",
                        Index::Upfrom(_) => "u",
                        Index::Downto(_) => "d",
                        Index::Between(..) => "b",
                    }
                );
                index_exprs(i, &mut |x| write_key(x, out));
            }
            out.push(')');
        }
        ExprKind::TupleProj(base, k) => {
            let _ = write!(out, "proj{k}(");
            write_key(base, out);
            out.push(')');
        }
        ExprKind::ZerosLike(base) => {
            out.push_str("zeros(");
            write_key(base, out);
            out.push(')');
        }
        ExprKind::Cond(c, a, b) => {
            out.push_str("cond(");
            keys(&[(**c).clone(), (**a).clone(), (**b).clone()], out);
        }
        // Solves are never merged (see `has_effect`): a key of its own.
        ExprKind::Ode(call) => {
            let _ = write!(out, "ode@{:p}", &**call);
        }
    }
}

fn keys(args: &[Expr], out: &mut String) {
    for a in args {
        write_key(a, out);
        out.push(',');
    }
    out.push(')');
}
