//! Stan's constraint transforms.
//!
//! Each transform maps an unconstrained vector `x` (Stan's order of free
//! parameters) to a constrained value `y` (matrices column-major, as Stan
//! serializes them) and the log absolute Jacobian determinant Stan adds to the
//! target. `unconstrain` is Stan's `*_free`: it validates `y` and returns an
//! error, never panics. `constrain_vjp` is the reverse-mode rule: given the
//! adjoints of `y` and of the log-Jacobian term, the adjoint of `x`.
//!
//! Scalar bound transforms also come as free functions whose rules include
//! the partials w.r.t. the bounds, since Stan allows parameters as bounds.

mod affine;
mod bounds;
mod cholesky_factor_corr;
mod cholesky_factor_cov;
mod constraint;
mod corr_matrix;
mod corr_partials;
mod cov_matrix;
pub mod linalg;
mod ordered;
mod positive_ordered;
mod simplex;
mod stochastic;
mod sum_to_zero;
mod sum_to_zero_matrix;
mod unit_vector;

pub use affine::*;
pub use bounds::*;
pub use cholesky_factor_corr::CholeskyFactorCorr;
pub use cholesky_factor_cov::CholeskyFactorCov;
pub use constraint::{Constraint, Identity};
pub use corr_matrix::CorrMatrix;
pub use cov_matrix::CovMatrix;
pub use ordered::Ordered;
pub use positive_ordered::PositiveOrdered;
pub use simplex::Simplex;
pub use stochastic::{StochasticColumn, StochasticRow};
pub use sum_to_zero::SumToZeroVector;
pub use sum_to_zero_matrix::SumToZeroMatrix;
pub use unit_vector::UnitVector;

use std::fmt;

/// Stan's `CONSTRAINT_TOLERANCE` for sums, norms and symmetry checks.
pub const CONSTRAINT_TOLERANCE: f64 = 1e-8;

/// A constrained value and the log |J| of the transform that produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct Constrained {
    pub value: Vec<f64>,
    pub log_jacobian: f64,
}

/// `unconstrain` was given a value that violates the constraint.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstraintError {
    /// Stan's name of the constraint, e.g. `"simplex"`.
    pub constraint: &'static str,
    pub message: String,
}

impl ConstraintError {
    pub(crate) fn new(constraint: &'static str, message: impl Into<String>) -> Self {
        Self {
            constraint,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConstraintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} constraint violated: {}",
            self.constraint, self.message
        )
    }
}

impl std::error::Error for ConstraintError {}

/// A constraint transform of a fixed shape.
pub trait Transform {
    /// Stan's name for the constraint (`"simplex"`, `"cholesky_factor_corr"`, …).
    fn name(&self) -> &'static str;
    /// Number of free (unconstrained) parameters.
    fn unconstrained_len(&self) -> usize;
    /// Number of elements of the constrained value.
    fn constrained_len(&self) -> usize;
    /// `x ↦ (y, log |J|)`; `x.len() == unconstrained_len()`.
    fn constrain(&self, x: &[f64]) -> Constrained;
    /// Stan's `*_free`: the inverse of `constrain`, validating `y` first.
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError>;
    /// Reverse-mode rule: `x̄ = (∂y/∂x)ᵀ ȳ + logj_bar · ∂log|J|/∂x`.
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64>;
}

pub(crate) fn check_len(
    constraint: &'static str,
    got: usize,
    expected: usize,
) -> Result<(), ConstraintError> {
    if got == expected {
        Ok(())
    } else {
        Err(ConstraintError::new(
            constraint,
            format!("expected {expected} elements, found {got}"),
        ))
    }
}

pub(crate) fn check_finite(constraint: &'static str, y: &[f64]) -> Result<(), ConstraintError> {
    match y.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(ConstraintError::new(
            constraint,
            format!("element {} is {}", i + 1, y[i]),
        )),
    }
}
