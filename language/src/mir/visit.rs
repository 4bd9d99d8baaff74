//! Visiting MIR: the subexpressions of an expression, the expressions a
//! statement evaluates, the statements nested in it, and the variables it
//! reads and writes. The one visitor every pass, lowering and runner uses.

use super::{
    Expr, ExprKind, Index, LValue, LValueStep, Printable, Program, Stmt, StmtKind, Transform, VarId,
};

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
        for body in bodies(s) {
            for_each_stmt(body, f);
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
                lvalue_exprs_mut(lhs, f);
                f(rhs);
            }
            StmtKind::Unpack { lhs, rhs } => {
                lhs.iter_mut().for_each(|l| lvalue_exprs_mut(l, f));
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
            idx.iter().for_each(|i| index_exprs(i, f));
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
            idx.iter_mut().for_each(|i| index_exprs_mut(i, f));
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

/// Every node of `e` (pre-order), index expressions included.
pub(crate) fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    children(e, &mut |c| walk(c, f));
}

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
