//! User-defined functions in the gradient program.
//!
//! A call `t = f(a₁, …, aₙ)` with parameter arguments is run as written in
//! the forward sweep. Its reverse calls the generated reverse function
//!
//! ```text
//! f__rev(a₁, …, aₙ, t̄ [, target̄]) -> (ā_i for each real-valued aᵢ [, target̄])
//! ```
//!
//! whose body is `f`'s body (jumps normalized, [`super::normalize`]) swept
//! like the log density: a forward sweep recomputing `f`'s values (without
//! adding to the target again), then the reverse sweep from `t̄`, then the
//! argument adjoints returned as a tuple. The caller adds each component
//! into the adjoint of the argument it passed. There is one reverse per
//! pattern of parameter / data arguments (`f__rev_0110`); in its body the
//! data arguments and the expressions over data only are marked data
//! (`demote_inactive`), so a call nested in `f` passes on the activity it
//! really has (mcycle_gp's `gpa` calls `spd_cov_exp_quad` with its data
//! eigenvalues: no adjoint of them is computed). `_lp` functions also take
//! the target's adjoint and hand back its new value (reading `target()`
//! changes it). Recursive and mutually recursive functions need nothing
//! special: `f__rev`'s reverse sweep calls `g__rev` for the calls inside
//! `f`, and every activation pushes and pops the shared stacks in balance.
//! The cost of recomputing is quadratic in the recursion depth; no value
//! lives across calls except on the stacks.
//!
//! Recomputations (inside `f__rev` and in the log density's reverse sweep)
//! call *quiet* copies of functions that add to the target or print:
//! the same body without `target +=` and `print`.

use std::collections::{HashMap, HashSet};

use super::normalize::Returns;
use super::sweep::{Ctx, Transformer};
use crate::mir::visit::{children_mut, for_each_expr, for_each_root_expr};
use crate::mir::{Expr, ExprKind, FunId, LValue, Origin, Stmt, StmtKind, VarId, VarInfo};
use crate::span::Span;
use crate::types::{AdLevel, Type};

type Sweeps = (Vec<Stmt>, Vec<Stmt>);

impl Transformer {
    /// The reverse of user function `f` (its body is made later, by
    /// [`Transformer::make_pending_reverses`]).
    pub(super) fn reverse_of(&mut self, f: FunId, active: &[bool]) -> FunId {
        let key = (f, active.to_vec());
        if let Some(&r) = self.rev_funs.get(&key) {
            return r;
        }
        let mut placeholder = self.program.functions[f.0 as usize].clone();
        placeholder.name = rev_name(&placeholder.name, active);
        placeholder.body = Vec::new();
        let id = FunId(self.program.functions.len() as u32);
        self.program.functions.push(placeholder);
        self.rev_funs.insert(key, id);
        self.pending.push((f, active.to_vec(), id));
        id
    }

    pub(super) fn make_pending_reverses(&mut self) {
        while let Some((f, active, rev)) = self.pending.pop() {
            let args = self.program.functions[f.0 as usize].args.clone();
            self.inactive = args
                .iter()
                .zip(&active)
                .filter(|(_, a)| !**a)
                .map(|(v, _)| *v)
                .collect();
            let made = self.reverse_function(f, &active);
            self.inactive.clear();
            self.program.functions[rev.0 as usize] = made;
        }
    }

    /// `_lp` and `_jacobian` functions add to the target: their reverse
    /// takes and returns the target's adjoint.
    fn adds_to_target(&self, f: FunId) -> bool {
        let fun = &self.program.functions[f.0 as usize];
        fun.uses_target || fun.name.ends_with("_jacobian")
    }

    fn arg_var(&mut self, ty: &Type, hint: &str) -> VarId {
        let id = VarId(self.program.vars.len() as u32);
        self.program.vars.push(VarInfo {
            name: format!("{hint}__{}", id.0),
            ty: ty.clone(),
            origin: Origin::FunctionArg,
            span: Span::default(),
        });
        id
    }

    /// The argument positions of `f` that carry an adjoint when the call
    /// passes parameters at the `active` positions.
    /// (Independent of which arguments are inactive while a reverse is
    /// being made, so a call site and the reverse it calls agree.)
    fn active_args(&self, f: FunId, active: &[bool]) -> Vec<usize> {
        let args = &self.program.functions[f.0 as usize].args;
        (0..args.len())
            .filter(|&k| {
                active[k] && Self::is_real_valued(&self.program.vars[args[k].0 as usize].ty)
            })
            .collect()
    }

    fn reverse_function(&mut self, f: FunId, active_mask: &[bool]) -> crate::mir::Function {
        let active = active_mask;
        let fun = self.program.functions[f.0 as usize].clone();
        let adds_to_target = self.adds_to_target(f);
        let span = fun.body.first().map_or(Span::default(), |s| s.span);
        let flag = self.flag("returned");
        let value = fun.ret.as_ref().map(|t| self.temp(t, "returned_value"));
        if let Some(v) = value {
            self.no_save.insert(v);
        }
        let mut body = self.normalize_function(&fun.body, Returns { flag, value });
        // Expressions over the arguments this reverse treats as data are
        // data too, so the calls nested in `f` are differentiated (and
        // their reverses specialised) for the arguments that really carry
        // an adjoint.
        for_each_root_expr(&mut body, &mut |e| demote_inactive(e, &self.inactive));
        let mut args = fun.args.clone();
        if let (Some(v), Some(ret)) = (value, &fun.ret)
            && Self::is_real_valued(ret)
        {
            let ret_adj = self.arg_var(ret, &format!("{}_ret_adj", fun.name));
            self.set_adjoint(v, ret_adj);
            args.push(ret_adj);
        }
        let saved_target_adj = self.target_adj;
        self.target_adj = self.arg_var(&Type::Real, "target_adj");
        if adds_to_target {
            args.push(self.target_adj);
        }
        let (mut out, rev) = self.list(
            &body,
            Ctx {
                top: true,
                replay: true,
                zero_locals: true,
            },
        );
        let active = self.active_args(f, active);
        let mut outputs = Vec::new();
        for &k in &active {
            let a = fun.args[k];
            let a_adj = self.adjoint(a).expect("active");
            let zeros = self.zeros_like(a);
            out.push(self.let_stmt(a_adj, zeros));
            outputs.push(self.var_expr(a_adj, span));
        }
        out.extend(rev);
        if adds_to_target {
            outputs.push(self.var_expr(self.target_adj, span));
        }
        let ty = Type::Tuple(outputs.iter().map(|o| o.ty.clone()).collect());
        out.push(Stmt {
            kind: StmtKind::Return(Some(Expr {
                kind: ExprKind::TupleLit(outputs),
                ty: ty.clone(),
                ad: AdLevel::AutoDiff,
                span,
            })),
            span,
        });
        self.target_adj = saved_target_adj;
        self.quiet_calls(&mut out);
        crate::mir::Function {
            name: rev_name(&fun.name, active_mask),
            args,
            ret: Some(ty),
            body: out,
            uses_target: false,
            uses_rng: false,
            external: false,
        }
    }

    /// Reverse of `t = f(args)` (atoms) with adjoint `ret_adj` (`None` for
    /// a void `_lp` function): add the argument adjoints.
    pub(super) fn call_vjp(
        &mut self,
        f: FunId,
        args: &[Expr],
        ret_adj: Option<Expr>,
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> Result<(), String> {
        let fun = self.program.functions[f.0 as usize].clone();
        let adds_to_target = self.adds_to_target(f);
        // Arguments that are data at this call site get no adjoint.
        let mask: Vec<bool> = args
            .iter()
            .map(|a| a.ad == AdLevel::AutoDiff && Self::is_real_valued(&a.ty))
            .collect();
        let active = self.active_args(f, &mask);
        if active.is_empty() && !adds_to_target {
            return Ok(());
        }
        let rev = self.reverse_of(f, &mask);
        let mut call_args = args.to_vec();
        call_args.extend(ret_adj);
        if adds_to_target {
            call_args.push(self.var_expr(self.target_adj, span));
        }
        let mut types: Vec<Type> = active
            .iter()
            .map(|&k| self.program.vars[fun.args[k].0 as usize].ty.clone())
            .collect();
        if adds_to_target {
            types.push(Type::Real);
        }
        let tuple_ty = Type::Tuple(types.clone());
        let r = self.temp(&tuple_ty, "rev");
        out.push(self.let_stmt(
            r,
            Expr {
                kind: ExprKind::Call(rev, call_args),
                ty: tuple_ty,
                ad: AdLevel::AutoDiff,
                span,
            },
        ));
        let component = |t: &Self, j: usize| Expr {
            kind: ExprKind::TupleProj(Box::new(t.var_expr(r, span)), j + 1),
            ty: types[j].clone(),
            ad: AdLevel::AutoDiff,
            span,
        };
        for (j, &k) in active.iter().enumerate() {
            let share = component(self, j);
            self.accumulate(&args[k], share, out);
        }
        if adds_to_target {
            let rhs = component(self, active.len());
            out.push(Stmt {
                kind: StmtKind::Assign {
                    lhs: LValue {
                        var: self.target_adj,
                        path: Vec::new(),
                    },
                    rhs,
                },
                span,
            });
        }
        Ok(())
    }

    /// A call statement: only `_lp` / `_jacobian` functions with parameter arguments
    /// contribute to the gradient (functions cannot change their
    /// arguments).
    pub(super) fn effect(&mut self, e: &Expr, span: Span, replay: bool, shared: bool) -> Sweeps {
        let keep = if replay {
            Vec::new()
        } else {
            vec![Stmt {
                kind: StmtKind::Effect(e.clone()),
                span,
            }]
        };
        let ExprKind::Call(f, args) = &e.kind else {
            return (keep, Vec::new());
        };
        if e.ad == AdLevel::DataOnly || !self.adds_to_target(*f) {
            return (keep, Vec::new());
        }
        let mut stmts = Vec::new();
        let atoms: Vec<Expr> = args.iter().map(|a| self.anf_into(a, &mut stmts)).collect();
        let mut rev = if shared { Vec::new() } else { stmts.clone() };
        rev.extend(self.zero_temp_adjoints(&stmts));
        if let Err(what) = self.call_vjp(*f, &atoms, None, span, &mut rev) {
            self.fail(what, span);
        }
        let reverse = self.reverse_anf_list(&stmts, &rev);
        rev.extend(reverse);
        if !shared {
            return (keep, rev);
        }
        let mut fwd = stmts;
        if !replay {
            fwd.push(Stmt {
                kind: StmtKind::Effect(Expr {
                    kind: ExprKind::Call(*f, atoms),
                    ..e.clone()
                }),
                span,
            });
        }
        (fwd, rev)
    }

    // ------------------------------------------------------------ quiet copies

    /// Functions (of the source program) that add to the target or print,
    /// directly or through the functions they call.
    fn effectful(&self) -> HashSet<FunId> {
        let n = self.original_functions;
        let fs = &self.program.functions[..n];
        let mut set: HashSet<FunId> = (0..n)
            .filter(|&i| has_effects(&fs[i].body))
            .map(|i| FunId(i as u32))
            .collect();
        loop {
            let before = set.len();
            for (i, f) in fs.iter().enumerate() {
                let mut called = Vec::new();
                collect_calls(&f.body, &mut called);
                if called.iter().any(|c| set.contains(c)) {
                    set.insert(FunId(i as u32));
                }
            }
            if set.len() == before {
                return set;
            }
        }
    }

    fn quiet_of(&mut self, f: FunId, effectful: &HashSet<FunId>) -> FunId {
        if !effectful.contains(&f) {
            return f;
        }
        if let Some(&q) = self.quiet_funs.get(&f) {
            return q;
        }
        let mut copy = self.program.functions[f.0 as usize].clone();
        copy.name = format!("{}__quiet", copy.name);
        copy.uses_target = false;
        let id = FunId(self.program.functions.len() as u32);
        self.quiet_funs.insert(f, id);
        let mut body = strip_effects(&copy.body);
        copy.body = Vec::new();
        self.program.functions.push(copy);
        self.remap_calls(&mut body, effectful);
        self.program.functions[id.0 as usize].body = body;
        id
    }

    fn remap_calls(&mut self, stmts: &mut [Stmt], effectful: &HashSet<FunId>) {
        let mut called = Vec::new();
        collect_calls(stmts, &mut called);
        let map: HashMap<FunId, FunId> = called
            .into_iter()
            .map(|f| (f, self.quiet_of(f, effectful)))
            .collect();
        for_each_expr(stmts, &mut |e| {
            if let ExprKind::Call(f, _) = &mut e.kind
                && let Some(q) = map.get(f)
            {
                *f = *q;
            }
        });
    }

    /// Replace calls of functions with effects by their quiet copies.
    pub(super) fn quiet_calls(&mut self, stmts: &mut [Stmt]) {
        let effectful = self.effectful();
        if !effectful.is_empty() {
            self.remap_calls(stmts, &effectful);
        }
    }
}

/// Mark `e` and its subexpressions data (`DataOnly`) where they read only
/// data: variables in `inactive`, and operations all of whose operands are
/// data. Only lowers activity (the checker's levels are the upper bound).
/// ODE solves keep their levels: their sensitivities were attached at
/// lowering for the operands the checker saw as autodiff.
fn demote_inactive(e: &mut Expr, inactive: &HashSet<VarId>) {
    match &e.kind {
        ExprKind::Var(v) => {
            if inactive.contains(v) {
                e.ad = AdLevel::DataOnly;
            }
            return;
        }
        ExprKind::Ode(_)
        | ExprKind::Target
        | ExprKind::Pop(_)
        | ExprKind::JacobianOn
        | ExprKind::Int(_)
        | ExprKind::Real(_)
        | ExprKind::Imag(_) => return,
        _ => {}
    }
    let mut operands = 0;
    let mut all_data = true;
    children_mut(e, &mut |c| {
        demote_inactive(c, inactive);
        operands += 1;
        all_data &= c.ad == AdLevel::DataOnly;
    });
    if operands > 0 && all_data {
        e.ad = AdLevel::DataOnly;
    }
}

/// `f__rev_101`: the reverse of `f` for calls passing parameters at the
/// positions marked 1.
fn rev_name(name: &str, active: &[bool]) -> String {
    let mask: String = active.iter().map(|&a| if a { '1' } else { '0' }).collect();
    format!("{name}__rev_{mask}")
}

fn has_effects(stmts: &[Stmt]) -> bool {
    let mut found = false;
    walk_stmts(stmts, &mut |s| {
        found |= matches!(
            s.kind,
            StmtKind::TargetAdd(_) | StmtKind::JacobianAdd(_) | StmtKind::Print(_)
        );
    });
    found
}

fn strip_effects(stmts: &[Stmt]) -> Vec<Stmt> {
    stmts
        .iter()
        .filter(|s| {
            !matches!(
                s.kind,
                StmtKind::TargetAdd(_) | StmtKind::JacobianAdd(_) | StmtKind::Print(_)
            )
        })
        .map(|s| {
            let kind = match &s.kind {
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => StmtKind::If {
                    cond: cond.clone(),
                    then: strip_effects(then),
                    otherwise: strip_effects(otherwise),
                },
                StmtKind::While { cond, body } => StmtKind::While {
                    cond: cond.clone(),
                    body: strip_effects(body),
                },
                StmtKind::For {
                    var,
                    lower,
                    upper,
                    body,
                } => StmtKind::For {
                    var: *var,
                    lower: lower.clone(),
                    upper: upper.clone(),
                    body: strip_effects(body),
                },
                StmtKind::Block(b) => StmtKind::Block(strip_effects(b)),
                other => other.clone(),
            };
            Stmt { kind, span: s.span }
        })
        .collect()
}

fn walk_stmts(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                walk_stmts(then, f);
                walk_stmts(otherwise, f);
            }
            StmtKind::While { body, .. }
            | StmtKind::For { body, .. }
            | StmtKind::ForDown { body, .. }
            | StmtKind::Block(body) => walk_stmts(body, f),
            _ => {}
        }
    }
}

fn collect_calls(stmts: &[Stmt], out: &mut Vec<FunId>) {
    let mut stmts = stmts.to_vec();
    for_each_expr(&mut stmts, &mut |e| {
        if let ExprKind::Call(f, _) = e.kind
            && !out.contains(&f)
        {
            out.push(f);
        }
    });
}
