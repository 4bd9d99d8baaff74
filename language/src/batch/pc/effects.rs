//! Which variables an op reads and writes — the one place liveness,
//! save pruning and the sharing analysis learn the MIR's data flow.

use super::{Op, Terminator};
use crate::mir::{Expr, ExprKind, Index, LValue, LValueStep, Printable, SizedType, Stmt, StmtKind};
use crate::mir::{StackId, Transform, VarId};

/// The variables an op reads and writes. `kills` are whole-variable writes
/// whose old value is not needed (a subset of `writes`); a partial or
/// checked write (`x[i] = e`, `x = e` which checks the size) reads too.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    pub reads: Vec<VarId>,
    pub writes: Vec<VarId>,
    pub kills: Vec<VarId>,
    /// Draws random numbers or reads `target()`: a per-lane value even
    /// from shared operands.
    pub per_lane_source: bool,
    /// AD stacks popped (the value is per lane unless the stack only ever
    /// holds shared values).
    pub pops: Vec<StackId>,
    /// AD stack pushed (a gradient program's `Push` statement).
    pub pushes: Option<StackId>,
}

impl Effects {
    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            // The Jacobian switch is the same for every lane.
            ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Imag(_) | ExprKind::JacobianOn => {}
            ExprKind::Var(v) => self.reads.push(*v),
            ExprKind::Prim(p, args) => {
                if p.is_rng() {
                    self.per_lane_source = true;
                }
                self.exprs(args);
            }
            ExprKind::Call(_, args)
            | ExprKind::ArrayLit(args)
            | ExprKind::RowVectorLit(args)
            | ExprKind::TupleLit(args)
            | ExprKind::Partial { args, .. } => self.exprs(args),
            ExprKind::Index(base, idx) => {
                self.expr(base);
                self.indexes(idx);
            }
            ExprKind::TupleProj(base, _) | ExprKind::ZerosLike(base) => self.expr(base),
            ExprKind::Cond(c, t, f) => {
                self.expr(c);
                self.expr(t);
                self.expr(f);
            }
            ExprKind::Target => self.per_lane_source = true,
            ExprKind::Pop(stack) => self.pops.push(*stack),
            // Runs user functions, which see only their arguments: a
            // function of the operands.
            ExprKind::Ode(call) => call.operands().into_iter().for_each(|a| self.expr(a)),
        }
    }

    fn exprs(&mut self, es: &[Expr]) {
        for e in es {
            self.expr(e);
        }
    }

    fn indexes(&mut self, idx: &[Index]) {
        for i in idx {
            match i {
                Index::All => {}
                Index::Single(e) | Index::Multi(e) | Index::Upfrom(e) | Index::Downto(e) => {
                    self.expr(e)
                }
                Index::Between(a, b) => {
                    self.expr(a);
                    self.expr(b);
                }
            }
        }
    }

    fn sized(&mut self, t: &SizedType) {
        t.for_each_size(&mut |n| self.expr(n));
    }

    fn transform(&mut self, t: &Transform) {
        match t {
            Transform::Lower(e)
            | Transform::Upper(e)
            | Transform::Offset(e)
            | Transform::Multiplier(e) => self.expr(e),
            Transform::LowerUpper(a, b) | Transform::OffsetMultiplier(a, b) => {
                self.expr(a);
                self.expr(b);
            }
            Transform::Tuple(items) => items.iter().for_each(|t| self.transform(t)),
            _ => {}
        }
    }

    fn printables(&mut self, ps: &[Printable]) {
        for p in ps {
            if let Printable::Expr(e) = p {
                self.expr(e);
            }
        }
    }

    /// A checked or partial write: reads the old value too.
    fn update(&mut self, lhs: &LValue) {
        self.reads.push(lhs.var);
        self.writes.push(lhs.var);
        for step in &lhs.path {
            if let LValueStep::Index(idx) = step {
                self.indexes(idx);
            }
        }
    }

    fn kill(&mut self, v: VarId) {
        self.writes.push(v);
        self.kills.push(v);
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Decl { var, ty, init } => {
                self.sized(ty);
                if let Some(e) = init {
                    self.expr(e);
                }
                self.kill(*var);
            }
            StmtKind::Assign { lhs, rhs } | StmtKind::AddAssign { lhs, rhs } => {
                self.expr(rhs);
                self.update(lhs);
            }
            StmtKind::Unpack { lhs, rhs } => {
                self.expr(rhs);
                lhs.iter().for_each(|l| self.update(l));
            }
            StmtKind::TargetAdd(e) | StmtKind::JacobianAdd(e) | StmtKind::Effect(e) => self.expr(e),
            StmtKind::Push { value, stack } => {
                self.expr(value);
                self.pushes = Some(*stack);
            }
            StmtKind::Let { var, value } => {
                self.expr(value);
                self.kill(*var);
            }
            StmtKind::CheckConstraint { var, transform } => {
                self.reads.push(*var);
                self.transform(transform);
            }
            StmtKind::Print(ps) | StmtKind::Reject(ps) | StmtKind::FatalError(ps) => {
                self.printables(ps)
            }
            StmtKind::ReadParam { var, transform, .. } => {
                self.transform(transform);
                self.kill(*var);
                self.per_lane_source = true;
            }
            StmtKind::ParamAdjoint {
                var,
                var_adj,
                lp_adj,
                transform,
                arg_adjs,
                ..
            } => {
                self.reads.extend([*var, *var_adj, *lp_adj]);
                self.transform(transform);
                for a in arg_adjs.iter().flatten() {
                    self.reads.push(*a);
                    self.writes.push(*a);
                }
                self.per_lane_source = true;
            }
            // Not in CFG ops (see the CFG invariants); handled soundly
            // anyway: every variable read, nothing killed.
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond);
                then.iter().chain(otherwise).for_each(|s| self.nested(s));
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                body.iter().for_each(|s| self.nested(s));
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            }
            | StmtKind::ForDown {
                var,
                upper,
                lower,
                body,
            } => {
                self.expr(lower);
                self.expr(upper);
                self.reads.push(*var);
                self.writes.push(*var);
                body.iter().for_each(|s| self.nested(s));
            }
            StmtKind::Block(body) => body.iter().for_each(|s| self.nested(s)),
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e);
                }
            }
            StmtKind::Break | StmtKind::Continue => {}
        }
    }

    /// A statement nested in control flow: may not run, so kills nothing.
    fn nested(&mut self, s: &Stmt) {
        let mut inner = Effects::default();
        inner.stmt(s);
        self.reads.extend(inner.reads);
        self.reads.extend(inner.writes.iter().copied());
        self.writes.extend(inner.writes);
        self.per_lane_source |= inner.per_lane_source;
        self.pops.extend(inner.pops);
        // A nested push may or may not run: its stack is per lane.
        self.per_lane_source |= inner.pushes.is_some();
    }
}

/// What `op` reads and writes.
pub fn of_op(op: &Op) -> Effects {
    let mut e = Effects::default();
    match op {
        Op::Stmt(s) => e.stmt(s),
        Op::Arg { param, value } => {
            e.expr(value);
            e.kill(*param);
        }
        Op::SetResult { var, value } => {
            e.expr(value);
            e.kill(*var);
        }
        Op::Push(v) => e.reads.push(*v),
        Op::Pop(v) | Op::Peek(v) => e.kill(*v),
    }
    e
}

/// What a straight-line statement reads and writes.
pub fn of_stmt(s: &Stmt) -> Effects {
    let mut e = Effects::default();
    e.stmt(s);
    e
}

/// What a block's terminator reads.
pub fn of_terminator(t: &Terminator) -> Effects {
    let mut e = Effects::default();
    if let Terminator::Branch { cond, .. } = t {
        e.expr(cond);
    }
    e
}

/// What an expression reads (and whether it has a per-lane source).
pub fn of_expr(x: &Expr) -> Effects {
    let mut e = Effects::default();
    e.expr(x);
    e
}
