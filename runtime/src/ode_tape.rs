//! An ODE system function compiled, once per solve, to a straight-line
//! tape of scalar operations, so the integrators' thousands of right-hand
//! side evaluations skip the interpreter.
//!
//! Most system functions (Lotka–Volterra, SIR, …) are a few scalar
//! declarations of arithmetic on indexed states and parameters followed by
//! the return of a literal. Such a function, with its data and parameter
//! arguments fixed for the solve, becomes a list of operations on `f64`
//! slots; anything else (loops, branches, containers, calls, other
//! functions) makes [`Tape::compile`] give up and the solve runs the
//! function in the interpreter as before.
//!
//! * Values: every operation is the one the interpreter's primitive
//!   applies to the same operands (ints promoted to reals), in the same
//!   order, so f(t, y) is the interpreter's to the bit.
//! * Jacobians: one forward-mode pass carries, beside each slot's value,
//!   its derivatives along all n + m directions (the states y, then the
//!   autodiff arguments θ flattened), giving ∂f/∂y and ∂f/∂θ together
//!   instead of n reverse passes of the interpreted reverse function. They
//!   equal the reverse function's up to rounding (the chain rule's products
//!   are summed in another order).
//!
//! The tape is public so that other backends can generate code from it
//! (`backend-cuda`'s ODE solves on the device emit its operations in the
//! same order, so their right-hand sides are this tape's to the bit):
//! [`Tape::ops`], [`Tape::outputs`], [`Tape::arg_slots`],
//! [`Tape::constants`] and [`Tape::seeds`] describe it whole.

use language::mir::{Expr, ExprKind, Function, Index, Prim, Stmt, StmtKind, VarId};
use language::types::Type;
use language::value::Value;
use std::collections::HashMap;

/// One operation on earlier slots (their indexes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add(usize, usize),
    Sub(usize, usize),
    Mul(usize, usize),
    Div(usize, usize),
    Neg(usize),
    Exp(usize),
    Log(usize),
    Sqrt(usize),
    Square(usize),
}

/// A compiled system function f(t, y, args…) for one solve.
#[derive(Debug)]
pub struct Tape {
    /// Slot values: t, y₁…yₙ, the arguments' numbers, then constants and
    /// operation results in the order compiled.
    values: Vec<f64>,
    /// Each operation with the slot it writes (after its operands').
    ops: Vec<(usize, Op)>,
    /// The slots returned, one per state.
    outputs: Vec<usize>,
    states: usize,
    /// Derivative directions: the n states, then the m parameters.
    dirs: usize,
    /// Row-major `slots × dirs` derivatives; the inputs' rows (unit vectors
    /// for y and θ, zeros for data and constants) are set once.
    tangents: Vec<f64>,
    /// Per argument (after t and y): its first slot, if the tape binds it
    /// (its numbers are in consecutive slots, flattened).
    arg_slots: Vec<Option<usize>>,
    /// (slot, direction) of each input whose tangent is a unit vector.
    seeds: Vec<(usize, usize)>,
    /// The first slot after the inputs (t, y, the arguments).
    inputs_end: usize,
}

/// What a variable of the function stands for.
#[derive(Clone)]
enum Binding {
    Scalar(usize),
    /// A one-dimensional array, vector or row vector, element by element.
    Elements(Vec<usize>),
}

struct Compiler<'f> {
    fun: &'f Function,
    values: Vec<f64>,
    /// Parameter direction of each input slot (n + j for θⱼ).
    seeds: Vec<(usize, usize)>,
    ops: Vec<(usize, Op)>,
    vars: HashMap<VarId, Binding>,
}

impl Tape {
    /// Compile `fun` (the system of an ODE solve with `states` states) for
    /// arguments `args` (after t and y), of which those flagged in
    /// `autodiff` are the parameters θ, in order. `None` when the function
    /// uses anything the tape does not support.
    pub fn compile(
        fun: &Function,
        args: &[Value],
        autodiff: &[bool],
        states: usize,
    ) -> Option<Tape> {
        if fun.external || fun.uses_target || fun.uses_rng || fun.args.len() != args.len() + 2 {
            return None;
        }
        let mut c = Compiler {
            fun,
            values: vec![0.0; 1 + states],
            seeds: Vec::new(),
            ops: Vec::new(),
            vars: HashMap::new(),
        };
        c.vars.insert(fun.args[0], Binding::Scalar(0));
        c.vars
            .insert(fun.args[1], Binding::Elements((1..=states).collect()));
        for i in 0..states {
            c.seeds.push((1 + i, i));
        }
        let mut direction = states;
        let mut arg_slots = vec![None; args.len()];
        for (k, ((&var, arg), &on)) in fun.args[2..].iter().zip(args).zip(autodiff).enumerate() {
            let numbers: Vec<f64> = match arg {
                Value::Int(i) => vec![*i as f64],
                Value::Real(x) => vec![*x],
                Value::Vector(xs) | Value::RowVector(xs) => xs.clone(),
                Value::Array(items) => {
                    let mut xs = Vec::with_capacity(items.len());
                    for item in items {
                        match item {
                            Value::Int(i) => xs.push(*i as f64),
                            Value::Real(x) => xs.push(*x),
                            _ if on => return None,
                            _ => break,
                        }
                    }
                    if xs.len() != items.len() {
                        // A nested data argument: unusable by the tape.
                        continue;
                    }
                    xs
                }
                _ if on => return None,
                _ => continue,
            };
            let first = c.values.len();
            arg_slots[k] = Some(first);
            c.values.extend(&numbers);
            let slots: Vec<usize> = (first..c.values.len()).collect();
            if on {
                for &s in &slots {
                    c.seeds.push((s, direction));
                    direction += 1;
                }
            }
            let binding = match arg {
                Value::Int(_) | Value::Real(_) => Binding::Scalar(first),
                _ => Binding::Elements(slots),
            };
            c.vars.insert(var, binding);
        }
        let inputs_end = c.values.len();
        let outputs = c.body(&fun.body)?;
        if outputs.len() != states {
            // Let the interpreter report the size mismatch.
            return None;
        }
        let dirs = direction;
        let mut tangents = vec![0.0; c.values.len() * dirs];
        for &(slot, d) in &c.seeds {
            tangents[slot * dirs + d] = 1.0;
        }
        Some(Tape {
            values: c.values,
            ops: c.ops,
            outputs,
            states,
            dirs,
            tangents,
            arg_slots,
            seeds: c.seeds,
            inputs_end,
        })
    }

    /// Number m of parameters θ.
    pub fn params(&self) -> usize {
        self.dirs - self.states
    }

    /// Number of slots: t (slot 0), y (slots 1…n), the arguments' numbers,
    /// then constants and operation results.
    pub fn slots(&self) -> usize {
        self.values.len()
    }

    /// Derivative directions (n + m).
    pub fn dirs(&self) -> usize {
        self.dirs
    }

    /// The operations in order, each with the slot it writes.
    pub fn ops(&self) -> &[(usize, Op)] {
        &self.ops
    }

    /// The slot of each fᵢ.
    pub fn outputs(&self) -> &[usize] {
        &self.outputs
    }

    /// Per argument after t and y: the slot of its first number (flattened,
    /// in consecutive slots), or `None` when the tape does not read it.
    pub fn arg_slots(&self) -> &[Option<usize>] {
        &self.arg_slots
    }

    /// The slots holding literals, with their values.
    pub fn constants(&self) -> Vec<(usize, f64)> {
        (self.inputs_end..self.values.len())
            .filter(|s| !self.ops.iter().any(|(r, _)| r == s))
            .map(|s| (s, self.values[s]))
            .collect()
    }

    /// (slot, direction) of each input slot whose tangent is the unit
    /// vector of that direction (all other inputs' and constants' are 0).
    pub fn seeds(&self) -> &[(usize, usize)] {
        &self.seeds
    }

    /// f(t, y) into `f`.
    pub(super) fn eval(&mut self, t: f64, y: &[f64], f: &mut [f64]) {
        self.values[0] = t;
        self.values[1..=self.states].copy_from_slice(y);
        let v = &mut self.values;
        for &(r, op) in &self.ops {
            v[r] = match op {
                Op::Add(a, b) => v[a] + v[b],
                Op::Sub(a, b) => v[a] - v[b],
                Op::Mul(a, b) => v[a] * v[b],
                Op::Div(a, b) => v[a] / v[b],
                Op::Neg(a) => -v[a],
                Op::Exp(a) => v[a].exp(),
                Op::Log(a) => v[a].ln(),
                Op::Sqrt(a) => v[a].sqrt(),
                Op::Square(a) => v[a] * v[a],
            };
        }
        for (fi, &s) in f.iter_mut().zip(&self.outputs) {
            *fi = self.values[s];
        }
    }

    /// f(t, y) into `f` and its Jacobians, row-major: `jy[i·n + k]` =
    /// ∂fᵢ/∂y_k, `jp[i·m + j]` = ∂fᵢ/∂θⱼ.
    pub(super) fn eval_with_jacobians(
        &mut self,
        t: f64,
        y: &[f64],
        f: &mut [f64],
        jy: &mut [f64],
        jp: &mut [f64],
    ) {
        self.eval(t, y, f);
        let d = self.dirs;
        let v = &self.values;
        let tg = &mut self.tangents;
        for &(r, op) in &self.ops {
            // Operands are always earlier slots: split there.
            let (before, out) = tg.split_at_mut(r * d);
            let out = &mut out[..d];
            let row = |s: usize| &before[s * d..(s + 1) * d];
            match op {
                Op::Add(a, b) => {
                    for ((o, x), y) in out.iter_mut().zip(row(a)).zip(row(b)) {
                        *o = x + y;
                    }
                }
                Op::Sub(a, b) => {
                    for ((o, x), y) in out.iter_mut().zip(row(a)).zip(row(b)) {
                        *o = x - y;
                    }
                }
                Op::Mul(a, b) => {
                    let (va, vb) = (v[a], v[b]);
                    for ((o, x), y) in out.iter_mut().zip(row(a)).zip(row(b)) {
                        *o = x * vb + va * y;
                    }
                }
                Op::Div(a, b) => {
                    // d(a/b) = da/b − (a/b)·db/b
                    let (vb, q) = (v[b], v[r]);
                    for ((o, x), y) in out.iter_mut().zip(row(a)).zip(row(b)) {
                        *o = x / vb - q * y / vb;
                    }
                }
                Op::Neg(a) => {
                    for (o, x) in out.iter_mut().zip(row(a)) {
                        *o = -x;
                    }
                }
                Op::Exp(a) => {
                    let e = v[r];
                    for (o, x) in out.iter_mut().zip(row(a)) {
                        *o = x * e;
                    }
                }
                Op::Log(a) => {
                    let va = v[a];
                    for (o, x) in out.iter_mut().zip(row(a)) {
                        *o = x / va;
                    }
                }
                Op::Sqrt(a) => {
                    let s = v[r];
                    for (o, x) in out.iter_mut().zip(row(a)) {
                        *o = x / (2.0 * s);
                    }
                }
                Op::Square(a) => {
                    let va = v[a];
                    for (o, x) in out.iter_mut().zip(row(a)) {
                        *o = 2.0 * va * x;
                    }
                }
            }
        }
        let (n, m) = (self.states, self.params());
        for (i, &s) in self.outputs.iter().enumerate() {
            let row = &self.tangents[s * d..(s + 1) * d];
            jy[i * n..(i + 1) * n].copy_from_slice(&row[..n]);
            jp[i * m..(i + 1) * m].copy_from_slice(&row[n..]);
        }
    }
}

impl Compiler<'_> {
    /// The statements up to the return; the returned slots.
    fn body(&mut self, stmts: &[Stmt]) -> Option<Vec<usize>> {
        let (last, init) = stmts.split_last()?;
        for s in init {
            match &s.kind {
                StmtKind::Decl {
                    var, init: Some(e), ..
                }
                | StmtKind::Let { var, value: e } => {
                    let slot = self.real(e)?;
                    self.vars.insert(*var, Binding::Scalar(slot));
                }
                StmtKind::Assign { lhs, rhs } if lhs.path.is_empty() => {
                    // Only reassignments of real scalars declared here.
                    if !matches!(self.vars.get(&lhs.var), Some(Binding::Scalar(_)))
                        || self.fun.args.contains(&lhs.var)
                    {
                        return None;
                    }
                    let slot = self.real(rhs)?;
                    self.vars.insert(lhs.var, Binding::Scalar(slot));
                }
                _ => return None,
            }
        }
        let StmtKind::Return(Some(e)) = &last.kind else {
            return None;
        };
        let items = match &e.kind {
            ExprKind::ArrayLit(items) => items,
            ExprKind::Prim(Prim::Transpose, args) => match args.as_slice() {
                [
                    Expr {
                        kind: ExprKind::RowVectorLit(items),
                        ..
                    },
                ] => items,
                _ => return None,
            },
            _ => return None,
        };
        items.iter().map(|e| self.scalar(e)).collect()
    }

    /// A real-valued scalar expression.
    fn real(&mut self, e: &Expr) -> Option<usize> {
        if e.ty != Type::Real {
            return None;
        }
        self.scalar(e)
    }

    /// The slot of a scalar expression: real, or an int read as a real
    /// (as the interpreter promotes ints in real arithmetic). Int
    /// arithmetic is not compiled.
    fn scalar(&mut self, e: &Expr) -> Option<usize> {
        match &e.kind {
            ExprKind::Int(i) => Some(self.constant(*i as f64)),
            ExprKind::Real(x) => Some(self.constant(*x)),
            ExprKind::Var(v) => match self.vars.get(v)? {
                Binding::Scalar(s) => Some(*s),
                Binding::Elements(_) => None,
            },
            ExprKind::Index(base, indexes) => {
                let (ExprKind::Var(v), [Index::Single(i)]) = (&base.kind, indexes.as_slice())
                else {
                    return None;
                };
                let ExprKind::Int(i) = i.kind else {
                    return None;
                };
                match self.vars.get(v)? {
                    // Out of range: the interpreter reports it.
                    Binding::Elements(slots) => slots.get(usize::try_from(i - 1).ok()?).copied(),
                    Binding::Scalar(_) => None,
                }
            }
            ExprKind::Prim(p, args) if e.ty == Type::Real => {
                let mut slots = Vec::with_capacity(args.len());
                for a in args {
                    if !matches!(a.ty, Type::Real | Type::Int) {
                        return None;
                    }
                    slots.push(self.scalar(a)?);
                }
                let op = match (p, slots.as_slice()) {
                    (Prim::Add, &[a, b]) => Op::Add(a, b),
                    (Prim::Sub, &[a, b]) => Op::Sub(a, b),
                    (Prim::Mul | Prim::EltMul, &[a, b]) => Op::Mul(a, b),
                    (Prim::Div | Prim::EltDiv, &[a, b]) => Op::Div(a, b),
                    (Prim::Neg, &[a]) => Op::Neg(a),
                    (Prim::Exp, &[a]) => Op::Exp(a),
                    (Prim::Log, &[a]) => Op::Log(a),
                    (Prim::Sqrt, &[a]) => Op::Sqrt(a),
                    // The interpreter squares an int operand with powi.
                    (Prim::Square, &[a]) if args[0].ty == Type::Real => Op::Square(a),
                    _ => return None,
                };
                let slot = self.constant(0.0);
                self.ops.push((slot, op));
                Some(slot)
            }
            _ => None,
        }
    }

    /// A new slot holding `x` (its derivatives are zero).
    fn constant(&mut self, x: f64) -> usize {
        self.values.push(x);
        self.values.len() - 1
    }
}
