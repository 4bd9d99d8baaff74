//! The interpreter's semantics of one lane, as plain functions on values,
//! for batched backends (`backend-cpu`): a batched executor evaluates the
//! operands of an operation for all its lanes, then — whenever it has no
//! specialised kernel — calls these functions lane by lane. The
//! interpreter itself uses the same functions, so the semantics of every
//! primitive, index, assignment and parameter transform is defined once.
//!
//! Errors are the interpreter's [`RuntimeError`]s (without the span of
//! the expression or statement, which the caller attaches as
//! [`crate::exec`] does: the innermost expression first).

use super::error::Result;
use language::data::Shape;
use language::mir::{Expr, Prim, SizedType, Transform};
use language::types::Type;
use language::value::Value;

pub use super::exec::Step;
pub use super::index::Ix;

/// Primitive `p` applied to `args` (not the `_rng` primitives: see
/// [`draw_rng`]).
pub fn eval_prim(p: Prim, args: &[Value]) -> Result<Value> {
    super::prims::eval(p, args)
}

/// Draw from `_rng` primitive `p` at `args`.
pub fn draw_rng(p: Prim, rng: &mut super::Rng, args: &[Value]) -> Result<Value> {
    super::rng::draw(p, rng, args)
}

/// One draw of `_rng` primitive `p` at scalar real arguments `xs` (what
/// [`draw_rng`] does for each element of container arguments); `None` for
/// the primitives whose arguments are not scalars (the categorical ones).
pub fn draw_rng_scalar(p: Prim, rng: &mut super::Rng, xs: &[f64]) -> Option<Result<Value>> {
    super::rng::draw_scalar(p, rng, xs)
}

/// [`language::mir::ExprKind::Partial`]: ∂prim/∂args[arg] elementwise.
pub fn partial(prim: Prim, arg: usize, args: &[Value]) -> Result<Value> {
    super::grad::partial_values(prim, arg, args)
}

/// `v[idx...]`.
pub fn index_get(v: &Value, idx: &[Ix]) -> Result<Value> {
    super::index::get(v, idx)
}

/// `v[idx...] = rhs` (no left-hand-side name in the error message).
pub fn index_set(v: &mut Value, idx: &[Ix], rhs: Value) -> Result<()> {
    super::index::set(v, idx, rhs)
}

/// The evaluated index of an int value (`Multi` takes every int inside).
pub fn multi_index(v: &Value) -> Result<Vec<i64>> {
    super::values::flat_ints(v)
}

/// The int of an int value.
pub fn int_of(v: &Value) -> Result<i64> {
    super::values::int(v)
}

/// [`language::mir::ExprKind::Ode`] of `program` at its evaluated operands
/// (in [`language::mir::OdeSolve::operands`] order).
pub fn ode(
    program: &language::mir::Program,
    call: &language::mir::OdeSolve,
    operands: &[Value],
) -> Result<Value> {
    super::ode::solve(program, call, operands)
}

/// [`language::mir::ExprKind::ZerosLike`].
pub fn zeros_like(v: &Value) -> Value {
    super::grad::zeros_like(v)
}

/// Ints converted to reals where the static type `ty` says real.
pub fn promote(v: Value, ty: &Type) -> Value {
    super::exec::promote(v, ty)
}

/// `[a, b, c]`: a row vector of scalars or a matrix of row vectors.
pub fn row_vector_literal(items: Vec<Value>) -> Result<Value> {
    super::exec::row_vector_literal(items)
}

/// Component `k` (1-based) of a tuple.
pub fn tuple_proj(v: Value, k: usize) -> Result<Value> {
    match v {
        Value::Tuple(mut items) if k >= 1 && k <= items.len() => Ok(items.swap_remove(k - 1)),
        other => Err(super::error::mismatch("tuple projection", &other)),
    }
}

/// The truth of a condition (nonzero).
pub fn truthy(v: &Value) -> Result<bool> {
    super::exec::truthy(v)
}

/// The sum of every real in `v` (what `target += v` adds).
pub fn target_sum(v: &Value) -> f64 {
    super::values::flat(v).iter().sum()
}

/// Every real in `v` in Stan's order.
pub fn flat_reals(v: &Value) -> Vec<f64> {
    super::values::flat(v)
}

/// A value of `template`'s shape (ints become reals) filled from `data`.
pub fn with_data(template: &Value, data: &mut impl Iterator<Item = f64>) -> Value {
    super::values::with_data(template, data)
}

/// A short description of a value's type and size (as in error messages).
pub fn describe(v: &Value) -> String {
    super::error::describe(v)
}

/// How `print` and `reject` show a value.
pub fn print_value(v: &Value) -> String {
    super::print::value(v)
}

/// The shape of a declared type, size expressions evaluated by `eval`.
pub fn shape_of(eval: &mut dyn FnMut(&Expr) -> Result<Value>, ty: &SizedType) -> Result<Shape> {
    super::exec::shape_with(eval, ty)
}

/// The initial value of variable `name` declared with `shape`: `init`
/// checked against the sizes and promoted, or NaN / min-int filled.
pub fn declared_value(name: &str, shape: &Shape, init: Option<Value>) -> Result<Value> {
    super::exec::declared_value(name, shape, init)
}

/// `name[steps...] = value` into `slot`, with the interpreter's checks and
/// error messages (prefixed by `name`).
pub fn assign(name: &str, slot: &mut Value, steps: &[Step], value: Value) -> Result<()> {
    super::exec::assign_path(slot, steps, value).map_err(|e| super::RuntimeError {
        message: format!("{name}: {}", e.message),
        ..e
    })
}

/// `slot += r` or `slot[idx] += r` ([`language::mir::StmtKind::AddAssign`]).
pub fn add_assign(slot: &mut Value, idx: Option<&[Ix]>, r: &Value) -> Result<()> {
    super::grad::add_assign_at(slot, idx, r)
}

/// `slot[steps] += r` along a path of single indexes and tuple
/// projections (the reverse sweep's accumulation into a tuple component).
pub fn add_at_path(slot: &mut Value, steps: &[Step], r: &Value) -> Result<()> {
    super::grad::add_at(slot, steps, r)
}

/// [`language::mir::StmtKind::CheckConstraint`] of `value`; the transform's
/// arguments are evaluated by `eval`.
pub fn check_constraint(
    eval: &mut dyn FnMut(&Expr) -> Result<Value>,
    name: &str,
    value: &Value,
    transform: &Transform,
) -> Result<()> {
    super::constrain::check_constraint_with(eval, name, value, transform)
}

/// [`language::mir::StmtKind::ReadParam`]: the constrained value of a
/// parameter of `shape` at its unconstrained coordinates `x`, and log |J|.
pub fn read_param(
    eval: &mut dyn FnMut(&Expr) -> Result<Value>,
    transform: &Transform,
    shape: &Shape,
    x: &[f64],
) -> Result<(Value, f64)> {
    super::grad::read_param_value(eval, transform, shape, x)
}

/// [`language::mir::StmtKind::ParamAdjoint`]: x̄ (to add into the gradient at
/// the parameter's offset) and the new values of the transform arguments'
/// adjoint variables (`currents`: their values now, `None` for data).
pub fn param_adjoint(
    eval: &mut dyn FnMut(&Expr) -> Result<Value>,
    transform: &Transform,
    shape: &Shape,
    x: &[f64],
    y_bar: &[f64],
    lp_bar: f64,
    currents: Vec<Option<Value>>,
) -> Result<(Vec<f64>, Vec<Option<Value>>)> {
    super::grad::param_adjoint_values(eval, transform, shape, x, y_bar, lp_bar, currents)
}
