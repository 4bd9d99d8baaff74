//! Running gradient programs ([`language::mir::GradProgram`]): the statements
//! and expressions that only the AD transformation produces — stacks,
//! accumulation, derivative rules of primitives, and the parameter
//! transform with its reverse.

use super::constrain::{self, Evaluated, PerElement, Scalarwise};
use super::error::{ErrorKind, Result, RuntimeError, mismatch};
use super::exec::{Machine, Step};
use super::index::{self, Ix};
use super::values::{flat, is_scalar, real, with_data};
use super::{Model, ParamLayout};
use bat_math::transforms::{self as tf, Transform as _};
use language::mir::GradProgram;
use language::mir::{Expr, Index, LValue, LValueStep, Prim, StackId, Transform, VarId};
use language::value::Value;

/// What a machine running a gradient program carries besides variables.
pub(crate) struct GradState {
    pub theta: Vec<f64>,
    pub gradient: Vec<f64>,
    pub stacks: Vec<Vec<Value>>,
    /// The deepest each stack has been (sizes device stacks).
    pub max_depths: Vec<usize>,
    pub layout: Vec<ParamLayout>,
}

impl Model {
    /// Log density and its gradient with respect to the unconstrained
    /// parameters, by running the gradient program `g` of this model.
    pub fn log_density_gradient(
        &self,
        g: &GradProgram,
        theta: &[f64],
        jacobian: bool,
    ) -> std::result::Result<(f64, Vec<f64>), RuntimeError> {
        let mut m = self.gradient_machine(&g.program, g.num_stacks, theta, jacobian)?;
        m.block(&g.body)?;
        Ok(finish_gradient(m))
    }

    /// A machine over `program` — a gradient program's MIR, or a batching
    /// IR's copy of it with more variables — set to run with unconstrained
    /// input `theta`, `num_stacks` empty AD stacks and a zero gradient.
    /// Every runner of gradient programs (structured, CFG, PC) starts here.
    pub(crate) fn gradient_machine<'a>(
        &'a self,
        program: &'a language::mir::Program,
        num_stacks: u32,
        theta: &[f64],
        jacobian: bool,
    ) -> Result<Machine<'a>> {
        self.check_len(theta)?;
        let mut m = self.machine_for(program);
        m.jacobian = jacobian;
        m.grad = Some(GradState {
            theta: theta.to_vec(),
            gradient: vec![0.0; self.num_unconstrained()],
            stacks: vec![Vec::new(); num_stacks as usize],
            max_depths: vec![0; num_stacks as usize],
            layout: self.params.clone(),
        });
        Ok(m)
    }
}

/// The log density and gradient a finished gradient run left in `m`.
pub(crate) fn finish_gradient(mut m: Machine) -> (f64, Vec<f64>) {
    let state = m.grad.take().expect("set by gradient_machine");
    (m.target, state.gradient)
}

fn state<'a>(m: &'a mut Machine) -> Result<&'a mut GradState> {
    m.grad.as_mut().ok_or_else(|| {
        RuntimeError::fatal("a gradient-program statement outside a gradient program")
    })
}

impl Machine<'_> {
    pub(crate) fn push_stack(&mut self, stack: StackId, value: &Expr) -> Result<()> {
        let v = self.eval(value)?;
        let st = state(self)?;
        let k = stack.0 as usize;
        st.stacks[k].push(v);
        st.max_depths[k] = st.max_depths[k].max(st.stacks[k].len());
        Ok(())
    }

    pub(crate) fn pop_stack(&mut self, stack: StackId) -> Result<Value> {
        state(self)?.stacks[stack.0 as usize].pop().ok_or_else(|| {
            RuntimeError::fatal(format!(
                "gradient program popped the empty stack {}",
                stack.0
            ))
        })
    }

    /// `lhs += rhs` (scalar broadcast, or the same elements in another
    /// container shape); a multi-index accumulates repeated positions.
    pub(crate) fn add_assign(&mut self, lhs: &LValue, rhs: &Expr) -> Result<()> {
        let r = self.eval(rhs)?;
        if cfg!(debug_assertions) && lhs.path.is_empty() {
            self.check_share_shape(lhs.var, rhs, &r);
        }
        let idx = match lhs.path.as_slice() {
            [] => None,
            [LValueStep::Index(idx)] => Some(self.eval_indexes(idx)?),
            path => {
                // Tuple components (single indexes only): read, add, write.
                let mut steps = Vec::new();
                for step in path {
                    steps.push(match step {
                        LValueStep::Index(idx) => Step::Index(self.eval_indexes(idx)?),
                        LValueStep::TupleProj(k) => Step::Proj(*k),
                    });
                }
                let slot = self.slot_mut(lhs.var)?;
                return add_at(slot, &steps, &r);
            }
        };
        let slot = self.slot_mut(lhs.var)?;
        add_assign_at(slot, idx.as_deref(), &r)
    }

    /// `∂prim/∂args[arg]` elementwise, broadcasting scalar arguments.
    pub(crate) fn partial(&mut self, prim: Prim, arg: usize, args: &[Expr]) -> Result<Value> {
        let values = args
            .iter()
            .map(|a| self.eval(a))
            .collect::<Result<Vec<_>>>()?;
        partial_values(prim, arg, &values)
    }

    pub(crate) fn read_param(
        &mut self,
        param: usize,
        var: VarId,
        transform: &Transform,
    ) -> Result<()> {
        let p = state(self)?.layout[param].clone();
        let x = state(self)?.theta[p.offset..p.offset + p.unconstrained_len].to_vec();
        let (value, logj) = read_param_value(&mut |e| self.eval(e), transform, &p.shape, &x)?;
        if self.jacobian {
            self.target += logj;
        }
        self.set(var, value);
        Ok(())
    }

    pub(crate) fn param_adjoint(
        &mut self,
        param: usize,
        var_adj: VarId,
        lp_adj: VarId,
        transform: &Transform,
        arg_adjs: &[Option<VarId>],
    ) -> Result<()> {
        let p = state(self)?.layout[param].clone();
        let x = state(self)?.theta[p.offset..p.offset + p.unconstrained_len].to_vec();
        let y_bar = flat(self.get(var_adj)?);
        let lp_bar = if self.jacobian {
            real(self.get(lp_adj)?)?
        } else {
            0.0
        };
        let currents = arg_adjs
            .iter()
            .map(|a| a.map(|v| self.get(v).cloned()).transpose())
            .collect::<Result<Vec<_>>>()?;
        let (x_bar, updated) = param_adjoint_values(
            &mut |e| self.eval(e),
            transform,
            &p.shape,
            &x,
            &y_bar,
            lp_bar,
            currents,
        )?;
        let st = state(self)?;
        for (k, xb) in x_bar.into_iter().enumerate() {
            st.gradient[p.offset + k] += xb;
        }
        for (adj, value) in arg_adjs.iter().zip(updated) {
            if let (Some(adj), Some(value)) = (adj, value) {
                self.set(*adj, value);
            }
        }
        Ok(())
    }

    /// The AD's promise on accumulations (`language::ad` docs): a share of
    /// the adjoint's own static type has the adjoint's shape.
    fn check_share_shape(&self, var: VarId, rhs: &Expr, r: &Value) {
        let ty = &self.program.vars[var.0 as usize].ty;
        if rhs.ty != *ty || !ty.is_real_typed() {
            return;
        }
        // Ints stand for reals here (a function's `real` argument may hold
        // the int it was called with).
        fn dims(v: &Value) -> language::data::Shape {
            use language::data::Shape;
            fn real(s: Shape) -> Shape {
                match s {
                    Shape::Int => Shape::Real,
                    Shape::Array(n, e) => Shape::Array(n, Box::new(real(*e))),
                    other => other,
                }
            }
            real(super::constrain::shape_of(v))
        }
        if let Ok(current) = self.get(var) {
            assert_eq!(
                dims(current),
                dims(r),
                "`{} += ...` adds a share of another shape but the same type {ty}",
                self.program.vars[var.0 as usize].name
            );
        }
    }

    fn eval_indexes(&mut self, idx: &[Index]) -> Result<Vec<Ix>> {
        self.indexes_pub(idx)
    }
}

/// (x̄, first argument's adjoint, second argument's adjoint) of one
/// element of a scalarwise transform (bounds are 0, 1; offset, multiplier
/// are 0, 1).
fn scalar_vjp(s: &Scalarwise, i: usize, x: f64, y_bar: f64, lp_bar: f64) -> (f64, f64, f64) {
    let at = |p: &PerElement| p.at(i);
    match s {
        Scalarwise::Identity => (y_bar, 0.0, 0.0),
        Scalarwise::Lower(lb) => {
            let (xb, lbb) = tf::lb_constrain_vjp(x, at(lb), y_bar, lp_bar);
            (xb, lbb, 0.0)
        }
        Scalarwise::Upper(ub) => {
            let (xb, ubb) = tf::ub_constrain_vjp(x, at(ub), y_bar, lp_bar);
            (xb, ubb, 0.0)
        }
        Scalarwise::LowerUpper(lb, ub) => tf::lub_constrain_vjp(x, at(lb), at(ub), y_bar, lp_bar),
        Scalarwise::Affine(o, m) => {
            tf::offset_multiplier_constrain_vjp(x, at(o), at(m), y_bar, lp_bar)
        }
    }
}

/// Zeros of `v`'s shape.
pub(crate) fn zeros_like(v: &Value) -> Value {
    match v {
        Value::Int(_) => Value::Int(0),
        Value::Array(items) => Value::Array(items.iter().map(zeros_like).collect()),
        Value::Tuple(items) => Value::Tuple(items.iter().map(zeros_like).collect()),
        other => with_data(other, &mut std::iter::repeat(0.0)),
    }
}

/// `slot[path] += r` along a path of single indexes and tuple projections.
pub(crate) fn add_at(slot: &mut Value, path: &[Step], r: &Value) -> Result<()> {
    match path.split_first() {
        None => {
            *slot = add_values(slot, r)?;
            Ok(())
        }
        Some((Step::Index(idx), rest)) => {
            if idx.iter().any(|i| !matches!(i, Ix::Single(_))) {
                return Err(RuntimeError::new(
                    ErrorKind::Unsupported,
                    "accumulation through a multi-index before a tuple component",
                ));
            }
            let mut inner = index::get(slot, idx)?;
            add_at(&mut inner, rest, r)?;
            index::set(slot, idx, inner)
        }
        Some((Step::Proj(k), rest)) => match slot {
            Value::Tuple(items) if *k >= 1 && *k <= items.len() => {
                add_at(&mut items[k - 1], rest, r)
            }
            other => Err(mismatch("accumulation into a tuple component", other)),
        },
    }
}

/// `a + b` keeping `a`'s shape: `b` a scalar (added to every element) or
/// holding the same number of elements in Stan's order. Tuples add
/// componentwise; int components (no adjoint) are kept.
fn add_values(a: &Value, b: &Value) -> Result<Value> {
    if let (Value::Tuple(xs), Value::Tuple(ys)) = (a, b) {
        if xs.len() != ys.len() {
            return Err(mismatch("gradient accumulation of tuples", b));
        }
        return xs
            .iter()
            .zip(ys)
            .map(|(x, y)| match x {
                Value::Int(_) => Ok(x.clone()),
                _ => add_values(x, y),
            })
            .collect::<Result<Vec<_>>>()
            .map(Value::Tuple);
    }
    let xs = flat(a);
    let ys = flat(b);
    if ys.len() == 1 && xs.len() != 1 {
        return Ok(with_data(a, &mut xs.iter().map(|x| x + ys[0])));
    }
    if xs.len() != ys.len() {
        return Err(RuntimeError::fatal(format!(
            "gradient accumulation of {} elements into {} elements",
            ys.len(),
            xs.len()
        )));
    }
    Ok(with_data(a, &mut xs.iter().zip(&ys).map(|(x, y)| x + y)))
}

/// The `n` parts of `v` along its first dimension (a scalar repeats).
fn split_along(v: &Value, n: usize) -> Result<Vec<Value>> {
    match v {
        Value::Int(_) | Value::Real(_) => Ok(vec![v.clone(); n]),
        Value::Array(items) if items.len() == n => Ok(items.clone()),
        Value::Vector(xs) | Value::RowVector(xs) if xs.len() == n => {
            Ok(xs.iter().map(|&x| Value::Real(x)).collect())
        }
        other => Err(mismatch(
            "scatter-add of a value that does not match its multi-index",
            other,
        )),
    }
}

/// `slot += r`, or `slot[idx] += r` (a multi-index accumulates repeated
/// positions one at a time).
pub(crate) fn add_assign_at(slot: &mut Value, idx: Option<&[Ix]>, r: &Value) -> Result<()> {
    match idx {
        None => *slot = add_values(slot, r)?,
        Some(idx) => match idx.iter().position(|i| matches!(i, Ix::Multi(_))) {
            None => {
                let current = index::get(slot, idx)?;
                index::set(slot, idx, add_values(&current, r)?)?;
            }
            Some(k) => {
                // Scatter-add one selected position at a time.
                let Ix::Multi(positions) = &idx[k] else {
                    unreachable!()
                };
                let parts = split_along(r, positions.len())?;
                for (&p, part) in positions.iter().zip(parts) {
                    let mut one = idx.to_vec();
                    one[k] = Ix::Single(p);
                    let current = index::get(slot, &one)?;
                    index::set(slot, &one, add_values(&current, &part)?)?;
                }
            }
        },
    }
    Ok(())
}

/// `∂prim/∂values[arg]` elementwise, broadcasting scalar arguments.
pub(crate) fn partial_values(prim: Prim, arg: usize, values: &[Value]) -> Result<Value> {
    let p = prim
        .scalar_rule()
        .filter(|p| p.arity() == values.len())
        .ok_or_else(|| {
            RuntimeError::new(
                ErrorKind::Unsupported,
                format!("no derivative rule for `{}`", prim.name()),
            )
        })?;
    let template = values.iter().find(|v| !is_scalar(v)).cloned();
    let columns: Vec<Vec<f64>> = values.iter().map(flat).collect();
    let n = template.as_ref().map_or(1, |t| flat(t).len());
    let mut out = Vec::with_capacity(n);
    let mut point = vec![0.0; values.len()];
    for e in 0..n {
        for (k, col) in columns.iter().enumerate() {
            point[k] = if col.len() == 1 { col[0] } else { col[e] };
        }
        out.push(p.grad(&point)[arg]);
    }
    Ok(match template {
        Some(t) => with_data(&t, &mut out.into_iter()),
        None => Value::Real(out[0]),
    })
}

/// The constrained value of a parameter of `shape` at unconstrained `x`,
/// and log |J|; the transform's arguments are evaluated by `eval`.
pub(crate) fn read_param_value(
    eval: &mut dyn FnMut(&Expr) -> Result<Value>,
    transform: &Transform,
    shape: &language::data::Shape,
    x: &[f64],
) -> Result<(Value, f64)> {
    let ev = constrain::evaluate_with(eval, transform, shape.num_reals())?;
    constrain::constrain(&ev, shape, x)
}

/// The reverse of [`read_param_value`]: the unconstrained adjoint x̄ from
/// the value's adjoint `y_bar` and the target's adjoint `lp_bar`, and the
/// transform arguments' adjoint variables (`currents`, one per argument,
/// `None` when data) with their shares added.
pub(crate) fn param_adjoint_values(
    eval: &mut dyn FnMut(&Expr) -> Result<Value>,
    transform: &Transform,
    shape: &language::data::Shape,
    x: &[f64],
    y_bar: &[f64],
    lp_bar: f64,
    currents: Vec<Option<Value>>,
) -> Result<(Vec<f64>, Vec<Option<Value>>)> {
    let n = shape.num_reals();
    let ev = constrain::evaluate_with(eval, transform, n)?;
    // The value's adjoint has the value's elements, and x the transform's
    // unconstrained ones: a mismatch is an executor's error, not a panic.
    let expected_x = constrain::unconstrained_len(transform, shape)?;
    if y_bar.len() != n || x.len() != expected_x {
        return Err(RuntimeError::fatal(format!(
            "parameter adjoint: {} adjoint values and {} unconstrained values \
             for a parameter of {n} values and {expected_x} unconstrained ones",
            y_bar.len(),
            x.len()
        )));
    }
    let mut x_bar = vec![0.0; x.len()];
    // Adjoints of the transform's arguments, per element of the variable.
    let mut args_bar = [vec![0.0; n], vec![0.0; n]];
    match &ev {
        Evaluated::Scalarwise(s) => {
            for i in 0..n {
                let (xb, a0, a1) = scalar_vjp(s, i, x[i], y_bar[i], lp_bar);
                x_bar[i] = xb;
                args_bar[0][i] = a0;
                args_bar[1][i] = a1;
            }
        }
        Evaluated::Structured(t) => {
            let mut leaves = Vec::new();
            constrain::leaves(shape, &mut leaves);
            let (mut xo, mut yo) = (0, 0);
            for leaf in &leaves {
                let c = constrain::leaf_constraint(t, leaf)?;
                let (nx, ny) = (c.unconstrained_len(), c.constrained_len());
                let xb = c.constrain_vjp(&x[xo..xo + nx], &y_bar[yo..yo + ny], lp_bar);
                x_bar[xo..xo + nx].copy_from_slice(&xb);
                xo += nx;
                yo += ny;
            }
        }
    }
    // Which argument slot of the scalarwise rule each transform
    // argument is: offset-only and multiplier-only keep their slot.
    let slots: &[usize] = match transform {
        Transform::Multiplier(_) => &[1],
        _ => &[0, 1],
    };
    let mut updated = Vec::with_capacity(currents.len());
    for (current, &slot) in currents.into_iter().zip(slots) {
        let Some(current) = current else {
            updated.push(None);
            continue;
        };
        let share = if is_scalar(&current) {
            Value::Real(args_bar[slot].iter().sum())
        } else {
            with_data(&current, &mut args_bar[slot].clone().into_iter())
        };
        updated.push(Some(add_values(&current, &share)?));
    }
    Ok((x_bar, updated))
}
