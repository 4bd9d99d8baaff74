//! MIR → CFG IR: structured statements become basic blocks; user-function
//! calls are hoisted out of expressions into call terminators.

use super::cfg::{Block, BlockId, Function, FunctionKind, Program, Terminator};
use crate::diagnostic::{Diagnostic, Kind};
use crate::mir::{
    self, Expr, ExprKind, FunId, Index, LValue, LValueStep, Origin, Prim, Printable, SizedType,
    Stmt, StmtKind, VarId, VarInfo,
};
use crate::span::Span;
use crate::types::{AdLevel, Type};

/// A lowering error, boxed: the recursive lowering functions return it
/// through many frames and a `Diagnostic` is large.
type Lowering = Box<Diagnostic>;

/// Diagnostic code: the batching IR cannot express this construct yet.
pub const BATCH_NOT_SUPPORTED: &str = "E0301";

/// Lower `program`'s user functions and the given entry bodies (name, body)
/// to a CFG program, its tuple locals split by [`super::sra`].
pub fn lower(
    program: &mir::Program,
    entries: &[(&str, &[Stmt])],
    num_ad_stacks: u32,
) -> Result<Program, Vec<Diagnostic>> {
    let mut mir = program.clone();
    // Functions generated at lowering (reverse functions of ODE systems)
    // have stacks of their own, even in programs that are not gradients.
    let num_ad_stacks = num_ad_stacks.max(crate::mir::visit::stacks_in_use(program));
    let mut functions = Vec::new();
    let mut errors = Vec::new();
    for f in &program.functions {
        let kind = if f.external {
            FunctionKind::External
        } else {
            FunctionKind::User
        };
        let lowered = if kind == FunctionKind::External {
            Ok(Function {
                name: f.name.clone(),
                kind,
                params: f.args.clone(),
                ret: f.ret.clone(),
                locals: Vec::new(),
                blocks: Vec::new(),
            })
        } else {
            FnBuilder::new(&mut mir.vars).finish_function(
                &f.name,
                kind,
                &f.args,
                f.ret.clone(),
                &f.body,
            )
        };
        match lowered {
            Ok(fun) => functions.push(fun),
            Err(e) => errors.push(*e),
        }
    }
    for (name, body) in entries {
        match FnBuilder::new(&mut mir.vars).finish_function(
            name,
            FunctionKind::Entry,
            &[],
            None,
            body,
        ) {
            Ok(fun) => functions.push(fun),
            Err(e) => errors.push(*e),
        }
    }
    if errors.is_empty() {
        let mut program = Program {
            mir,
            functions,
            num_ad_stacks,
        };
        super::sra::split_tuple_locals(&mut program);
        Ok(program)
    } else {
        Err(errors)
    }
}

/// The CFG of a model's gradient program: its user functions and the entry
/// `log_density_gradient`.
pub fn lower_gradient(g: &crate::mir::GradProgram) -> Result<Program, Vec<Diagnostic>> {
    lower(
        &g.program,
        &[(super::GRADIENT_ENTRY, &g.body)],
        g.num_stacks,
    )
}

/// The CFG of what runs per draw after sampling: the parameters
/// constrained from the unconstrained point (entry `constrain_parameters`:
/// one `ReadParam` per parameter, in declaration order — left out when a
/// bound calls a function, which a CFG does not lower; the caller then
/// constrains each draw with the interpreter), transformed parameters
/// (entry `transformed_parameters`, without the Jacobian) then generated
/// quantities (entry `generated_quantities`), with the user functions.
pub fn lower_generated_quantities(program: &mir::Program) -> Result<Program, Vec<Diagnostic>> {
    let constrain: Vec<Stmt> = program
        .parameters
        .iter()
        .enumerate()
        .map(|(param, decl)| Stmt {
            kind: StmtKind::ReadParam {
                param,
                var: decl.var,
                transform: decl.transform.clone(),
            },
            // A failed transform points at the parameter, as the
            // interpreter's constrain does.
            span: program.vars[decl.var.0 as usize].span,
        })
        .collect();
    let mut entries: Vec<(&str, &[Stmt])> = Vec::with_capacity(3);
    if !program
        .parameters
        .iter()
        .any(|decl| transform_has_call(&decl.transform))
    {
        entries.push((super::CONSTRAIN_PARAMETERS_ENTRY, &constrain));
    }
    entries.push((
        super::TRANSFORMED_PARAMETERS_ENTRY,
        &program.transformed_parameters,
    ));
    entries.push((
        super::GENERATED_QUANTITIES_ENTRY,
        &program.generated_quantities,
    ));
    lower(program, &entries, 0)
}

struct Loop {
    continue_to: BlockId,
    break_to: BlockId,
}

struct FnBuilder<'a> {
    vars: &'a mut Vec<VarInfo>,
    blocks: Vec<(Vec<Stmt>, Option<Terminator>)>,
    current: BlockId,
    loops: Vec<Loop>,
    locals: Vec<VarId>,
    params: Vec<VarId>,
}

impl<'a> FnBuilder<'a> {
    fn new(vars: &'a mut Vec<VarInfo>) -> Self {
        FnBuilder {
            vars,
            blocks: vec![(Vec::new(), None)],
            current: BlockId(0),
            loops: Vec::new(),
            locals: Vec::new(),
            params: Vec::new(),
        }
    }

    fn finish_function(
        mut self,
        name: &str,
        kind: FunctionKind,
        params: &[VarId],
        ret: Option<Type>,
        body: &[Stmt],
    ) -> Result<Function, Lowering> {
        self.params = params.to_vec();
        self.stmts(body)?;
        if self.blocks[self.current.0 as usize].1.is_none() {
            if ret.is_some() {
                // The interpreter's error for falling off a non-void function.
                let span = body.last().map_or(Span::new(0, 0), |s| s.span);
                self.emit(Stmt {
                    kind: StmtKind::FatalError(vec![Printable::Str(format!(
                        "function `{name}` ended without returning a value"
                    ))]),
                    span,
                });
            }
            self.terminate(Terminator::Return(None));
        }
        let blocks = prune_unreachable(self.blocks);
        Ok(Function {
            name: name.to_string(),
            kind,
            params: self.params,
            ret,
            locals: self.locals,
            blocks,
        })
    }

    // ------------------------------------------------------------ blocks

    fn new_block(&mut self) -> BlockId {
        self.blocks.push((Vec::new(), None));
        BlockId(self.blocks.len() as u32 - 1)
    }

    fn switch_to(&mut self, b: BlockId) {
        self.current = b;
    }

    fn emit(&mut self, s: Stmt) {
        self.blocks[self.current.0 as usize].0.push(s);
    }

    /// End the current block; code after it (unreachable, e.g. after
    /// `break`) goes into a fresh block that pruning removes.
    fn terminate(&mut self, t: Terminator) {
        let slot = &mut self.blocks[self.current.0 as usize].1;
        debug_assert!(slot.is_none(), "block terminated twice");
        *slot = Some(t);
        let fresh = self.new_block();
        self.switch_to(fresh);
    }

    fn local(&mut self, v: VarId) {
        if !self.params.contains(&v) && !self.locals.contains(&v) {
            self.locals.push(v);
        }
    }

    fn temp(&mut self, ty: Type, span: Span) -> VarId {
        let id = VarId(self.vars.len() as u32);
        self.vars.push(VarInfo {
            name: format!("cfg__{}", id.0),
            ty,
            origin: Origin::Local,
            span,
        });
        self.locals.push(id);
        id
    }

    // ------------------------------------------------------------ statements

    fn stmts(&mut self, stmts: &[Stmt]) -> Result<(), Lowering> {
        stmts.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Lowering> {
        let span = s.span;
        let op = |kind| Stmt { kind, span };
        match &s.kind {
            StmtKind::Decl { var, ty, init } => {
                self.local(*var);
                let ty = self.sized(ty)?;
                let init = init.as_ref().map(|e| self.expr(e)).transpose()?;
                self.emit(op(StmtKind::Decl {
                    var: *var,
                    ty,
                    init,
                }));
            }
            StmtKind::Assign { lhs, rhs } => {
                let rhs = self.expr(rhs)?;
                let lhs = self.lvalue(lhs)?;
                self.emit(op(StmtKind::Assign { lhs, rhs }));
            }
            StmtKind::AddAssign { lhs, rhs } => {
                let rhs = self.expr(rhs)?;
                let lhs = self.lvalue(lhs)?;
                self.emit(op(StmtKind::AddAssign { lhs, rhs }));
            }
            StmtKind::Unpack { lhs, rhs } => {
                let rhs = self.expr(rhs)?;
                let lhs = lhs
                    .iter()
                    .map(|l| self.lvalue(l))
                    .collect::<Result<_, _>>()?;
                self.emit(op(StmtKind::Unpack { lhs, rhs }));
            }
            StmtKind::TargetAdd(e) => {
                let e = self.expr(e)?;
                self.emit(op(StmtKind::TargetAdd(e)));
            }
            StmtKind::JacobianAdd(e) => {
                let e = self.expr(e)?;
                self.emit(op(StmtKind::JacobianAdd(e)));
            }
            StmtKind::Let { var, value } => {
                self.local(*var);
                let value = self.expr(value)?;
                self.emit(op(StmtKind::Let { var: *var, value }));
            }
            StmtKind::Push { stack, value } => {
                let value = self.expr(value)?;
                self.emit(op(StmtKind::Push {
                    stack: *stack,
                    value,
                }));
            }
            StmtKind::Effect(e) => match &e.kind {
                ExprKind::Call(f, args) => {
                    let args = self.exprs_in_order(args)?;
                    self.call(*f, args, None);
                }
                _ => {
                    let e = self.expr(e)?;
                    self.emit(op(StmtKind::Effect(e)));
                }
            },
            StmtKind::Print(items) => {
                let items = self.printables(items)?;
                self.emit(op(StmtKind::Print(items)));
            }
            StmtKind::Reject(items) => {
                let items = self.printables(items)?;
                self.emit(op(StmtKind::Reject(items)));
            }
            StmtKind::FatalError(items) => {
                let items = self.printables(items)?;
                self.emit(op(StmtKind::FatalError(items)));
            }
            StmtKind::CheckConstraint { transform, .. }
            | StmtKind::ReadParam { transform, .. }
            | StmtKind::ParamAdjoint { transform, .. } => {
                if transform_has_call(transform) {
                    return Err(unsupported(
                        "a function call in a constraint's bounds",
                        span,
                    ));
                }
                if let StmtKind::ReadParam { var, .. } | StmtKind::ParamAdjoint { var, .. } =
                    &s.kind
                {
                    self.local(*var);
                }
                self.emit(s.clone());
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.expr(cond)?;
                let then_b = self.new_block();
                let else_b = self.new_block();
                let join = self.new_block();
                self.terminate(Terminator::Branch {
                    cond,
                    then: then_b,
                    otherwise: else_b,
                });
                self.switch_to(then_b);
                self.stmts(then)?;
                self.terminate(Terminator::Jump(join));
                self.switch_to(else_b);
                self.stmts(otherwise)?;
                self.terminate(Terminator::Jump(join));
                self.switch_to(join);
            }
            StmtKind::While { cond, body } => {
                let header = self.new_block();
                let body_b = self.new_block();
                let exit = self.new_block();
                self.terminate(Terminator::Jump(header));
                self.switch_to(header);
                let cond = self.expr(cond)?;
                self.terminate(Terminator::Branch {
                    cond,
                    then: body_b,
                    otherwise: exit,
                });
                self.switch_to(body_b);
                self.loop_body(body, header, exit)?;
                self.terminate(Terminator::Jump(header));
                self.switch_to(exit);
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => self.counted_loop(*var, lower, upper, body, true, span)?,
            StmtKind::ForDown {
                var,
                upper,
                lower,
                body,
            } => self.counted_loop(*var, upper, lower, body, false, span)?,
            StmtKind::Block(stmts) => self.stmts(stmts)?,
            StmtKind::Break | StmtKind::Continue => {
                let Some(l) = self.loops.last() else {
                    return Err(unsupported("`break` or `continue` outside a loop", span));
                };
                let to = if matches!(s.kind, StmtKind::Break) {
                    l.break_to
                } else {
                    l.continue_to
                };
                self.terminate(Terminator::Jump(to));
            }
            StmtKind::Return(e) => {
                let e = e.as_ref().map(|e| self.expr(e)).transpose()?;
                self.terminate(Terminator::Return(e));
            }
        }
        Ok(())
    }

    fn loop_body(
        &mut self,
        body: &[Stmt],
        continue_to: BlockId,
        break_to: BlockId,
    ) -> Result<(), Lowering> {
        self.loops.push(Loop {
            continue_to,
            break_to,
        });
        let r = self.stmts(body);
        self.loops.pop();
        r
    }

    /// `for (var in first:last)` counting up (`up`) or down; both bounds are
    /// evaluated once, `first` before `last` as the interpreter does.
    fn counted_loop(
        &mut self,
        var: VarId,
        first: &Expr,
        last: &Expr,
        body: &[Stmt],
        up: bool,
        span: Span,
    ) -> Result<(), Lowering> {
        self.local(var);
        let first = self.expr(first)?;
        let last = self.expr(last)?;
        let bound = self.temp(Type::Int, span);
        self.emit(let_stmt(var, first, span));
        self.emit(let_stmt(bound, last, span));
        let header = self.new_block();
        let body_b = self.new_block();
        let latch = self.new_block();
        let exit = self.new_block();
        self.terminate(Terminator::Jump(header));
        self.switch_to(header);
        let cmp = if up { Prim::Leq } else { Prim::Geq };
        self.terminate(Terminator::Branch {
            cond: int_prim(
                cmp,
                vec![
                    var_expr(var, Type::Int, span),
                    var_expr(bound, Type::Int, span),
                ],
                span,
            ),
            then: body_b,
            otherwise: exit,
        });
        self.switch_to(body_b);
        self.loop_body(body, latch, exit)?;
        self.terminate(Terminator::Jump(latch));
        self.switch_to(latch);
        let step = if up { Prim::Add } else { Prim::Sub };
        let next = int_prim(
            step,
            vec![
                var_expr(var, Type::Int, span),
                Expr {
                    kind: ExprKind::Int(1),
                    ty: Type::Int,
                    ad: AdLevel::DataOnly,
                    span,
                },
            ],
            span,
        );
        self.emit(let_stmt(var, next, span));
        self.terminate(Terminator::Jump(header));
        self.switch_to(exit);
        Ok(())
    }

    fn call(&mut self, fun: FunId, args: Vec<Expr>, ret: Option<VarId>) {
        let next = self.new_block();
        self.terminate(Terminator::Call {
            fun,
            args,
            ret,
            next,
        });
        self.switch_to(next);
    }

    // ------------------------------------------------------------ expressions

    /// `e` without user-function calls: each call is run before, by a call
    /// terminator, into a temporary.
    fn expr(&mut self, e: &Expr) -> Result<Expr, Lowering> {
        if !contains_call(e) {
            return Ok(e.clone());
        }
        let span = e.span;
        let rebuilt = |kind| Expr {
            kind,
            ty: e.ty.clone(),
            ad: e.ad,
            span,
        };
        Ok(match &e.kind {
            ExprKind::Call(f, args) => {
                let args = self.exprs_in_order(args)?;
                let tmp = self.temp(e.ty.clone(), span);
                self.call(*f, args, Some(tmp));
                var_expr(tmp, e.ty.clone(), span)
            }
            ExprKind::Cond(c, t, f) => {
                // Only the taken branch runs, so its calls must stay behind
                // a branch.
                let c = self.expr(c)?;
                let tmp = self.temp(e.ty.clone(), span);
                let then_b = self.new_block();
                let else_b = self.new_block();
                let join = self.new_block();
                self.terminate(Terminator::Branch {
                    cond: c,
                    then: then_b,
                    otherwise: else_b,
                });
                for (b, arm) in [(then_b, t), (else_b, f)] {
                    self.switch_to(b);
                    let v = self.expr(arm)?;
                    self.emit(let_stmt(tmp, v, span));
                    self.terminate(Terminator::Jump(join));
                }
                self.switch_to(join);
                var_expr(tmp, e.ty.clone(), span)
            }
            ExprKind::Prim(p, args) => rebuilt(ExprKind::Prim(*p, self.exprs_in_order(args)?)),
            // A higher-order op: its system function is run by the
            // executors' per-lane fallback, not by a call terminator; only
            // calls inside its operands are hoisted.
            ExprKind::Ode(call) => {
                let operands: Vec<Expr> = call.operands().into_iter().cloned().collect();
                let operands = self.exprs_in_order(&operands)?;
                rebuilt(ExprKind::Ode(Box::new(call.with_operands(operands))))
            }
            ExprKind::ArrayLit(items) => rebuilt(ExprKind::ArrayLit(self.exprs_in_order(items)?)),
            ExprKind::RowVectorLit(items) => {
                rebuilt(ExprKind::RowVectorLit(self.exprs_in_order(items)?))
            }
            ExprKind::TupleLit(items) => rebuilt(ExprKind::TupleLit(self.exprs_in_order(items)?)),
            ExprKind::TupleProj(base, k) => {
                rebuilt(ExprKind::TupleProj(Box::new(self.expr(base)?), *k))
            }
            ExprKind::ZerosLike(inner) => rebuilt(ExprKind::ZerosLike(Box::new(self.expr(inner)?))),
            ExprKind::Partial { prim, arg, args } => rebuilt(ExprKind::Partial {
                prim: *prim,
                arg: *arg,
                args: self.exprs_in_order(args)?,
            }),
            ExprKind::Index(base, idx) => {
                // Base first, then the indexes, as the interpreter evaluates.
                let mut children = vec![(**base).clone()];
                children.extend(index_exprs(idx).into_iter().cloned());
                let mut done = self.exprs_in_order(&children)?.into_iter();
                let base = done.next().expect("base");
                let idx = rebuild_indexes(idx, &mut done);
                rebuilt(ExprKind::Index(Box::new(base), idx))
            }
            ExprKind::Int(_)
            | ExprKind::Real(_)
            | ExprKind::Imag(_)
            | ExprKind::Var(_)
            | ExprKind::Target
            | ExprKind::JacobianOn
            | ExprKind::Pop(_) => e.clone(),
        })
    }

    /// Sibling operands evaluated left to right: operands before the last
    /// call-containing one that have effects are bound to temporaries first,
    /// so hoisting a later call does not move it before their effects.
    fn exprs_in_order(&mut self, es: &[Expr]) -> Result<Vec<Expr>, Lowering> {
        let Some(last_call) = es.iter().rposition(contains_call) else {
            return Ok(es.to_vec());
        };
        let mut out = Vec::with_capacity(es.len());
        for (i, e) in es.iter().enumerate() {
            if i < last_call && has_effect(e) {
                let v = self.expr(e)?;
                let tmp = self.temp(e.ty.clone(), e.span);
                self.emit(let_stmt(tmp, v, e.span));
                out.push(var_expr(tmp, e.ty.clone(), e.span));
            } else {
                out.push(self.expr(e)?);
            }
        }
        Ok(out)
    }

    fn lvalue(&mut self, lv: &LValue) -> Result<LValue, Lowering> {
        let mut path = Vec::with_capacity(lv.path.len());
        for step in &lv.path {
            path.push(match step {
                LValueStep::Index(idx) => {
                    let children: Vec<Expr> = index_exprs(idx).into_iter().cloned().collect();
                    let mut done = self.exprs_in_order(&children)?.into_iter();
                    LValueStep::Index(rebuild_indexes(idx, &mut done))
                }
                LValueStep::TupleProj(k) => LValueStep::TupleProj(*k),
            });
        }
        Ok(LValue { var: lv.var, path })
    }

    fn sized(&mut self, ty: &SizedType) -> Result<SizedType, Lowering> {
        ty.try_map_sizes(&mut |n| self.expr(n))
    }

    fn printables(&mut self, items: &[Printable]) -> Result<Vec<Printable>, Lowering> {
        let exprs: Vec<Expr> = items
            .iter()
            .filter_map(|p| match p {
                Printable::Expr(e) => Some(e.clone()),
                Printable::Str(_) => None,
            })
            .collect();
        let mut done = self.exprs_in_order(&exprs)?.into_iter();
        Ok(items
            .iter()
            .map(|p| match p {
                Printable::Expr(_) => Printable::Expr(done.next().expect("printable")),
                Printable::Str(s) => Printable::Str(s.clone()),
            })
            .collect())
    }
}

// ------------------------------------------------------------ helpers

fn unsupported(what: &str, span: Span) -> Lowering {
    Box::new(
        Diagnostic::error(
            Kind::Semantic,
            BATCH_NOT_SUPPORTED,
            format!("not yet supported by the batching IR: {what}"),
            span,
        )
        .with_label("bat cannot batch this yet"),
    )
}

fn let_stmt(var: VarId, value: Expr, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Let { var, value },
        span,
    }
}

fn var_expr(v: VarId, ty: Type, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Var(v),
        ty,
        ad: AdLevel::AutoDiff,
        span,
    }
}

fn int_prim(p: Prim, args: Vec<Expr>, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Prim(p, args),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    }
}

fn index_exprs(idx: &[Index]) -> Vec<&Expr> {
    let mut out = Vec::new();
    for i in idx {
        match i {
            Index::All => {}
            Index::Single(e) | Index::Multi(e) | Index::Upfrom(e) | Index::Downto(e) => out.push(e),
            Index::Between(a, b) => {
                out.push(a);
                out.push(b);
            }
        }
    }
    out
}

fn rebuild_indexes(idx: &[Index], done: &mut impl Iterator<Item = Expr>) -> Vec<Index> {
    let mut next = || done.next().expect("index operand");
    idx.iter()
        .map(|i| match i {
            Index::All => Index::All,
            Index::Single(_) => Index::Single(next()),
            Index::Multi(_) => Index::Multi(next()),
            Index::Upfrom(_) => Index::Upfrom(next()),
            Index::Downto(_) => Index::Downto(next()),
            Index::Between(_, _) => {
                let a = next();
                let b = next();
                Index::Between(a, b)
            }
        })
        .collect()
}

/// Does `e` contain a node satisfying `pred`?
fn any_node(e: &Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
    if pred(e) {
        return true;
    }
    let any = |es: &[Expr]| es.iter().any(|x| any_node(x, pred));
    match &e.kind {
        ExprKind::Prim(_, args)
        | ExprKind::Call(_, args)
        | ExprKind::ArrayLit(args)
        | ExprKind::RowVectorLit(args)
        | ExprKind::TupleLit(args)
        | ExprKind::Partial { args, .. } => any(args),
        ExprKind::Index(base, idx) => {
            any_node(base, pred) || index_exprs(idx).into_iter().any(|x| any_node(x, pred))
        }
        ExprKind::TupleProj(base, _) | ExprKind::ZerosLike(base) => any_node(base, pred),
        ExprKind::Ode(call) => call.operands().into_iter().any(|x| any_node(x, pred)),
        ExprKind::Cond(c, t, f) => any_node(c, pred) || any_node(t, pred) || any_node(f, pred),
        ExprKind::Int(_)
        | ExprKind::Real(_)
        | ExprKind::Imag(_)
        | ExprKind::Var(_)
        | ExprKind::Target
        | ExprKind::JacobianOn
        | ExprKind::Pop(_) => false,
    }
}

pub(crate) fn contains_call(e: &Expr) -> bool {
    any_node(e, &|x| matches!(x.kind, ExprKind::Call(..)))
}

/// Evaluating `e` changes or observes state a call could change: random
/// draws, stack pops, reading the target.
fn has_effect(e: &Expr) -> bool {
    any_node(e, &|x| match &x.kind {
        ExprKind::Call(..) | ExprKind::Pop(_) | ExprKind::Target => true,
        ExprKind::Prim(p, _) => p.is_rng(),
        _ => false,
    })
}

fn transform_has_call(t: &mir::Transform) -> bool {
    use mir::Transform as T;
    match t {
        T::Lower(a) | T::Upper(a) | T::Offset(a) | T::Multiplier(a) => contains_call(a),
        T::LowerUpper(a, b) | T::OffsetMultiplier(a, b) => contains_call(a) || contains_call(b),
        T::Tuple(items) => items.iter().any(transform_has_call),
        _ => false,
    }
}

/// Drop blocks not reachable from the entry and renumber the rest in
/// first-visit order.
fn prune_unreachable(blocks: Vec<(Vec<Stmt>, Option<Terminator>)>) -> Vec<Block> {
    let n = blocks.len();
    let mut order = Vec::new();
    let mut new_id = vec![u32::MAX; n];
    let mut work = vec![0usize];
    while let Some(b) = work.pop() {
        if new_id[b] != u32::MAX {
            continue;
        }
        new_id[b] = order.len() as u32;
        order.push(b);
        let succ = blocks[b]
            .1
            .as_ref()
            .map(Terminator::successors)
            .unwrap_or_default();
        for s in succ.into_iter().rev() {
            work.push(s.0 as usize);
        }
    }
    let mut blocks: Vec<Option<(Vec<Stmt>, Option<Terminator>)>> =
        blocks.into_iter().map(Some).collect();
    let renumber = |b: BlockId| BlockId(new_id[b.0 as usize]);
    order
        .into_iter()
        .map(|old| {
            let (ops, term) = blocks[old].take().expect("visited once");
            let term = match term.expect("reachable blocks are terminated") {
                Terminator::Jump(b) => Terminator::Jump(renumber(b)),
                Terminator::Branch {
                    cond,
                    then,
                    otherwise,
                } => Terminator::Branch {
                    cond,
                    then: renumber(then),
                    otherwise: renumber(otherwise),
                },
                Terminator::Call {
                    fun,
                    args,
                    ret,
                    next,
                } => Terminator::Call {
                    fun,
                    args,
                    ret,
                    next: renumber(next),
                },
                Terminator::Return(e) => Terminator::Return(e),
            };
            Block { ops, term }
        })
        .collect()
}
