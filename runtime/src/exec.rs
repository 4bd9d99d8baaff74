//! The evaluator: expressions, statements, user function calls.

use super::error::{ErrorKind, Result, RuntimeError, mismatch};
use super::index::{self, Ix};
use super::rng::Rng;
use super::values::{int, real};
use super::{prims, rng};
use language::data::Shape;
use language::mir::{
    Expr, ExprKind, Index, LValue, LValueStep, Printable, Program, SizedType, Stmt, StmtKind, VarId,
};
use language::types::Type;
use language::value::Value;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Deepest user-function recursion before the run is stopped (the stack
/// grows as needed, see [`Machine::call`]). Stan itself has no fixed
/// limit; 100 (bat's first choice) stopped recursive functions over a few
/// hundred data points that Stan runs. The CUDA backend keeps a lower one
/// of its own (its per-lane stacks are this deep in device memory).
pub const MAX_CALL_DEPTH: usize = 1000;

/// Runs one nested user-function call made by host recursion. Each
/// nested call takes tens of KiB of stack in unoptimised builds: the stack
/// grows on the heap when it runs low, so [`MAX_CALL_DEPTH`] is reached on
/// any thread (2 MiB test threads included) instead of overflowing. Every
/// runner that recurses on the host (the interpreter, the CFG runner,
/// backend-cpu's local executor) calls through it.
pub fn nested_call<R>(call: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, call)
}

/// The variables of one user-function call. Keyed by small integers and
/// built on every call: hashed by a multiplication, not SipHash (function
/// calls dominate the cost of running ODE systems and the sampler).
pub(crate) type Frame = HashMap<VarId, Value, BuildHasherDefault<IntHasher>>;

/// Fibonacci hashing of small integers such as a [`VarId`] and of
/// addresses (the batched executors' per-statement tables).
#[derive(Default)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0 ^ u64::from(i)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, i: usize) {
        // Addresses are multiples of 8: their low bits carry nothing.
        self.0 = (self.0 ^ (i as u64 >> 3)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// How a statement finished.
pub(crate) enum Flow {
    Normal,
    Break,
    Continue,
    Return(Option<Value>),
}

/// The interpreter state for one evaluation.
pub(crate) struct Machine<'p> {
    pub program: &'p Program,
    /// Data and transformed data, shared by every evaluation of a model
    /// (read-only here; a write copies the value into `globals`).
    pub(crate) base: &'p [Option<Value>],
    /// Values set during this evaluation; they shadow `base`.
    pub globals: Vec<Option<Value>>,
    /// Variables of the user-function call being run (functions see only
    /// their own arguments and locals).
    pub(crate) locals: Option<Frame>,
    pub target: f64,
    pub jacobian: bool,
    pub output: Vec<String>,
    pub rng: Option<Rng>,
    /// Stacks, input and gradient output of a gradient program.
    pub(crate) grad: Option<super::grad::GradState>,
    /// Supplies the program's external functions ([`language::mir::Function::external`]).
    pub(crate) host: Option<&'p mut (dyn super::Host + 'p)>,
    pub(crate) depth: usize,
}

impl<'p> Machine<'p> {
    pub fn new(program: &'p Program) -> Machine<'p> {
        Machine::with_base(program, &[])
    }

    /// A machine reading data and transformed data from `base`.
    pub fn with_base(program: &'p Program, base: &'p [Option<Value>]) -> Machine<'p> {
        Machine {
            program,
            base,
            globals: vec![None; program.vars.len()],
            locals: None,
            target: 0.0,
            jacobian: true,
            output: Vec::new(),
            rng: None,
            grad: None,
            host: None,
            depth: 0,
        }
    }

    fn name(&self, var: VarId) -> &str {
        &self.program.vars[var.0 as usize].name
    }

    pub fn get(&self, var: VarId) -> Result<&Value> {
        let found = match &self.locals {
            Some(locals) => locals.get(&var),
            None => {
                let i = var.0 as usize;
                self.globals[i]
                    .as_ref()
                    .or_else(|| self.base.get(i).and_then(Option::as_ref))
            }
        };
        found.ok_or_else(|| {
            RuntimeError::fatal(format!(
                "variable `{}` used before it has a value",
                self.name(var)
            ))
        })
    }

    pub fn set(&mut self, var: VarId, value: Value) {
        match &mut self.locals {
            Some(locals) => {
                locals.insert(var, value);
            }
            None => self.globals[var.0 as usize] = Some(value),
        }
    }

    pub(crate) fn slot_mut(&mut self, var: VarId) -> Result<&mut Value> {
        self.slot(var)
    }

    fn slot(&mut self, var: VarId) -> Result<&mut Value> {
        let program = self.program;
        let i = var.0 as usize;
        if self.locals.is_none() && self.globals[i].is_none() {
            self.globals[i] = self.base.get(i).cloned().flatten();
        }
        let found = match &mut self.locals {
            Some(locals) => locals.get_mut(&var),
            None => self.globals[var.0 as usize].as_mut(),
        };
        found.ok_or_else(|| {
            RuntimeError::fatal(format!(
                "variable `{}` assigned before declared",
                program.vars[i].name
            ))
        })
    }

    // ------------------------------------------------------------ sizes

    /// Evaluate the size expressions of a declared type. A size too large
    /// to allocate is an error (data can ask for any size, and the
    /// allocation would abort the process).
    pub fn shape(&mut self, ty: &SizedType) -> Result<Shape> {
        let shape = shape_with(&mut |e| self.eval(e), ty)?;
        let numbers = numbers_in(&shape);
        if numbers > MAX_DECLARED_NUMBERS {
            return Err(RuntimeError::new(
                ErrorKind::Fatal,
                format!(
                    "a variable of {numbers} numbers is too large to allocate (at most {MAX_DECLARED_NUMBERS})"
                ),
            ));
        }
        Ok(shape)
    }

    // ------------------------------------------------------------ expressions

    pub fn eval(&mut self, e: &Expr) -> Result<Value> {
        self.eval_inner(e).map_err(|err| err.at(e.span))
    }

    fn eval_inner(&mut self, e: &Expr) -> Result<Value> {
        Ok(match &e.kind {
            ExprKind::Int(i) => Value::Int(*i),
            ExprKind::Real(x) => Value::Real(*x),
            ExprKind::Imag(x) => Value::Complex(0.0, *x),
            ExprKind::Var(v) => self.get(*v)?.clone(),
            ExprKind::Prim(p, args) => {
                let args = self.eval_all(args)?;
                if p.is_rng() {
                    let state = self.rng.as_mut().ok_or_else(|| {
                        RuntimeError::fatal(format!(
                            "`{}` draws random numbers outside generated quantities",
                            p.name()
                        ))
                    })?;
                    return rng::draw(*p, state, &args);
                }
                prims::eval(*p, &args)?
            }
            ExprKind::Call(f, args) => {
                let args = self.eval_all(args)?;
                self.call(*f, args)?
                    .ok_or_else(|| RuntimeError::fatal("a void function was used as a value"))?
            }
            ExprKind::Index(base, idx) => {
                let base = self.eval(base)?;
                let idx = self.indexes(idx)?;
                index::get(&base, &idx)?
            }
            ExprKind::TupleProj(base, k) => match self.eval(base)? {
                Value::Tuple(mut items) if *k >= 1 && *k <= items.len() => items.swap_remove(k - 1),
                other => return Err(mismatch("tuple projection", &other)),
            },
            ExprKind::Cond(c, t, f) => {
                if truthy(&self.eval(c)?)? {
                    promote(self.eval(t)?, &e.ty)
                } else {
                    promote(self.eval(f)?, &e.ty)
                }
            }
            ExprKind::ArrayLit(items) => promote(Value::Array(self.eval_all(items)?), &e.ty),
            ExprKind::RowVectorLit(items) => {
                let items = self.eval_all(items)?;
                row_vector_literal(items)?
            }
            ExprKind::TupleLit(items) => promote(Value::Tuple(self.eval_all(items)?), &e.ty),
            ExprKind::Target => Value::Real(self.target),
            ExprKind::JacobianOn => Value::Int(self.jacobian as i64),
            ExprKind::Pop(stack) => self.pop_stack(*stack)?,
            ExprKind::Partial { prim, arg, args } => self.partial(*prim, *arg, args)?,
            ExprKind::ZerosLike(inner) => super::grad::zeros_like(&self.eval(inner)?),
            ExprKind::Ode(call) => self.ode(call)?,
        })
    }

    /// Out of line: `eval` recurses once per nested call of user functions,
    /// so its stack frame must stay small (deep recursion in debug builds).
    #[inline(never)]
    fn ode(&mut self, call: &language::mir::OdeSolve) -> Result<Value> {
        let operands = call
            .operands()
            .into_iter()
            .map(|a| self.eval(a))
            .collect::<Result<Vec<_>>>()?;
        super::ode::solve(self.program, call, &operands)
    }

    fn eval_all(&mut self, es: &[Expr]) -> Result<Vec<Value>> {
        es.iter().map(|e| self.eval(e)).collect()
    }

    pub(crate) fn indexes_pub(&mut self, idx: &[Index]) -> Result<Vec<Ix>> {
        self.indexes(idx)
    }

    fn indexes(&mut self, idx: &[Index]) -> Result<Vec<Ix>> {
        idx.iter()
            .map(|i| {
                Ok(match i {
                    Index::All => Ix::All,
                    Index::Single(e) => Ix::Single(int(&self.eval(e)?)?),
                    Index::Multi(e) => Ix::Multi(super::values::flat_ints(&self.eval(e)?)?),
                    Index::Upfrom(e) => Ix::Upfrom(int(&self.eval(e)?)?),
                    Index::Downto(e) => Ix::Downto(int(&self.eval(e)?)?),
                    Index::Between(a, b) => Ix::Between(int(&self.eval(a)?)?, int(&self.eval(b)?)?),
                })
            })
            .collect()
    }

    /// Call user function `f`; `None` for void functions.
    pub fn call(&mut self, f: language::mir::FunId, args: Vec<Value>) -> Result<Option<Value>> {
        let fun = &self.program.functions[f.0 as usize];
        if fun.external {
            let host = self.host.as_mut().ok_or_else(|| {
                RuntimeError::fatal(format!(
                    "external function `{}` called without a host to supply it",
                    fun.name
                ))
            })?;
            return host.call_external(&fun.name, args);
        }
        if self.depth >= MAX_CALL_DEPTH {
            return Err(RuntimeError::too_deep(&fun.name, MAX_CALL_DEPTH));
        }
        let mut frame = Frame::default();
        for (&var, value) in fun.args.iter().zip(args) {
            frame.insert(var, value);
        }
        let saved = self.locals.replace(frame);
        self.depth += 1;
        let flow = nested_call(|| self.block(&fun.body));
        self.depth -= 1;
        self.locals = saved;
        let ret = &fun.ret;
        match flow? {
            Flow::Return(Some(v)) => Ok(Some(match ret {
                Some(t) => promote(v, t),
                None => v,
            })),
            _ if ret.is_some() => Err(RuntimeError::fatal(format!(
                "function `{}` ended without returning a value",
                fun.name
            ))),
            _ => Ok(None),
        }
    }

    // ------------------------------------------------------------ statements

    pub fn block(&mut self, stmts: &[Stmt]) -> Result<Flow> {
        for s in stmts {
            match self.stmt(s).map_err(|e| e.at(s.span))? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    /// Run `s`, an op of a lowered block (`ir` names the IR for the
    /// error): ops are straight-line by construction, so control flow out
    /// of one is a lowering bug. The one-lane CFG and PC runners' step.
    pub(crate) fn block_op(&mut self, s: &Stmt, ir: &str) -> Result<()> {
        match self.stmt(s).map_err(|e| e.at(s.span))? {
            Flow::Normal => Ok(()),
            _ => Err(RuntimeError::fatal(format!(
                "a {ir} op changed control flow (lowering bug)"
            ))),
        }
    }

    /// Where a block's two-way branch on `cond` goes (the one-lane CFG and
    /// PC runners').
    pub(crate) fn branch<B>(&mut self, cond: &Expr, then: B, otherwise: B) -> Result<B> {
        Ok(if truthy(&self.eval(cond)?)? {
            then
        } else {
            otherwise
        })
    }

    pub(crate) fn stmt(&mut self, s: &Stmt) -> Result<Flow> {
        match &s.kind {
            StmtKind::Decl { var, ty, init } => {
                let shape = self.shape(ty)?;
                let init = init.as_ref().map(|e| self.eval(e)).transpose()?;
                let value = declared_value(self.name(*var), &shape, init)?;
                self.set(*var, value);
            }
            StmtKind::Assign { lhs, rhs } => {
                let v = self.eval(rhs)?;
                self.assign(lhs, v)?;
            }
            StmtKind::Unpack { lhs, rhs } => match self.eval(rhs)? {
                Value::Tuple(items) if items.len() == lhs.len() => {
                    for (lv, v) in lhs.iter().zip(items) {
                        self.assign(lv, v)?;
                    }
                }
                other => return Err(mismatch("tuple unpacking", &other)),
            },
            StmtKind::TargetAdd(e) => {
                let v = self.eval(e)?;
                self.target += super::values::flat(&v).iter().sum::<f64>();
            }
            StmtKind::JacobianAdd(e) => {
                let v = self.eval(e)?;
                if self.jacobian {
                    self.target += super::values::flat(&v).iter().sum::<f64>();
                }
            }
            StmtKind::Let { var, value } => {
                let v = self.eval(value)?;
                self.set(*var, v);
            }
            StmtKind::CheckConstraint { var, transform } => {
                let value = self.get(*var)?.clone();
                let name = self.name(*var).to_string();
                super::constrain::check_constraint(self, &name, &value, transform)?;
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let branch = if truthy(&self.eval(cond)?)? {
                    then
                } else {
                    otherwise
                };
                return self.block(branch);
            }
            StmtKind::While { cond, body } => {
                while truthy(&self.eval(cond)?)? {
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        Flow::Normal | Flow::Continue => {}
                    }
                }
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let lo = int(&self.eval(lower)?)?;
                let hi = int(&self.eval(upper)?)?;
                let mut i = lo;
                while i <= hi {
                    self.set(*var, Value::Int(i));
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        Flow::Normal | Flow::Continue => {}
                    }
                    i += 1;
                }
            }
            StmtKind::Block(stmts) => return self.block(stmts),
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            StmtKind::Return(e) => {
                let v = e.as_ref().map(|e| self.eval(e)).transpose()?;
                return Ok(Flow::Return(v));
            }
            StmtKind::Effect(e) => {
                if let ExprKind::Call(f, args) = &e.kind {
                    let args = self.eval_all(args)?;
                    self.call(*f, args)?;
                } else {
                    self.eval(e)?;
                }
            }
            StmtKind::Print(items) => {
                let text = self.printables(items)?;
                self.output.push(text);
            }
            StmtKind::Reject(items) => {
                let text = self.printables(items)?;
                return Err(RuntimeError::rejection(text).at(s.span));
            }
            StmtKind::FatalError(items) => {
                let text = self.printables(items)?;
                return Err(RuntimeError::fatal(text).at(s.span));
            }
            StmtKind::AddAssign { lhs, rhs } => self.add_assign(lhs, rhs)?,
            StmtKind::Push { stack, value } => self.push_stack(*stack, value)?,
            StmtKind::ForDown {
                var,
                upper,
                lower,
                body,
            } => {
                let hi = int(&self.eval(upper)?)?;
                let lo = int(&self.eval(lower)?)?;
                let mut i = hi;
                while i >= lo {
                    self.set(*var, Value::Int(i));
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        Flow::Normal | Flow::Continue => {}
                    }
                    i -= 1;
                }
            }
            StmtKind::ReadParam {
                param,
                var,
                transform,
            } => self.read_param(*param, *var, transform)?,
            StmtKind::ParamAdjoint {
                param,
                var_adj,
                lp_adj,
                transform,
                arg_adjs,
                ..
            } => self.param_adjoint(*param, *var_adj, *lp_adj, transform, arg_adjs)?,
        }
        Ok(Flow::Normal)
    }

    fn printables(&mut self, items: &[Printable]) -> Result<String> {
        let mut out = String::new();
        for item in items {
            match item {
                Printable::Str(s) => out.push_str(s),
                Printable::Expr(e) => out.push_str(&super::print::value(&self.eval(e)?)),
            }
        }
        Ok(out)
    }

    fn assign(&mut self, lhs: &LValue, value: Value) -> Result<()> {
        // Evaluate every index before touching the variable (the right-hand
        // side may alias it; it is already a value here).
        let mut steps = Vec::new();
        for step in &lhs.path {
            steps.push(match step {
                LValueStep::Index(idx) => Step::Index(self.indexes(idx)?),
                LValueStep::TupleProj(k) => Step::Proj(*k),
            });
        }
        let name = self.name(lhs.var).to_string();
        let slot = self.slot(lhs.var)?;
        assign_path(slot, &steps, value).map_err(|e| RuntimeError {
            message: format!("{name}: {}", e.message),
            ..e
        })
    }
}

/// One evaluated step of an assignment's left-hand side.
pub enum Step {
    Index(Vec<Ix>),
    Proj(usize),
}

pub(crate) fn assign_path(slot: &mut Value, steps: &[Step], value: Value) -> Result<()> {
    match steps.split_first() {
        None => {
            check_shape("assignment", slot, &value)?;
            *slot = index::promote_like(value, slot);
            Ok(())
        }
        Some((Step::Index(idx), [])) => index::set(slot, idx, value),
        Some((Step::Index(idx), rest)) => {
            // Only single indexes can precede a tuple projection.
            let mut inner = index::get(slot, idx)?;
            assign_path(&mut inner, rest, value)?;
            index::set(slot, idx, inner)
        }
        Some((Step::Proj(k), rest)) => match slot {
            Value::Tuple(items) if *k >= 1 && *k <= items.len() => {
                assign_path(&mut items[k - 1], rest, value)
            }
            other => Err(mismatch("tuple projection", other)),
        },
    }
}

/// Whole-variable assignment must keep the declared sizes (Stan checks).
pub(crate) fn check_shape(name: &str, declared: &Value, value: &Value) -> Result<()> {
    use Value::*;
    let same = match (declared, value) {
        (Vector(a), Vector(b)) | (RowVector(a), RowVector(b)) => a.len() == b.len(),
        (
            Matrix { rows, cols, .. },
            Matrix {
                rows: r, cols: c, ..
            },
        ) => rows == r && cols == c,
        (Array(a), Array(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| check_shape(name, x, y).is_ok())
        }
        _ => true,
    };
    if same {
        Ok(())
    } else {
        Err(RuntimeError::new(
            ErrorKind::IndexOutOfRange,
            format!(
                "{name}: size mismatch, declared {} but assigned {}",
                super::error::describe(declared),
                super::error::describe(value)
            ),
        ))
    }
}

pub(crate) fn truthy(v: &Value) -> Result<bool> {
    match v {
        Value::Int(i) => Ok(*i != 0),
        other => Ok(real(other)? != 0.0),
    }
}

/// The initial value of a declared but unassigned variable: NaN for reals,
/// the smallest int for ints (as Stan).
pub(crate) fn uninitialized(shape: &Shape) -> Value {
    match shape {
        Shape::Int => Value::Int(i64::from(i32::MIN)),
        Shape::Array(n, elem) => Value::Array((0..*n).map(|_| uninitialized(elem)).collect()),
        Shape::Tuple(items) => Value::Tuple(items.iter().map(uninitialized).collect()),
        other => {
            let zero = other.zero_value();
            let n = super::values::flat(&zero).len();
            super::values::with_data(&zero, &mut std::iter::repeat_n(f64::NAN, n))
        }
    }
}

/// Convert ints to reals where the static type says real.
pub(crate) fn promote(v: Value, ty: &Type) -> Value {
    match (v, ty) {
        (Value::Int(i), Type::Real) => Value::Real(i as f64),
        (Value::Int(i), Type::Complex) => Value::Complex(i as f64, 0.0),
        (Value::Real(x), Type::Complex) => Value::Complex(x, 0.0),
        (Value::Array(items), Type::Array(elem)) => {
            Value::Array(items.into_iter().map(|i| promote(i, elem)).collect())
        }
        (Value::Tuple(items), Type::Tuple(tys)) => Value::Tuple(
            items
                .into_iter()
                .zip(tys)
                .map(|(i, t)| promote(i, t))
                .collect(),
        ),
        (v, _) => v,
    }
}

/// `[a, b, c]`: a row vector of scalars or a matrix of row vectors.
pub(crate) fn row_vector_literal(items: Vec<Value>) -> Result<Value> {
    if items.iter().all(super::values::is_scalar) {
        return Ok(Value::RowVector(
            items.iter().map(real).collect::<Result<_>>()?,
        ));
    }
    let rows: Vec<Vec<f64>> = items
        .iter()
        .map(|r| match r {
            Value::RowVector(x) => Ok(x.clone()),
            other => Err(mismatch("row vector literal", other)),
        })
        .collect::<Result<_>>()?;
    let r = rows.len();
    let c = rows.first().map_or(0, Vec::len);
    if rows.iter().any(|row| row.len() != c) {
        return Err(RuntimeError::fatal(
            "matrix literal: rows have different sizes",
        ));
    }
    Ok(Value::Matrix {
        rows: r,
        cols: c,
        data: (0..r * c).map(|k| rows[k % r][k / r]).collect(),
    })
}

fn size_with(eval: &mut dyn FnMut(&Expr) -> Result<Value>, e: &Expr) -> Result<usize> {
    let n = int(&eval(e)?).map_err(|err| err.at(e.span))?;
    usize::try_from(n).map_err(|_| {
        RuntimeError::new(
            ErrorKind::Fatal,
            format!("size must be nonnegative, found {n}"),
        )
        .at(e.span)
    })
}

/// The most numbers one declared variable may hold: 2^32 (32 GiB of reals).
pub const MAX_DECLARED_NUMBERS: u64 = 1 << 32;

/// The numbers a value of `shape` holds (complex numbers count twice),
/// saturating instead of overflowing.
fn numbers_in(shape: &Shape) -> u64 {
    let n = |k: usize| k as u64;
    match shape {
        Shape::Int | Shape::Real => 1,
        Shape::Complex => 2,
        Shape::Vector(k) | Shape::RowVector(k) => n(*k),
        Shape::ComplexVector(k) | Shape::ComplexRowVector(k) => n(*k).saturating_mul(2),
        Shape::Matrix(r, c) => n(*r).saturating_mul(n(*c)),
        Shape::ComplexMatrix(r, c) => n(*r).saturating_mul(n(*c)).saturating_mul(2),
        Shape::Array(k, elem) => n(*k).saturating_mul(numbers_in(elem).max(1)),
        Shape::Tuple(items) => items.iter().map(numbers_in).fold(0, u64::saturating_add),
    }
}

/// The shape of a declared type, its size expressions evaluated by `eval`.
pub(crate) fn shape_with(
    eval: &mut dyn FnMut(&Expr) -> Result<Value>,
    ty: &SizedType,
) -> Result<Shape> {
    Ok(match ty {
        SizedType::Int => Shape::Int,
        SizedType::Real => Shape::Real,
        SizedType::Complex => Shape::Complex,
        SizedType::Vector(n) => Shape::Vector(size_with(eval, n)?),
        SizedType::RowVector(n) => Shape::RowVector(size_with(eval, n)?),
        SizedType::Matrix(r, c) => Shape::Matrix(size_with(eval, r)?, size_with(eval, c)?),
        SizedType::ComplexVector(n) => Shape::ComplexVector(size_with(eval, n)?),
        SizedType::ComplexRowVector(n) => Shape::ComplexRowVector(size_with(eval, n)?),
        SizedType::ComplexMatrix(r, c) => {
            Shape::ComplexMatrix(size_with(eval, r)?, size_with(eval, c)?)
        }
        SizedType::Array(n, elem) => {
            let n = size_with(eval, n)?;
            Shape::Array(n, Box::new(shape_with(eval, elem)?))
        }
        SizedType::Tuple(items) => Shape::Tuple(
            items
                .iter()
                .map(|t| shape_with(eval, t))
                .collect::<Result<_>>()?,
        ),
    })
}

/// The value of a declared variable: `init` checked against the declared
/// sizes and promoted to its element type, or uninitialised.
pub(crate) fn declared_value(name: &str, shape: &Shape, init: Option<Value>) -> Result<Value> {
    let blank = uninitialized(shape);
    Ok(match init {
        Some(v) => {
            check_shape(name, &blank, &v)?;
            index::promote_like(v, &blank)
        }
        None => blank,
    })
}
