//! Parameter transforms: constrain (with log |J|), Stan's free transforms,
//! and the constraint checks of data, transformed and generated values.

use super::error::{ErrorKind, Result, RuntimeError};
use super::exec::Machine;
use super::values::{flat, is_scalar, with_data};
use bat_math::transforms::{self as tf, Constraint, Transform as _};
use language::data::Shape;
use language::mir::Transform;
use language::value::Value;

/// A transform with its bound/offset/multiplier arguments evaluated.
pub(crate) enum Evaluated<'t> {
    /// Elementwise bounds or affine map, arguments flattened per element
    /// (a scalar argument applies to every element).
    Scalarwise(Scalarwise),
    /// A transform of each vector/matrix leaf of the (array) value.
    Structured(&'t Transform),
}

pub(crate) enum Scalarwise {
    Identity,
    Lower(PerElement),
    Upper(PerElement),
    LowerUpper(PerElement, PerElement),
    Affine(PerElement, PerElement),
}

pub(crate) enum PerElement {
    Scalar(f64),
    Each(Vec<f64>),
}

impl PerElement {
    pub(crate) fn at(&self, i: usize) -> f64 {
        match self {
            PerElement::Scalar(x) => *x,
            PerElement::Each(xs) => xs.get(i).copied().unwrap_or(f64::NAN),
        }
    }
}

fn per_element(v: Value, n: usize, what: &str) -> Result<PerElement> {
    if is_scalar(&v) {
        return Ok(PerElement::Scalar(super::values::real(&v)?));
    }
    let xs = flat(&v);
    if xs.len() != n {
        return Err(RuntimeError::fatal(format!(
            "{what} has {} elements but the variable has {n}",
            xs.len()
        )));
    }
    Ok(PerElement::Each(xs))
}

/// Evaluate the arguments of `t` for a variable with `n` scalars.
pub(crate) fn evaluate<'t>(m: &mut Machine, t: &'t Transform, n: usize) -> Result<Evaluated<'t>> {
    evaluate_with(&mut |e| m.eval(e), t, n)
}

/// [`evaluate`] with the argument expressions evaluated by `eval`.
pub(crate) fn evaluate_with<'t>(
    eval: &mut dyn FnMut(&language::mir::Expr) -> Result<Value>,
    t: &'t Transform,
    n: usize,
) -> Result<Evaluated<'t>> {
    let mut arg = |e: &language::mir::Expr, what: &str| -> Result<PerElement> {
        let v = eval(e)?;
        per_element(v, n, what)
    };
    Ok(Evaluated::Scalarwise(match t {
        Transform::Identity => Scalarwise::Identity,
        Transform::Lower(lb) => Scalarwise::Lower(arg(lb, "lower bound")?),
        Transform::Upper(ub) => Scalarwise::Upper(arg(ub, "upper bound")?),
        Transform::LowerUpper(lb, ub) => {
            Scalarwise::LowerUpper(arg(lb, "lower bound")?, arg(ub, "upper bound")?)
        }
        Transform::Offset(o) => Scalarwise::Affine(arg(o, "offset")?, PerElement::Scalar(1.0)),
        Transform::Multiplier(s) => {
            Scalarwise::Affine(PerElement::Scalar(0.0), arg(s, "multiplier")?)
        }
        Transform::OffsetMultiplier(o, s) => {
            Scalarwise::Affine(arg(o, "offset")?, arg(s, "multiplier")?)
        }
        Transform::Tuple(_) => {
            return Err(RuntimeError::new(
                ErrorKind::Unsupported,
                "constraints on tuple components are not supported by the interpreter yet",
            ));
        }
        other => return Ok(Evaluated::Structured(other)),
    }))
}

/// The shapes of the non-array leaves of `shape`, in Stan's order.
pub(crate) fn leaves(shape: &Shape, out: &mut Vec<Shape>) {
    match shape {
        Shape::Array(n, elem) => {
            for _ in 0..*n {
                leaves(elem, out);
            }
        }
        other => out.push(other.clone()),
    }
}

/// The bat-math transform of one leaf.
pub(crate) fn leaf_constraint(t: &Transform, leaf: &Shape) -> Result<Constraint> {
    let bad = || {
        RuntimeError::fatal(format!(
            "constraint {t:?} does not apply to a value of type {leaf}"
        ))
    };
    let square = |r: usize, c: usize| if r == c { Ok(r) } else { Err(bad()) };
    Ok(match (t, leaf) {
        (Transform::Ordered, Shape::Vector(n)) => tf::Ordered { len: *n }.into(),
        (Transform::PositiveOrdered, Shape::Vector(n)) => tf::PositiveOrdered { len: *n }.into(),
        (Transform::Simplex, Shape::Vector(n)) => tf::Simplex { len: *n }.into(),
        (Transform::UnitVector, Shape::Vector(n)) => tf::UnitVector { len: *n }.into(),
        (Transform::SumToZeroVector, Shape::Vector(n)) => tf::SumToZeroVector { len: *n }.into(),
        (Transform::SumToZeroMatrix, Shape::Matrix(r, c)) => {
            tf::SumToZeroMatrix { rows: *r, cols: *c }.into()
        }
        (Transform::CholeskyFactorCorr, Shape::Matrix(r, c)) => {
            tf::CholeskyFactorCorr { k: square(*r, *c)? }.into()
        }
        (Transform::CholeskyFactorCov, Shape::Matrix(r, c)) => {
            tf::CholeskyFactorCov { rows: *r, cols: *c }.into()
        }
        (Transform::CorrMatrix, Shape::Matrix(r, c)) => {
            tf::CorrMatrix { k: square(*r, *c)? }.into()
        }
        (Transform::CovMatrix, Shape::Matrix(r, c)) => tf::CovMatrix { k: square(*r, *c)? }.into(),
        (Transform::ColumnStochasticMatrix, Shape::Matrix(r, c)) => {
            tf::StochasticColumn { rows: *r, cols: *c }.into()
        }
        (Transform::RowStochasticMatrix, Shape::Matrix(r, c)) => {
            tf::StochasticRow { rows: *r, cols: *c }.into()
        }
        _ => return Err(bad()),
    })
}

/// Number of unconstrained scalars of a parameter of `shape`.
pub(crate) fn unconstrained_len(t: &Transform, shape: &Shape) -> Result<usize> {
    match t {
        Transform::Identity
        | Transform::Lower(_)
        | Transform::Upper(_)
        | Transform::LowerUpper(..)
        | Transform::Offset(_)
        | Transform::Multiplier(_)
        | Transform::OffsetMultiplier(..) => Ok(shape.num_reals()),
        _ => {
            let mut ls = Vec::new();
            leaves(shape, &mut ls);
            ls.iter()
                .map(|l| Ok(leaf_constraint(t, l)?.unconstrained_len()))
                .sum()
        }
    }
}

fn scalar_constrain(s: &Scalarwise, i: usize, x: f64) -> (f64, f64) {
    match s {
        Scalarwise::Identity => (x, 0.0),
        Scalarwise::Lower(lb) => lower(x, lb.at(i)),
        Scalarwise::Upper(ub) => upper(x, ub.at(i)),
        Scalarwise::LowerUpper(lb, ub) => {
            let (lb, ub) = (lb.at(i), ub.at(i));
            match (lb == f64::NEG_INFINITY, ub == f64::INFINITY) {
                (true, true) => (x, 0.0),
                (true, false) => upper(x, ub),
                (false, true) => lower(x, lb),
                (false, false) => tf::lub_constrain(x, lb, ub),
            }
        }
        Scalarwise::Affine(o, s) => tf::offset_multiplier_constrain(x, o.at(i), s.at(i)),
    }
}

fn lower(x: f64, lb: f64) -> (f64, f64) {
    if lb == f64::NEG_INFINITY {
        (x, 0.0)
    } else {
        tf::lb_constrain(x, lb)
    }
}

fn upper(x: f64, ub: f64) -> (f64, f64) {
    if ub == f64::INFINITY {
        (x, 0.0)
    } else {
        tf::ub_constrain(x, ub)
    }
}

fn check_bounds_order(s: &Scalarwise, n: usize) -> Result<()> {
    for i in 0..n {
        match s {
            Scalarwise::LowerUpper(lb, ub) if !(lb.at(i) < ub.at(i)) => {
                return Err(RuntimeError::rejection(format!(
                    "lower bound {} is not less than upper bound {}",
                    lb.at(i),
                    ub.at(i)
                )));
            }
            Scalarwise::Affine(_, s) if !(s.at(i) > 0.0 && s.at(i).is_finite()) => {
                return Err(RuntimeError::rejection(format!(
                    "multiplier is {}, but must be positive finite",
                    s.at(i)
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Constrain the unconstrained `x` of a parameter of `shape`: the value and
/// log |J|.
pub(crate) fn constrain(ev: &Evaluated, shape: &Shape, x: &[f64]) -> Result<(Value, f64)> {
    let template = shape.zero_value();
    match ev {
        Evaluated::Scalarwise(s) => {
            check_bounds_order(s, x.len())?;
            let mut logj = 0.0;
            let ys: Vec<f64> = x
                .iter()
                .enumerate()
                .map(|(i, &xi)| {
                    let (y, lj) = scalar_constrain(s, i, xi);
                    logj += lj;
                    y
                })
                .collect();
            Ok((with_data(&template, &mut ys.into_iter()), logj))
        }
        Evaluated::Structured(t) => {
            let mut ls = Vec::new();
            leaves(shape, &mut ls);
            let mut ys = Vec::new();
            let mut logj = 0.0;
            let mut offset = 0;
            for leaf in &ls {
                let c = leaf_constraint(t, leaf)?;
                let n = c.unconstrained_len();
                let out = c.constrain(&x[offset..offset + n]);
                offset += n;
                logj += out.log_jacobian;
                ys.extend(out.value);
            }
            Ok((with_data(&template, &mut ys.into_iter()), logj))
        }
    }
}

/// Stan's free transform: the unconstrained scalars of constrained `value`.
pub(crate) fn unconstrain(ev: &Evaluated, shape: &Shape, value: &Value) -> Result<Vec<f64>> {
    let ys = flat(value);
    let violated = |msg: String| RuntimeError::new(ErrorKind::Data, msg);
    match ev {
        Evaluated::Scalarwise(s) => ys
            .iter()
            .enumerate()
            .map(|(i, &y)| {
                let r = match s {
                    Scalarwise::Identity => Ok(y),
                    Scalarwise::Lower(lb) if lb.at(i) == f64::NEG_INFINITY => Ok(y),
                    Scalarwise::Lower(lb) => tf::lb_free(y, lb.at(i)),
                    Scalarwise::Upper(ub) if ub.at(i) == f64::INFINITY => Ok(y),
                    Scalarwise::Upper(ub) => tf::ub_free(y, ub.at(i)),
                    Scalarwise::LowerUpper(lb, ub) => {
                        let (lb, ub) = (lb.at(i), ub.at(i));
                        match (lb == f64::NEG_INFINITY, ub == f64::INFINITY) {
                            (true, true) => Ok(y),
                            (true, false) => tf::ub_free(y, ub),
                            (false, true) => tf::lb_free(y, lb),
                            (false, false) => tf::lub_free(y, lb, ub),
                        }
                    }
                    Scalarwise::Affine(o, m) => tf::offset_multiplier_free(y, o.at(i), m.at(i)),
                };
                r.map_err(|e| violated(format!("element {}: {e}", i + 1)))
            })
            .collect(),
        Evaluated::Structured(t) => {
            let mut ls = Vec::new();
            leaves(shape, &mut ls);
            let mut out = Vec::new();
            let mut offset = 0;
            for leaf in &ls {
                let c = leaf_constraint(t, leaf)?;
                let n = c.constrained_len();
                out.extend(
                    c.unconstrain(&ys[offset..offset + n])
                        .map_err(|e| violated(e.to_string()))?,
                );
                offset += n;
            }
            Ok(out)
        }
    }
}

/// Check that `value` satisfies `transform` (data, transformed data,
/// transformed parameters, generated quantities).
pub(crate) fn check_constraint(
    m: &mut Machine,
    name: &str,
    value: &Value,
    transform: &Transform,
) -> Result<()> {
    check_constraint_with(&mut |e| m.eval(e), name, value, transform)
}

/// [`check_constraint`] with the transform's arguments evaluated by `eval`.
pub(crate) fn check_constraint_with(
    eval: &mut dyn FnMut(&language::mir::Expr) -> Result<Value>,
    name: &str,
    value: &Value,
    transform: &Transform,
) -> Result<()> {
    if let Transform::Tuple(components) = transform {
        // Each component against its own constraint (an array of tuples
        // element by element), named as Stan names them: `x[2].1`.
        return match value {
            Value::Tuple(items) if items.len() == components.len() => items
                .iter()
                .zip(components)
                .enumerate()
                .try_for_each(|(k, (item, t))| {
                    check_constraint_with(eval, &format!("{name}.{}", k + 1), item, t)
                }),
            Value::Array(elems) => elems.iter().enumerate().try_for_each(|(i, elem)| {
                check_constraint_with(eval, &format!("{name}[{}]", i + 1), elem, transform)
            }),
            other => Err(RuntimeError::fatal(format!(
                "{name}: a tuple constraint on a value of type {}",
                shape_of(other)
            ))),
        };
    }
    let ys = flat(value);
    let ev = evaluate_with(eval, transform, ys.len())?;
    let fail = |detail: String| RuntimeError::new(ErrorKind::Constraint, format!("{name}{detail}"));
    match &ev {
        Evaluated::Scalarwise(s) => {
            for (i, &y) in ys.iter().enumerate() {
                let (lb, ub) = match s {
                    Scalarwise::Lower(lb) => (lb.at(i), f64::INFINITY),
                    Scalarwise::Upper(ub) => (f64::NEG_INFINITY, ub.at(i)),
                    Scalarwise::LowerUpper(lb, ub) => (lb.at(i), ub.at(i)),
                    _ => continue,
                };
                if !(y >= lb && y <= ub) {
                    let elem = element_name(value, i);
                    let bound = if !(y >= lb) {
                        format!("greater than or equal to {lb}")
                    } else {
                        format!("less than or equal to {ub}")
                    };
                    return Err(fail(format!("{elem} is {y}, but must be {bound}")));
                }
            }
            Ok(())
        }
        Evaluated::Structured(_) => {
            let shape = shape_of(value);
            unconstrain(&ev, &shape, value)
                .map(|_| ())
                .map_err(|e| fail(format!(": {}", e.message)))
        }
    }
}

/// `[i, j]` naming flat element `k` of `value` (1-based), or "" for scalars.
pub(crate) fn element_name(value: &Value, k: usize) -> String {
    let names = element_names("", &shape_of(value));
    names.get(k).cloned().unwrap_or_default()
}

/// Names of the scalars of a variable of `shape` in Stan's order, e.g.
/// `theta[1]`, `Sigma[2,1]`.
pub(crate) fn element_names(name: &str, shape: &Shape) -> Vec<String> {
    let mut out = Vec::new();
    names_into(shape, &mut Vec::new(), &mut |idx: &[usize]| {
        if idx.is_empty() {
            out.push(name.to_string());
        } else {
            let idx: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
            out.push(format!("{name}[{}]", idx.join(",")));
        }
    });
    out
}

fn names_into(shape: &Shape, prefix: &mut Vec<usize>, emit: &mut dyn FnMut(&[usize])) {
    match shape {
        Shape::Array(n, elem) => {
            for i in 1..=*n {
                prefix.push(i);
                names_into(elem, prefix, emit);
                prefix.pop();
            }
        }
        Shape::Vector(n) | Shape::RowVector(n) => {
            for i in 1..=*n {
                prefix.push(i);
                emit(prefix);
                prefix.pop();
            }
        }
        Shape::Matrix(r, c) => {
            for j in 1..=*c {
                for i in 1..=*r {
                    prefix.extend([i, j]);
                    emit(prefix);
                    prefix.truncate(prefix.len() - 2);
                }
            }
        }
        _ => emit(prefix),
    }
}

/// The shape of a value (sizes of its first elements for arrays).
pub(crate) fn shape_of(v: &Value) -> Shape {
    match v {
        Value::Int(_) => Shape::Int,
        Value::Real(_) => Shape::Real,
        Value::Complex(..) => Shape::Complex,
        Value::Vector(x) => Shape::Vector(x.len()),
        Value::RowVector(x) => Shape::RowVector(x.len()),
        Value::Matrix { rows, cols, .. } => Shape::Matrix(*rows, *cols),
        Value::ComplexVector(x) => Shape::ComplexVector(x.len()),
        Value::ComplexRowVector(x) => Shape::ComplexRowVector(x.len()),
        Value::ComplexMatrix { rows, cols, .. } => Shape::ComplexMatrix(*rows, *cols),
        Value::Array(items) => Shape::Array(
            items.len(),
            Box::new(items.first().map_or(Shape::Real, shape_of)),
        ),
        Value::Tuple(items) => Shape::Tuple(items.iter().map(shape_of).collect()),
    }
}
