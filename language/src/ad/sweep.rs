//! The forward and reverse sweeps, generated together statement by
//! statement so that every `Push` has its matching `Pop`.

use std::collections::{HashMap, HashSet};

use super::{GradProgram, unsupported};
use crate::diagnostic::Diagnostic;
use crate::mir::{
    Expr, ExprKind, FunId, Index, LValue, LValueStep, Origin, Program, StackId, Stmt, StmtKind,
    Transform, VarId, VarInfo,
};
use crate::span::Span;
use crate::types::{AdLevel, Type};

/// How a statement list is being transformed.
#[derive(Clone, Copy)]
pub(super) struct Ctx {
    /// The list's own locals stay live into its reverse (the top level of
    /// the log density, or a recomputed loop iteration): no push/pop.
    pub top: bool,
    /// Recomputing for a reverse sweep: do not add to the target, print,
    /// or check constraints again.
    pub replay: bool,
    /// A top list zeroes its locals' adjoints where its reverse starts;
    /// the log density's blocks instead have them zeroed before the whole
    /// reverse sweep (the model's reverse feeds transformed parameters').
    pub zero_locals: bool,
}

pub(crate) struct Transformer {
    pub program: Program,
    adj: HashMap<VarId, VarId>,
    /// Temporaries bound in both branches of a conditional expression;
    /// their adjoints belong to the enclosing statement list.
    pub cond_temps: HashSet<VarId>,
    stacks: u32,
    pub target_adj: VarId,
    diags: Vec<Diagnostic>,
    /// Return-value variables of normalized functions: bound at most once
    /// per call and read by the caller's reverse, so never saved/zeroed
    /// as block locals.
    pub no_save: HashSet<VarId>,
    /// Reverse version of each user function differentiated so far.
    pub rev_funs: HashMap<(FunId, Vec<bool>), FunId>,
    /// (function, its reverse) whose reverse body is still to be made.
    pub pending: Vec<(FunId, Vec<bool>, FunId)>,
    /// Function arguments treated as data while making one reverse
    /// function (their call sites pass data): no adjoint.
    pub inactive: HashSet<VarId>,
    /// Side-effect-free copies of functions that add to the target or print.
    pub quiet_funs: HashMap<FunId, FunId>,
    /// Number of functions of the source program (the rest are generated).
    pub original_functions: usize,
    /// The statement being transformed reads `target()` at its forward value.
    target_reads_exact: bool,
}

/// (forward sweep, reverse sweep) of a statement or list.
pub(super) type Sweeps = (Vec<Stmt>, Vec<Stmt>);

impl Transformer {
    pub fn new(program: &Program) -> Transformer {
        let mut t = Transformer {
            program: program.clone(),
            adj: HashMap::new(),
            cond_temps: HashSet::new(),
            // Functions generated earlier (the reverse functions of ODE
            // right-hand sides, made at lowering) keep their own stacks.
            stacks: crate::mir::visit::stacks_in_use(program),
            target_adj: VarId(0),
            diags: Vec::new(),
            no_save: HashSet::new(),
            rev_funs: HashMap::new(),
            pending: Vec::new(),
            inactive: HashSet::new(),
            quiet_funs: HashMap::new(),
            original_functions: program.functions.len(),
            target_reads_exact: true,
        };
        t.target_adj = t.temp(&Type::Real, "target_adj");
        t
    }

    pub fn run(mut self) -> Result<GradProgram, Vec<Diagnostic>> {
        let top = Ctx {
            top: true,
            replay: false,
            zero_locals: false,
        };
        let mut forward = Vec::new();
        let mut param_reverse = Vec::new();
        let params = self.program.parameters.clone();
        for (i, p) in params.iter().enumerate() {
            let (fwd, rev) = self.read_param(i, p.var, &p.transform);
            forward.extend(fwd);
            param_reverse.push(rev);
        }
        let tparams = self.normalize_block(&self.program.transformed_parameters.clone());
        let model = self.normalize_block(&self.program.model.clone());
        let (tp_fwd, tp_rev) = self.list(&tparams, top);
        let (model_fwd, model_rev) = self.list(&model, top);
        forward.extend(tp_fwd);
        forward.extend(model_fwd);

        let mut reverse = vec![self.let_stmt(self.target_adj, real(1.0))];
        // Adjoints of the parameters and of the blocks' top-level variables.
        let top_level =
            params
                .iter()
                .map(|p| p.var)
                .chain(tparams.iter().chain(&model).filter_map(|s| match &s.kind {
                    StmtKind::Decl { var, .. } | StmtKind::Let { var, .. } => Some(*var),
                    _ => None,
                }));
        for v in top_level.collect::<Vec<_>>() {
            if let Some(a) = self.adjoint(v) {
                let zeros = self.zeros_like(v);
                reverse.push(self.let_stmt(a, zeros));
            }
        }
        reverse.extend(model_rev);
        reverse.extend(tp_rev);
        for rev in param_reverse.into_iter().rev() {
            reverse.extend(rev);
        }
        // Recomputations in the reverse sweep must not add to the target
        // (or print) a second time.
        self.quiet_calls(&mut reverse);
        self.make_pending_reverses();
        if !self.diags.is_empty() {
            return Err(self.diags);
        }
        forward.extend(reverse);
        Ok(GradProgram {
            program: self.program,
            body: forward,
            num_stacks: self.stacks,
            target_adjoint: self.target_adj,
        })
    }

    // ------------------------------------------------------------ helpers

    pub(super) fn is_real_valued(ty: &Type) -> bool {
        match ty {
            Type::Real | Type::Vector | Type::RowVector | Type::Matrix => true,
            Type::Array(t) => Self::is_real_valued(t),
            Type::Tuple(ts) => ts.iter().any(Self::is_real_valued),
            _ => false,
        }
    }

    pub(super) fn temp(&mut self, ty: &Type, hint: &str) -> VarId {
        let id = VarId(self.program.vars.len() as u32);
        self.program.vars.push(VarInfo {
            name: format!("{hint}__{}", id.0),
            ty: ty.clone(),
            origin: Origin::Local,
            span: Span::default(),
        });
        id
    }

    /// The adjoint variable of `v`, if `v` can carry a derivative.
    pub(super) fn adjoint(&mut self, v: VarId) -> Option<VarId> {
        if self.inactive.contains(&v) {
            return None;
        }
        if let Some(&a) = self.adj.get(&v) {
            return Some(a);
        }
        let info = &self.program.vars[v.0 as usize];
        let active = Self::is_real_valued(&info.ty)
            && !matches!(
                info.origin,
                Origin::Data | Origin::TransformedData | Origin::LoopVar
            );
        if !active {
            return None;
        }
        let (ty, name) = (info.ty.clone(), info.name.clone());
        let a = self.temp(&ty, &format!("{name}_adj"));
        self.adj.insert(v, a);
        Some(a)
    }

    /// Make `a` the adjoint of `v` (a reverse function's argument).
    pub(super) fn set_adjoint(&mut self, v: VarId, a: VarId) {
        self.adj.insert(v, a);
    }

    pub(super) fn var_expr(&self, v: VarId, span: Span) -> Expr {
        let ty = self.program.vars[v.0 as usize].ty.clone();
        Expr {
            kind: ExprKind::Var(v),
            ty,
            ad: AdLevel::AutoDiff,
            span,
        }
    }

    pub(super) fn zeros_like(&self, v: VarId) -> Expr {
        let e = self.var_expr(v, Span::default());
        Expr {
            ty: e.ty.clone(),
            ad: AdLevel::DataOnly,
            span: e.span,
            kind: ExprKind::ZerosLike(Box::new(e)),
        }
    }

    pub(super) fn let_stmt(&self, var: VarId, value: Expr) -> Stmt {
        let span = value.span;
        Stmt {
            kind: StmtKind::Let { var, value },
            span,
        }
    }

    /// Number of stacks allocated so far.
    pub(super) fn num_stacks(&self) -> u32 {
        self.stacks
    }

    /// The diagnostics reported so far, taken out.
    pub(super) fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.diags)
    }

    pub(super) fn new_stack(&mut self) -> StackId {
        self.stacks += 1;
        StackId(self.stacks - 1)
    }

    pub(super) fn fail(&mut self, what: impl std::fmt::Display, span: Span) {
        self.diags.push(unsupported(what, span));
    }

    // ------------------------------------------------------------ parameters

    fn read_param(&mut self, i: usize, var: VarId, transform: &Transform) -> Sweeps {
        let mut fwd = Vec::new();
        let mut atoms = Vec::new();
        let mut anf_lists = Vec::new();
        let args = transform_args(transform);
        for arg in &args {
            let anf = self.anf(arg);
            fwd.extend(anf.stmts.clone());
            atoms.push(anf.atom.clone());
            anf_lists.push(anf);
        }
        let atom_transform = with_transform_args(transform, &atoms);
        fwd.push(Stmt {
            kind: StmtKind::ReadParam {
                param: i,
                var,
                transform: atom_transform.clone(),
            },
            // A failed transform points at the parameter's declaration, as
            // the interpreter's constrain does.
            span: self.program.vars[var.0 as usize].span,
        });
        let mut rev = Vec::new();
        for anf in &anf_lists {
            rev.extend(self.zero_temp_adjoints(&anf.stmts));
        }
        let arg_adjs: Vec<Option<VarId>> = atoms
            .iter()
            .map(|a| {
                if let ExprKind::Var(v) = a.kind {
                    self.adjoint(v)
                } else {
                    None
                }
            })
            .collect();
        let Some(var_adj) = self.adjoint(var) else {
            let ty = self.program.vars[var.0 as usize].ty.clone();
            self.fail(format!("a parameter of type {ty:?}"), Span::default());
            return (fwd, rev);
        };
        rev.push(Stmt {
            kind: StmtKind::ParamAdjoint {
                param: i,
                var,
                var_adj,
                lp_adj: self.target_adj,
                transform: atom_transform,
                arg_adjs,
            },
            span: Span::default(),
        });
        for anf in anf_lists.iter().rev() {
            let reverse = self.reverse_anf_list(&anf.stmts, &rev);
            rev.extend(reverse);
        }
        (fwd, rev)
    }

    // ------------------------------------------------------------ statements

    pub(super) fn list(&mut self, stmts: &[Stmt], ctx: Ctx) -> Sweeps {
        let mut fwd = Vec::new();
        let mut revs = Vec::new();
        let inner = Ctx { top: false, ..ctx };
        for s in stmts {
            // A top list runs its forward and reverse in one activation, so
            // the reverse can reuse the forward's temporaries.
            let (f, r) = self.stmt(s, inner, ctx.top);
            fwd.extend(f);
            revs.push(r);
        }
        let locals: Vec<VarId> = stmts
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Decl { var, .. } | StmtKind::Let { var, .. } => Some(*var),
                _ => None,
            })
            .filter(|v| !self.no_save.contains(v))
            .collect();
        let mut rev = Vec::new();
        if ctx.top {
            for &v in locals.iter().filter(|_| ctx.zero_locals) {
                if let Some(a) = self.adjoint(v) {
                    let zeros = self.zeros_like(v);
                    rev.push(self.let_stmt(a, zeros));
                }
            }
        } else {
            for &v in &locals {
                let stack = self.new_stack();
                let value = self.var_expr(v, Span::default());
                fwd.push(Stmt {
                    kind: StmtKind::Push { stack, value },
                    span: Span::default(),
                });
                let pop = Expr {
                    kind: ExprKind::Pop(stack),
                    ..self.var_expr(v, Span::default())
                };
                let restore = self.let_stmt(v, pop);
                let zero = self.adjoint(v).map(|a| {
                    let zeros = self.zeros_like(v);
                    self.let_stmt(a, zeros)
                });
                // Pops come in reverse order of the pushes.
                rev.insert(0, restore);
                if let Some(z) = zero {
                    rev.push(z);
                }
            }
        }
        for r in revs.into_iter().rev() {
            rev.extend(r);
        }
        (fwd, rev)
    }

    fn stmt(&mut self, s: &Stmt, ctx: Ctx, shared: bool) -> Sweeps {
        // `target()` has its forward value only where the forward sweep
        // itself runs the statement and the reverse reuses its temporaries.
        let saved = self.target_reads_exact;
        self.target_reads_exact = shared && !ctx.replay;
        let out = self.stmt_inner(s, ctx, shared);
        self.target_reads_exact = saved;
        out
    }

    fn stmt_inner(&mut self, s: &Stmt, ctx: Ctx, shared: bool) -> Sweeps {
        let span = s.span;
        let same = |replay_too: bool| {
            if ctx.replay && !replay_too {
                Vec::new()
            } else {
                vec![s.clone()]
            }
        };
        match &s.kind {
            StmtKind::Decl { var, ty, init } => match init {
                Some(init) => {
                    let incoming = self.adjoint(*var).map(|a| self.var_expr(a, span));
                    let (mut fwd, value, rev) = self.expr_sweeps(init, incoming, shared);
                    fwd.push(Stmt {
                        kind: StmtKind::Decl {
                            var: *var,
                            ty: ty.clone(),
                            init: Some(value),
                        },
                        span,
                    });
                    (fwd, rev)
                }
                None => (vec![s.clone()], Vec::new()),
            },
            StmtKind::Let { var, value } => {
                let incoming = self.adjoint(*var).map(|a| self.var_expr(a, span));
                let (mut fwd, value, rev) = self.expr_sweeps(value, incoming, shared);
                fwd.push(self.let_stmt(*var, value));
                (fwd, rev)
            }
            StmtKind::Assign { lhs, rhs } => self.assign(lhs, rhs, span, shared),
            StmtKind::TargetAdd(e) => {
                let incoming = Some(self.var_expr(self.target_adj, span));
                let (mut fwd, value, rev) = self.expr_sweeps(e, incoming, shared);
                if !ctx.replay {
                    fwd.push(Stmt {
                        kind: StmtKind::TargetAdd(value),
                        span,
                    });
                }
                (fwd, rev)
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_sweeps(cond, then, otherwise, span, ctx, shared),
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => self.for_sweeps(s, *var, lower, upper, body, ctx),
            StmtKind::While { cond, body } => self.while_sweeps(cond, body, span, ctx),
            StmtKind::Block(stmts) => {
                let (f, r) = self.list(stmts, ctx);
                (
                    vec![Stmt {
                        kind: StmtKind::Block(f),
                        span,
                    }],
                    vec![Stmt {
                        kind: StmtKind::Block(r),
                        span,
                    }],
                )
            }
            StmtKind::Print(_) | StmtKind::CheckConstraint { .. } => (same(false), Vec::new()),
            StmtKind::Reject(_) | StmtKind::FatalError(_) => (same(true), Vec::new()),
            StmtKind::Effect(e) => self.effect(e, span, ctx.replay, shared),
            StmtKind::JacobianAdd(e) => {
                // The target's adjoint reaches `e` only when the Jacobian is on.
                let on = Expr {
                    kind: ExprKind::JacobianOn,
                    ty: Type::Int,
                    ad: AdLevel::DataOnly,
                    span,
                };
                let incoming = Expr {
                    kind: ExprKind::Prim(
                        crate::mir::Prim::Mul,
                        vec![self.var_expr(self.target_adj, span), on],
                    ),
                    ty: Type::Real,
                    ad: AdLevel::AutoDiff,
                    span,
                };
                let (mut fwd, value, rev) = self.expr_sweeps(e, Some(incoming), shared);
                if !ctx.replay {
                    fwd.push(Stmt {
                        kind: StmtKind::JacobianAdd(value),
                        span,
                    });
                }
                (fwd, rev)
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => {
                self.fail("`break`, `continue` or `return` in the log density", span);
                (Vec::new(), Vec::new())
            }
            StmtKind::Unpack { .. } => {
                self.fail("tuple unpacking", span);
                (Vec::new(), Vec::new())
            }
            StmtKind::AddAssign { .. }
            | StmtKind::Push { .. }
            | StmtKind::ForDown { .. }
            | StmtKind::ReadParam { .. }
            | StmtKind::ParamAdjoint { .. } => {
                self.fail("a statement of a gradient program", span);
                (Vec::new(), Vec::new())
            }
        }
    }

    /// `lhs = rhs`: save the old value; in reverse, take the adjoint of the
    /// new value, restore the old value, then propagate through `rhs`.
    fn assign(&mut self, lhs: &LValue, rhs: &Expr, span: Span, shared: bool) -> Sweeps {
        let stack = self.new_stack();
        let old = self.lvalue_expr(lhs, span);
        let mut fwd = vec![Stmt {
            kind: StmtKind::Push {
                stack,
                value: old.clone(),
            },
            span,
        }];
        let mut rev = Vec::new();
        let lhs_adj = self.adjoint(lhs.var).map(|a| LValue {
            var: a,
            path: lhs.path.clone(),
        });
        let grad = lhs_adj.as_ref().map(|adj_lv| {
            let g = self.temp(&old.ty, "assign_adj");
            let read = self.lvalue_expr(adj_lv, span);
            rev.push(self.let_stmt(g, read.clone()));
            let zeros = Expr {
                kind: ExprKind::ZerosLike(Box::new(read.clone())),
                ad: AdLevel::DataOnly,
                ..read
            };
            rev.push(Stmt {
                kind: StmtKind::Assign {
                    lhs: adj_lv.clone(),
                    rhs: zeros,
                },
                span,
            });
            g
        });
        let pop = Expr {
            kind: ExprKind::Pop(stack),
            ..old
        };
        rev.push(Stmt {
            kind: StmtKind::Assign {
                lhs: lhs.clone(),
                rhs: pop,
            },
            span,
        });
        let incoming = grad.map(|g| self.var_expr(g, span));
        let (pre, value, expr_rev) = self.expr_sweeps(rhs, incoming, shared);
        fwd.extend(pre);
        fwd.push(Stmt {
            kind: StmtKind::Assign {
                lhs: lhs.clone(),
                rhs: value,
            },
            span,
        });
        rev.extend(expr_rev);
        (fwd, rev)
    }

    /// Sweeps of an expression whose value's adjoint is `incoming`:
    /// (forward statements to run first, the value for the forward
    /// statement, reverse statements). `shared`: the forward computes the
    /// temporaries and the reverse reuses them; otherwise the reverse
    /// recomputes them from the restored state.
    pub(super) fn expr_sweeps(
        &mut self,
        e: &Expr,
        incoming: Option<Expr>,
        shared: bool,
    ) -> (Vec<Stmt>, Expr, Vec<Stmt>) {
        let Some(incoming) = incoming else {
            return (Vec::new(), e.clone(), Vec::new());
        };
        if e.ad == AdLevel::DataOnly || !Self::is_real_valued(&e.ty) {
            return (Vec::new(), e.clone(), Vec::new());
        }
        if !self.target_reads_exact && reads_target(e) {
            self.fail(
                "`target()` inside a loop, a branch or a user function (its value is not saved for the reverse sweep)",
                e.span,
            );
        }
        let anf = self.anf(e);
        let mut rev = if shared {
            Vec::new()
        } else {
            anf.stmts.clone()
        };
        rev.extend(self.zero_temp_adjoints(&anf.stmts));
        if let ExprKind::Var(v) = anf.atom.kind
            && let Some(a) = self.adjoint(v)
        {
            let lhs = LValue {
                var: a,
                path: Vec::new(),
            };
            rev.push(Stmt {
                kind: StmtKind::AddAssign { lhs, rhs: incoming },
                span: e.span,
            });
        }
        let reverse = self.reverse_anf_list(&anf.stmts, &rev);
        rev.extend(reverse);
        if shared {
            (anf.stmts, anf.atom, rev)
        } else {
            (Vec::new(), e.clone(), rev)
        }
    }

    /// `let t_adj = zeros_like(t)` for the temporaries a list binds.
    pub(super) fn zero_temp_adjoints(&mut self, stmts: &[Stmt]) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in stmts {
            let bound = match &s.kind {
                StmtKind::Let { var, .. } if !self.cond_temps.contains(var) => Some(*var),
                StmtKind::If { then, .. } => match then.last().map(|s| &s.kind) {
                    Some(StmtKind::Let { var, .. }) if self.cond_temps.contains(var) => Some(*var),
                    _ => None,
                },
                _ => None,
            };
            if let Some(t) = bound
                && let Some(a) = self.adjoint(t)
            {
                let zeros = self.zeros_like(t);
                out.push(self.let_stmt(a, zeros));
            }
        }
        out
    }

    /// Reverse of an A-normal-form list (already recomputed), after the
    /// reverse statements `before` (which add to the adjoints of the
    /// list's result and of any operand they use).
    ///
    /// A temporary whose adjoint nothing has added to — the operand of an
    /// argument check, which has no derivative — propagates nothing: Stan
    /// puts no check on its tape either. Propagating the zero would cost
    /// as much as a real adjoint (`Xᵀ * 0` for `check_finite(X * b)`) and
    /// give NaN where a data operand holds ±inf.
    pub(super) fn reverse_anf_list(&mut self, stmts: &[Stmt], before: &[Stmt]) -> Vec<Stmt> {
        let mut contributed = HashSet::new();
        add_contributions(before, &mut contributed);
        self.reverse_anf_stmts(stmts, &mut contributed)
    }

    fn reverse_anf_stmts(&mut self, stmts: &[Stmt], contributed: &mut HashSet<VarId>) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in stmts.iter().rev() {
            let emitted = out.len();
            match &s.kind {
                StmtKind::Let { var, value } => {
                    let Some(t_adj) = self.adjoint(*var) else {
                        continue;
                    };
                    if !contributed.contains(&t_adj) {
                        continue;
                    }
                    if self.cond_temps.contains(var) {
                        // `t = a` in a branch of `c ? a : b`.
                        if let ExprKind::Var(a) = value.kind
                            && let Some(a_adj) = self.adjoint(a)
                        {
                            let rhs = self.var_expr(t_adj, s.span);
                            out.push(Stmt {
                                kind: StmtKind::AddAssign {
                                    lhs: LValue {
                                        var: a_adj,
                                        path: Vec::new(),
                                    },
                                    rhs,
                                },
                                span: s.span,
                            });
                        }
                        continue;
                    }
                    match self.vjp(value, *var, t_adj) {
                        Ok(stmts) => out.extend(stmts),
                        Err(what) => self.fail(what, value.span),
                    }
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let mut then_contributed = contributed.clone();
                    let mut then_r = self.zero_temp_adjoints(then);
                    then_r.extend(self.reverse_anf_stmts(then, &mut then_contributed));
                    let mut else_r = self.zero_temp_adjoints(otherwise);
                    else_r.extend(self.reverse_anf_stmts(otherwise, contributed));
                    contributed.extend(then_contributed);
                    out.push(Stmt {
                        kind: StmtKind::If {
                            cond: cond.clone(),
                            then: then_r,
                            otherwise: else_r,
                        },
                        span: s.span,
                    });
                }
                _ => {}
            }
            add_contributions(&out[emitted..], contributed);
        }
        out
    }

    /// The value at an lvalue, as an expression.
    pub(super) fn lvalue_expr(&self, lv: &LValue, span: Span) -> Expr {
        let mut e = self.var_expr(lv.var, span);
        for step in &lv.path {
            e = match step {
                LValueStep::Index(idx) => {
                    let ty = index_type(&e.ty, idx);
                    Expr {
                        kind: ExprKind::Index(Box::new(e), idx.clone()),
                        ty,
                        ad: AdLevel::AutoDiff,
                        span,
                    }
                }
                LValueStep::TupleProj(k) => {
                    let ty = match &e.ty {
                        Type::Tuple(ts) => ts.get(k - 1).cloned().unwrap_or(Type::Error),
                        _ => Type::Error,
                    };
                    Expr {
                        kind: ExprKind::TupleProj(Box::new(e), *k),
                        ty,
                        ad: AdLevel::AutoDiff,
                        span,
                    }
                }
            };
        }
        e
    }
}

/// True if `e` reads the target (`target()`).
/// Adds to `contributed` every variable `stmts` (or statements nested in
/// them) may make nonzero: everything they write except by `let a =
/// zeros_like(x)`.
fn add_contributions(stmts: &[Stmt], contributed: &mut HashSet<VarId>) {
    use crate::mir::visit::{bodies, own_writes};
    for s in stmts {
        if let StmtKind::Let { value, .. } = &s.kind
            && matches!(value.kind, ExprKind::ZerosLike(_))
        {
            continue;
        }
        own_writes(s, &mut |v| {
            contributed.insert(v);
        });
        for body in bodies(s) {
            add_contributions(body, contributed);
        }
    }
}

fn reads_target(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Target => true,
        ExprKind::Prim(_, args)
        | ExprKind::Call(_, args)
        | ExprKind::ArrayLit(args)
        | ExprKind::RowVectorLit(args)
        | ExprKind::TupleLit(args) => args.iter().any(reads_target),
        ExprKind::Index(base, _) | ExprKind::TupleProj(base, _) => reads_target(base),
        ExprKind::Cond(a, b, c) => reads_target(a) || reads_target(b) || reads_target(c),
        _ => false,
    }
}

fn real(x: f64) -> Expr {
    Expr {
        kind: ExprKind::Real(x),
        ty: Type::Real,
        ad: AdLevel::DataOnly,
        span: Span::default(),
    }
}

/// Type of `base[idx...]`.
pub(super) fn index_type(base: &Type, idx: &[Index]) -> Type {
    let mut ty = base.clone();
    let mut rest = idx;
    while let Some((first, tail)) = rest.split_first() {
        let single = matches!(first, Index::Single(_));
        ty = match (&ty, single) {
            (Type::Array(elem), true) => (**elem).clone(),
            (Type::Array(_), false) => ty.clone(),
            (Type::Vector | Type::RowVector, true) => Type::Real,
            (Type::Vector | Type::RowVector, false) => ty.clone(),
            (Type::Matrix, _) if !tail.is_empty() => {
                let col_single = matches!(tail[0], Index::Single(_));
                let t = match (single, col_single) {
                    (true, true) => Type::Real,
                    (true, false) => Type::RowVector,
                    (false, true) => Type::Vector,
                    (false, false) => Type::Matrix,
                };
                rest = &tail[1..];
                ty = t;
                continue;
            }
            (Type::Matrix, true) => Type::RowVector,
            (Type::Matrix, false) => Type::Matrix,
            _ => Type::Error,
        };
        rest = tail;
    }
    ty
}

/// The argument expressions of a transform, in order.
fn transform_args(t: &Transform) -> Vec<Expr> {
    match t {
        Transform::Lower(a)
        | Transform::Upper(a)
        | Transform::Offset(a)
        | Transform::Multiplier(a) => vec![a.clone()],
        Transform::LowerUpper(a, b) | Transform::OffsetMultiplier(a, b) => {
            vec![a.clone(), b.clone()]
        }
        Transform::Tuple(ts) => ts.iter().flat_map(transform_args).collect(),
        _ => Vec::new(),
    }
}

/// `t` with its argument expressions replaced by `args` (same order as
/// [`transform_args`]).
fn with_transform_args(t: &Transform, args: &[Expr]) -> Transform {
    fn go(t: &Transform, args: &mut std::slice::Iter<'_, Expr>) -> Transform {
        let mut next = || {
            args.next()
                .cloned()
                .expect("one atom per transform argument")
        };
        match t {
            Transform::Lower(_) => Transform::Lower(next()),
            Transform::Upper(_) => Transform::Upper(next()),
            Transform::Offset(_) => Transform::Offset(next()),
            Transform::Multiplier(_) => Transform::Multiplier(next()),
            Transform::LowerUpper(_, _) => {
                let a = next();
                Transform::LowerUpper(a, next())
            }
            Transform::OffsetMultiplier(_, _) => {
                let a = next();
                Transform::OffsetMultiplier(a, next())
            }
            Transform::Tuple(ts) => Transform::Tuple(ts.iter().map(|t| go(t, args)).collect()),
            other => other.clone(),
        }
    }
    go(t, &mut args.iter())
}
