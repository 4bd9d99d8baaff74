//! What the passes need to know about statements and expressions: the
//! expressions a statement evaluates, the variables it reads and writes,
//! whether it has an effect, and whether an expression may fail.

use crate::mir::{
    Expr, ExprKind, Index, LValue, LValueStep, Prim, Printable, Stmt, StmtKind, Transform, VarId,
};
use crate::types::Type;

// ------------------------------------------------------------ expressions

/// Every node of `e` (pre-order), index expressions included.
pub(crate) fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    crate::mir::visit::children(e, &mut |c| walk(c, f));
}

/// The direct subexpressions of `e`, mutably.
pub(crate) use crate::mir::visit::children_mut;

/// Rewrite every node of `e` bottom-up with `f`.
pub(crate) fn rewrite(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    children_mut(e, &mut |c| rewrite(c, f));
    f(e);
}

pub(crate) fn index_exprs(i: &Index, f: &mut dyn FnMut(&Expr)) {
    match i {
        Index::All => {}
        Index::Single(e) | Index::Multi(e) | Index::Upfrom(e) | Index::Downto(e) => f(e),
        Index::Between(a, b) => {
            f(a);
            f(b);
        }
    }
}

fn index_exprs_mut(i: &mut Index, f: &mut dyn FnMut(&mut Expr)) {
    match i {
        Index::All => {}
        Index::Single(e) | Index::Multi(e) | Index::Upfrom(e) | Index::Downto(e) => f(e),
        Index::Between(a, b) => {
            f(a);
            f(b);
        }
    }
}

/// True if some node of `e` satisfies `pred`.
pub(crate) fn any_node(e: &Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
    let mut found = false;
    walk(e, &mut |x| found |= pred(x));
    found
}

pub(crate) fn reads_var(e: &Expr, v: VarId) -> bool {
    any_node(e, &|x| matches!(x.kind, ExprKind::Var(w) if w == v))
}

/// Count of `Var` nodes per variable in `e` into `counts`.
pub(crate) fn count_var_reads(e: &Expr, counts: &mut [u32]) {
    walk(e, &mut |x| {
        if let ExprKind::Var(v) = x.kind {
            counts[v.0 as usize] += 1;
        }
    });
}

/// `e` changes the state or may draw random numbers: a stack pop, a user
/// function call (it may print, reject or recurse), an `_rng` primitive.
pub(crate) fn has_effect(e: &Expr) -> bool {
    any_node(e, &|x| match &x.kind {
        // An ODE solve calls the system function: kept and ordered like a
        // call (never removed, moved or merged).
        ExprKind::Pop(_) | ExprKind::Call(..) | ExprKind::Ode(_) => true,
        ExprKind::Prim(p, _) => crate::interp::is_rng_prim(*p),
        _ => false,
    })
}

/// [`has_effect`] counting calls of the functions `pure` marks as
/// without effects.
pub(crate) fn has_effect_given(e: &Expr, pure: &[bool]) -> bool {
    any_node(e, &|x| match &x.kind {
        ExprKind::Pop(_) | ExprKind::Ode(_) => true,
        ExprKind::Call(f, _) => !pure[f.0 as usize],
        ExprKind::Prim(p, _) => crate::interp::is_rng_prim(*p),
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

/// Reals, real containers (no ints, tuples or complex values).
pub(crate) fn is_real_typed(ty: &Type) -> bool {
    match ty {
        Type::Real | Type::Vector | Type::RowVector | Type::Matrix => true,
        Type::Array(t) => is_real_typed(t),
        _ => false,
    }
}

fn total_prim(p: Prim, args: &[Expr], ty: &Type) -> bool {
    use Prim::*;
    let one_scalar = args.iter().filter(|a| a.ty.is_scalar()).count() + 1 >= args.len();
    let real_result = is_real_typed(ty);
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

// ------------------------------------------------------------ statements

/// The expressions `s` evaluates itself (not those of nested statements).
pub(crate) fn own_exprs(s: &Stmt, f: &mut dyn FnMut(&Expr)) {
    match &s.kind {
        StmtKind::Decl { ty, init, .. } => {
            ty.for_each_size(&mut |e| f(e));
            if let Some(e) = init {
                f(e);
            }
        }
        StmtKind::Assign { lhs, rhs } | StmtKind::AddAssign { lhs, rhs } => {
            f(rhs);
            lvalue_exprs(lhs, f);
        }
        StmtKind::Unpack { lhs, rhs } => {
            f(rhs);
            lhs.iter().for_each(|lv| lvalue_exprs(lv, f));
        }
        StmtKind::TargetAdd(e)
        | StmtKind::JacobianAdd(e)
        | StmtKind::Effect(e)
        | StmtKind::Return(Some(e)) => f(e),
        StmtKind::Let { value, .. } => f(value),
        StmtKind::Push { value, .. } => f(value),
        StmtKind::CheckConstraint { transform, .. }
        | StmtKind::ReadParam { transform, .. }
        | StmtKind::ParamAdjoint { transform, .. } => transform_exprs(transform, f),
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => f(cond),
        StmtKind::For { lower, upper, .. } | StmtKind::ForDown { lower, upper, .. } => {
            f(lower);
            f(upper);
        }
        StmtKind::Print(items) | StmtKind::Reject(items) | StmtKind::FatalError(items) => {
            for item in items {
                if let Printable::Expr(e) = item {
                    f(e);
                }
            }
        }
        StmtKind::Block(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
    }
}

/// The expressions `s` evaluates itself, mutably.
pub(crate) fn own_exprs_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    match &mut s.kind {
        StmtKind::Decl { ty, init, .. } => {
            ty.for_each_size_mut(&mut |e| f(e));
            if let Some(e) = init {
                f(e);
            }
        }
        StmtKind::Assign { lhs, rhs } | StmtKind::AddAssign { lhs, rhs } => {
            f(rhs);
            lvalue_exprs_mut(lhs, f);
        }
        StmtKind::Unpack { lhs, rhs } => {
            f(rhs);
            lhs.iter_mut().for_each(|lv| lvalue_exprs_mut(lv, f));
        }
        StmtKind::TargetAdd(e)
        | StmtKind::JacobianAdd(e)
        | StmtKind::Effect(e)
        | StmtKind::Return(Some(e)) => f(e),
        StmtKind::Let { value, .. } => f(value),
        StmtKind::Push { value, .. } => f(value),
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => f(cond),
        StmtKind::For { lower, upper, .. } | StmtKind::ForDown { lower, upper, .. } => {
            f(lower);
            f(upper);
        }
        StmtKind::Print(items) | StmtKind::Reject(items) | StmtKind::FatalError(items) => {
            for item in items {
                if let Printable::Expr(e) = item {
                    f(e);
                }
            }
        }
        StmtKind::CheckConstraint { transform, .. }
        | StmtKind::ReadParam { transform, .. }
        | StmtKind::ParamAdjoint { transform, .. } => transform_exprs_mut(transform, f),
        StmtKind::Block(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
    }
}

fn transform_exprs(t: &Transform, f: &mut dyn FnMut(&Expr)) {
    match t {
        Transform::Lower(a)
        | Transform::Upper(a)
        | Transform::Offset(a)
        | Transform::Multiplier(a) => f(a),
        Transform::LowerUpper(a, b) | Transform::OffsetMultiplier(a, b) => {
            f(a);
            f(b);
        }
        Transform::Tuple(ts) => ts.iter().for_each(|t| transform_exprs(t, f)),
        _ => {}
    }
}

fn transform_exprs_mut(t: &mut Transform, f: &mut dyn FnMut(&mut Expr)) {
    match t {
        Transform::Lower(a)
        | Transform::Upper(a)
        | Transform::Offset(a)
        | Transform::Multiplier(a) => f(a),
        Transform::LowerUpper(a, b) | Transform::OffsetMultiplier(a, b) => {
            f(a);
            f(b);
        }
        Transform::Tuple(ts) => ts.iter_mut().for_each(|t| transform_exprs_mut(t, f)),
        _ => {}
    }
}

fn lvalue_exprs(lv: &LValue, f: &mut dyn FnMut(&Expr)) {
    for step in &lv.path {
        if let LValueStep::Index(idx) = step {
            idx.iter().for_each(|i| index_exprs(i, f));
        }
    }
}

fn lvalue_exprs_mut(lv: &mut LValue, f: &mut dyn FnMut(&mut Expr)) {
    for step in &mut lv.path {
        if let LValueStep::Index(idx) = step {
            idx.iter_mut().for_each(|i| index_exprs_mut(i, f));
        }
    }
}

/// The statement lists nested in `s`.
pub(crate) fn bodies(s: &Stmt) -> Vec<&Vec<Stmt>> {
    match &s.kind {
        StmtKind::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        StmtKind::While { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::ForDown { body, .. }
        | StmtKind::Block(body) => vec![body],
        _ => Vec::new(),
    }
}

pub(crate) fn bodies_mut(s: &mut Stmt) -> Vec<&mut Vec<Stmt>> {
    match &mut s.kind {
        StmtKind::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        StmtKind::While { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::ForDown { body, .. }
        | StmtKind::Block(body) => vec![body],
        _ => Vec::new(),
    }
}

/// Every expression of `s` and of its nested statements.
pub(crate) fn deep_exprs(s: &Stmt, f: &mut dyn FnMut(&Expr)) {
    own_exprs(s, f);
    for body in bodies(s) {
        for t in body {
            deep_exprs(t, f);
        }
    }
}

/// Every expression of `s` and of its nested statements, mutably (see
/// [`own_exprs_mut`]).
pub(crate) fn deep_exprs_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    own_exprs_mut(s, f);
    for body in bodies_mut(s) {
        for t in body.iter_mut() {
            deep_exprs_mut(t, f);
        }
    }
}

/// Variables `s` reads through fields that are not expressions
/// (parameter statements, constraint checks), not counting the
/// accumulation target of `+=` or a partly assigned variable.
pub(crate) fn field_reads(s: &Stmt, f: &mut dyn FnMut(VarId)) {
    match &s.kind {
        StmtKind::CheckConstraint { var, .. } => f(*var),
        StmtKind::ParamAdjoint {
            var,
            var_adj,
            lp_adj,
            arg_adjs,
            ..
        } => {
            f(*var);
            f(*var_adj);
            f(*lp_adj);
            arg_adjs.iter().flatten().for_each(|a| f(*a));
        }
        _ => {}
    }
}

/// Variables `s` itself writes (not its nested statements).
pub(crate) fn own_writes(s: &Stmt, f: &mut dyn FnMut(VarId)) {
    match &s.kind {
        StmtKind::Decl { var, .. }
        | StmtKind::Let { var, .. }
        | StmtKind::ReadParam { var, .. } => f(*var),
        StmtKind::Assign { lhs, .. } | StmtKind::AddAssign { lhs, .. } => f(lhs.var),
        StmtKind::Unpack { lhs, .. } => lhs.iter().for_each(|lv| f(lv.var)),
        StmtKind::For { var, .. } | StmtKind::ForDown { var, .. } => f(*var),
        StmtKind::ParamAdjoint { arg_adjs, .. } => arg_adjs.iter().flatten().for_each(|a| f(*a)),
        _ => {}
    }
}

/// Variables `s` or its nested statements write.
pub(crate) fn deep_writes(s: &Stmt, f: &mut dyn FnMut(VarId)) {
    own_writes(s, f);
    for body in bodies(s) {
        for t in body {
            deep_writes(t, f);
        }
    }
}

/// `s` or a nested statement reads or writes `v` (in any way).
pub(crate) fn mentions(s: &Stmt, v: VarId) -> bool {
    let mut found = false;
    own_exprs(s, &mut |e| found |= reads_var(e, v));
    field_reads(s, &mut |w| found |= w == v);
    own_writes(s, &mut |w| found |= w == v);
    found || bodies(s).iter().any(|b| b.iter().any(|t| mentions(t, v)))
}

/// `s` is or contains `break`, `continue` or `return` (only function
/// bodies have them: the log density's jumps became flags).
pub(crate) fn has_jump(s: &Stmt) -> bool {
    matches!(
        s.kind,
        StmtKind::Break | StmtKind::Continue | StmtKind::Return(_)
    ) || bodies(s).iter().any(|b| b.iter().any(has_jump))
}

/// `s` or a nested statement writes `v`.
pub(crate) fn writes(s: &Stmt, v: VarId) -> bool {
    let mut found = false;
    deep_writes(s, &mut |w| found |= w == v);
    found
}

/// Number of reads of each variable in `stmts` (expression nodes and
/// statement fields; the target of `+=` and of a partial assignment does
/// not count as a read of itself).
pub(crate) fn read_counts(stmts: &[Stmt], num_vars: usize) -> Vec<u32> {
    let mut counts = vec![0; num_vars];
    for s in stmts {
        add_reads(s, &mut counts);
    }
    counts
}

pub(crate) fn add_reads(s: &Stmt, counts: &mut [u32]) {
    own_exprs(s, &mut |e| count_var_reads(e, counts));
    field_reads(s, &mut |v| counts[v.0 as usize] += 1);
    for body in bodies(s) {
        for t in body {
            add_reads(t, counts);
        }
    }
}

/// Number of statements writing each variable in `stmts`.
pub(crate) fn write_counts(stmts: &[Stmt], num_vars: usize) -> Vec<u32> {
    let mut counts = vec![0; num_vars];
    for s in stmts {
        deep_writes(s, &mut |v| counts[v.0 as usize] += 1);
    }
    counts
}

/// Reads of `v` in `s` (see [`read_counts`]).
pub(crate) fn reads_of(s: &Stmt, v: VarId) -> u32 {
    let mut n = 0;
    deep_exprs(s, &mut |e| {
        walk(e, &mut |x| {
            if matches!(x.kind, ExprKind::Var(w) if w == v) {
                n += 1;
            }
        })
    });
    fn fields(s: &Stmt, v: VarId, n: &mut u32) {
        field_reads(s, &mut |w| *n += (w == v) as u32);
        for body in bodies(s) {
            for t in body {
                fields(t, v, n);
            }
        }
    }
    fields(s, v, &mut n);
    n
}
