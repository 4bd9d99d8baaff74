//! Visiting every expression of MIR statements, mutably.

use super::{Expr, ExprKind, Index, LValue, Printable, Program, Stmt, StmtKind};

/// Visit every expression (and subexpression) of a program's blocks and
/// function bodies (not declared sizes or transform arguments).
pub fn for_each_program_expr(program: &mut Program, f: &mut dyn FnMut(&mut Expr)) {
    for block in [
        &mut program.transformed_data,
        &mut program.transformed_parameters,
        &mut program.model,
        &mut program.generated_quantities,
    ] {
        for_each_expr(block, f);
    }
    for fun in &mut program.functions {
        for_each_expr(&mut fun.body, f);
    }
}

/// Number of AD stacks the program's functions use (one past the
/// largest stack they push or pop).
pub fn stacks_in_use(program: &Program) -> u32 {
    let mut bodies: Vec<Stmt> = program
        .functions
        .iter()
        .flat_map(|f| f.body.iter().cloned())
        .collect();
    let mut used = 0;
    for_each_stmt(&bodies, &mut |s| {
        if let StmtKind::Push { stack, .. } = &s.kind {
            used = used.max(stack.0 + 1);
        }
    });
    for_each_expr(&mut bodies, &mut |e| {
        if let ExprKind::Pop(stack) = &e.kind {
            used = used.max(stack.0 + 1);
        }
    });
    used
}

/// Visit every statement of `stmts`, nested ones included.
pub fn for_each_stmt(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                for_each_stmt(then, f);
                for_each_stmt(otherwise, f);
            }
            StmtKind::While { body, .. }
            | StmtKind::For { body, .. }
            | StmtKind::ForDown { body, .. }
            | StmtKind::Block(body) => for_each_stmt(body, f),
            _ => {}
        }
    }
}

/// Visit the outermost expressions of `stmts` (statement operands and
/// the index operands of assigned places), nested statements included,
/// but not their subexpressions.
pub fn for_each_root_expr(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Expr)) {
    for s in stmts {
        match &mut s.kind {
            StmtKind::Decl { init, .. } => {
                if let Some(e) = init {
                    f(e);
                }
            }
            StmtKind::Assign { lhs, rhs } | StmtKind::AddAssign { lhs, rhs } => {
                lvalue(lhs, f);
                f(rhs);
            }
            StmtKind::Unpack { lhs, rhs } => {
                lhs.iter_mut().for_each(|l| lvalue(l, f));
                f(rhs);
            }
            StmtKind::TargetAdd(e)
            | StmtKind::JacobianAdd(e)
            | StmtKind::Effect(e)
            | StmtKind::Let { value: e, .. }
            | StmtKind::Push { value: e, .. } => f(e),
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    f(e);
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                f(cond);
                for_each_root_expr(then, f);
                for_each_root_expr(otherwise, f);
            }
            StmtKind::While { cond, body } => {
                f(cond);
                for_each_root_expr(body, f);
            }
            StmtKind::For {
                lower, upper, body, ..
            }
            | StmtKind::ForDown {
                lower, upper, body, ..
            } => {
                f(lower);
                f(upper);
                for_each_root_expr(body, f);
            }
            StmtKind::Block(b) => for_each_root_expr(b, f),
            StmtKind::Print(ps) | StmtKind::Reject(ps) | StmtKind::FatalError(ps) => {
                for p in ps {
                    if let Printable::Expr(e) = p {
                        f(e);
                    }
                }
            }
            StmtKind::CheckConstraint { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::ReadParam { .. }
            | StmtKind::ParamAdjoint { .. } => {}
        }
    }
}

/// Visit every expression (and subexpression) of `stmts`.
pub fn for_each_expr(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Expr)) {
    for_each_root_expr(stmts, &mut |e| expr(e, f));
}

fn lvalue(lv: &mut LValue, f: &mut dyn FnMut(&mut Expr)) {
    for step in &mut lv.path {
        if let super::LValueStep::Index(idx) = step {
            indexes(idx, f);
        }
    }
}

/// The operands of `idx` (not their subexpressions).
fn indexes(idx: &mut [Index], f: &mut dyn FnMut(&mut Expr)) {
    for i in idx {
        match i {
            Index::All => {}
            Index::Single(e) | Index::Multi(e) | Index::Upfrom(e) | Index::Downto(e) => f(e),
            Index::Between(a, b) => {
                f(a);
                f(b);
            }
        }
    }
}

/// Visit `e` and every subexpression of it (outermost first).
pub fn expr(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    f(e);
    children_mut(e, &mut |c| expr(c, f));
}

/// The direct subexpressions of `e` in evaluation order (index expressions
/// after their base): the one list of every expression kind's operands.
pub fn children(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    match &e.kind {
        ExprKind::Prim(_, args)
        | ExprKind::Call(_, args)
        | ExprKind::ArrayLit(args)
        | ExprKind::RowVectorLit(args)
        | ExprKind::TupleLit(args)
        | ExprKind::Partial { args, .. } => args.iter().for_each(f),
        ExprKind::Index(base, idx) => {
            f(base);
            for i in idx {
                match i {
                    Index::All => {}
                    Index::Single(x) | Index::Multi(x) | Index::Upfrom(x) | Index::Downto(x) => {
                        f(x)
                    }
                    Index::Between(a, b) => {
                        f(a);
                        f(b);
                    }
                }
            }
        }
        ExprKind::TupleProj(base, _) | ExprKind::ZerosLike(base) => f(base),
        ExprKind::Ode(call) => call.operands().into_iter().for_each(f),
        ExprKind::Cond(a, b, c) => {
            f(a);
            f(b);
            f(c);
        }
        ExprKind::Int(_)
        | ExprKind::Real(_)
        | ExprKind::Imag(_)
        | ExprKind::Var(_)
        | ExprKind::Target
        | ExprKind::JacobianOn
        | ExprKind::Pop(_) => {}
    }
}

/// [`children`], mutably.
pub fn children_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    match &mut e.kind {
        ExprKind::Prim(_, args)
        | ExprKind::Call(_, args)
        | ExprKind::ArrayLit(args)
        | ExprKind::RowVectorLit(args)
        | ExprKind::TupleLit(args)
        | ExprKind::Partial { args, .. } => args.iter_mut().for_each(f),
        ExprKind::Index(base, idx) => {
            f(base);
            indexes(idx, f);
        }
        ExprKind::TupleProj(base, _) | ExprKind::ZerosLike(base) => f(base),
        ExprKind::Ode(call) => call.operands_mut().into_iter().for_each(f),
        ExprKind::Cond(a, b, c) => {
            f(a);
            f(b);
            f(c);
        }
        ExprKind::Int(_)
        | ExprKind::Real(_)
        | ExprKind::Imag(_)
        | ExprKind::Var(_)
        | ExprKind::Target
        | ExprKind::JacobianOn
        | ExprKind::Pop(_) => {}
    }
}
