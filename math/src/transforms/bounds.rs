//! Lower, upper and lower+upper bound transforms (Stan's `lb_constrain`,
//! `ub_constrain`, `lub_constrain` and their `_free` inverses). Infinite
//! bounds degrade to the one-sided or identity transform, as in Stan.

use super::{Constrained, ConstraintError, Transform, check_len};
use crate::scalar::{inv_logit, log1p_exp, logit};

/// `y = lb + exp(x)`, log |J| = x. Returns `(y, log_jacobian)`.
pub fn lb_constrain(x: f64, lb: f64) -> (f64, f64) {
    if lb == f64::NEG_INFINITY {
        (x, 0.0)
    } else {
        (x.exp() + lb, x)
    }
}
/// Adjoints `(x̄, lb̄)` of [`lb_constrain`].
pub fn lb_constrain_vjp(x: f64, lb: f64, y_bar: f64, logj_bar: f64) -> (f64, f64) {
    if lb == f64::NEG_INFINITY {
        (y_bar, 0.0)
    } else {
        (y_bar * x.exp() + logj_bar, y_bar)
    }
}
/// Inverse of [`lb_constrain`]: `log(y - lb)`; `y < lb` is an error.
pub fn lb_free(y: f64, lb: f64) -> Result<f64, ConstraintError> {
    if lb == f64::NEG_INFINITY {
        return Ok(y);
    }
    if !(y >= lb) {
        return Err(ConstraintError::new(
            "lower",
            format!("{y} is not >= lower bound {lb}"),
        ));
    }
    Ok((y - lb).ln())
}

/// `y = ub - exp(x)`, log |J| = x.
pub fn ub_constrain(x: f64, ub: f64) -> (f64, f64) {
    if ub == f64::INFINITY {
        (x, 0.0)
    } else {
        (ub - x.exp(), x)
    }
}
/// Adjoints `(x̄, ub̄)` of [`ub_constrain`].
pub fn ub_constrain_vjp(x: f64, ub: f64, y_bar: f64, logj_bar: f64) -> (f64, f64) {
    if ub == f64::INFINITY {
        (y_bar, 0.0)
    } else {
        (-y_bar * x.exp() + logj_bar, y_bar)
    }
}
/// Inverse of [`ub_constrain`]: `log(ub - y)`.
pub fn ub_free(y: f64, ub: f64) -> Result<f64, ConstraintError> {
    if ub == f64::INFINITY {
        return Ok(y);
    }
    if !(y <= ub) {
        return Err(ConstraintError::new(
            "upper",
            format!("{y} is not <= upper bound {ub}"),
        ));
    }
    Ok((ub - y).ln())
}

/// `y = lb + (ub - lb) inv_logit(x)`,
/// log |J| = log(ub - lb) - |x| - 2 log1p(exp(-|x|)).
pub fn lub_constrain(x: f64, lb: f64, ub: f64) -> (f64, f64) {
    match (lb == f64::NEG_INFINITY, ub == f64::INFINITY) {
        (true, true) => (x, 0.0),
        (true, false) => ub_constrain(x, ub),
        (false, true) => lb_constrain(x, lb),
        (false, false) => {
            let diff = ub - lb;
            let logj = diff.ln() - x.abs() - 2.0 * log1p_exp(-x.abs());
            (diff * inv_logit(x) + lb, logj)
        }
    }
}
/// Adjoints `(x̄, lb̄, ub̄)` of [`lub_constrain`].
pub fn lub_constrain_vjp(x: f64, lb: f64, ub: f64, y_bar: f64, logj_bar: f64) -> (f64, f64, f64) {
    match (lb == f64::NEG_INFINITY, ub == f64::INFINITY) {
        (true, true) => (y_bar, 0.0, 0.0),
        (true, false) => {
            let (xb, ub_bar) = ub_constrain_vjp(x, ub, y_bar, logj_bar);
            (xb, 0.0, ub_bar)
        }
        (false, true) => {
            let (xb, lb_bar) = lb_constrain_vjp(x, lb, y_bar, logj_bar);
            (xb, lb_bar, 0.0)
        }
        (false, false) => {
            let diff = ub - lb;
            let s = inv_logit(x);
            let one_minus_s = inv_logit(-x);
            let x_bar = y_bar * diff * s * one_minus_s + logj_bar * (one_minus_s - s);
            let lb_bar = y_bar * one_minus_s - logj_bar / diff;
            let ub_bar = y_bar * s + logj_bar / diff;
            (x_bar, lb_bar, ub_bar)
        }
    }
}
/// Inverse of [`lub_constrain`]: `logit((y - lb) / (ub - lb))`.
pub fn lub_free(y: f64, lb: f64, ub: f64) -> Result<f64, ConstraintError> {
    match (lb == f64::NEG_INFINITY, ub == f64::INFINITY) {
        (true, true) => Ok(y),
        (true, false) => ub_free(y, ub),
        (false, true) => lb_free(y, lb),
        (false, false) => {
            if !(lb < ub) {
                return Err(ConstraintError::new(
                    "lower/upper",
                    format!("lower bound {lb} is not below upper bound {ub}"),
                ));
            }
            if !(lb <= y && y <= ub) {
                return Err(ConstraintError::new(
                    "lower/upper",
                    format!("{y} is not in [{lb}, {ub}]"),
                ));
            }
            Ok(logit((y - lb) / (ub - lb)))
        }
    }
}

/// `len` elements each with `lower=lb`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lower {
    pub lb: f64,
    pub len: usize,
}

/// `len` elements each with `upper=ub`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Upper {
    pub ub: f64,
    pub len: usize,
}

/// `len` elements each with `lower=lb, upper=ub`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LowerUpper {
    pub lb: f64,
    pub ub: f64,
    pub len: usize,
}

/// Shared elementwise plumbing for the bound transforms.
fn elementwise(x: &[f64], f: impl Fn(f64) -> (f64, f64)) -> Constrained {
    let mut log_jacobian = 0.0;
    let value = x
        .iter()
        .map(|&xi| {
            let (y, lj) = f(xi);
            log_jacobian += lj;
            y
        })
        .collect();
    Constrained {
        value,
        log_jacobian,
    }
}

impl Transform for Lower {
    fn name(&self) -> &'static str {
        "lower"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        elementwise(x, |xi| lb_constrain(xi, self.lb))
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        y.iter().map(|&yi| lb_free(yi, self.lb)).collect()
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        x.iter()
            .zip(y_bar)
            .map(|(&xi, &yb)| lb_constrain_vjp(xi, self.lb, yb, logj_bar).0)
            .collect()
    }
}

impl Transform for Upper {
    fn name(&self) -> &'static str {
        "upper"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        elementwise(x, |xi| ub_constrain(xi, self.ub))
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        y.iter().map(|&yi| ub_free(yi, self.ub)).collect()
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        x.iter()
            .zip(y_bar)
            .map(|(&xi, &yb)| ub_constrain_vjp(xi, self.ub, yb, logj_bar).0)
            .collect()
    }
}

impl Transform for LowerUpper {
    fn name(&self) -> &'static str {
        "lower/upper"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        elementwise(x, |xi| lub_constrain(xi, self.lb, self.ub))
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        y.iter().map(|&yi| lub_free(yi, self.lb, self.ub)).collect()
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        x.iter()
            .zip(y_bar)
            .map(|(&xi, &yb)| lub_constrain_vjp(xi, self.lb, self.ub, yb, logj_bar).0)
            .collect()
    }
}
