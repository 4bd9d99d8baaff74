//! `simplex[K]` (Stan ≥ 2.37): `softmax(sum_to_zero_constrain(x))`, the
//! inverse isometric log-ratio transform. Stan's log |J| is
//! `Σ log y_i + ½ log K`, which for zero-sum `z` equals `-K·log_sum_exp(z) + ½ log K`.
//! (Earlier Stan versions used centered stick-breaking.)

use super::sum_to_zero::{sum_to_zero_constrain, sum_to_zero_vjp};
use super::{
    CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_finite, check_len,
};
use crate::scalar::log_sum_exp;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Simplex {
    pub len: usize,
}

/// Stan's `check_simplex`: non-negative elements summing to 1 within tolerance.
pub(crate) fn check_simplex(constraint: &'static str, y: &[f64]) -> Result<(), ConstraintError> {
    check_finite(constraint, y)?;
    if y.is_empty() {
        return Err(ConstraintError::new(
            constraint,
            "a simplex cannot be empty",
        ));
    }
    let sum: f64 = y.iter().sum();
    if (sum - 1.0).abs() > CONSTRAINT_TOLERANCE {
        return Err(ConstraintError::new(
            constraint,
            format!("elements sum to {sum}, not 1"),
        ));
    }
    if let Some(i) = y.iter().position(|&v| v < 0.0) {
        return Err(ConstraintError::new(
            constraint,
            format!("element {} ({}) is negative", i + 1, y[i]),
        ));
    }
    Ok(())
}

impl Simplex {
    /// `(y, log |J|)` for the free vector `x` of length K-1.
    pub fn constrain_slice(x: &[f64]) -> Constrained {
        let z = sum_to_zero_constrain(x);
        let k = z.len() as f64;
        let lse = log_sum_exp(&z);
        Constrained {
            value: z.iter().map(|zi| (zi - lse).exp()).collect(),
            log_jacobian: -k * lse + 0.5 * k.ln(),
        }
    }

    /// `simplex_free` without the length check: the pivot (ILR) coordinates
    /// of `log y`, `x_i = (Σ_{j≤i} log y_j - i·log y_{i+1}) / √(i(i+1))`.
    pub fn free_slice(y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_simplex("simplex", y)?;
        let mut cumulative = 0.0;
        Ok((1..y.len())
            .map(|i| {
                cumulative += y[i - 1].ln();
                let i_f = i as f64;
                (cumulative - i_f * y[i].ln()) / (i_f * (i_f + 1.0)).sqrt()
            })
            .collect())
    }

    /// Reverse-mode rule for one simplex.
    pub fn vjp_slice(x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        let y = Self::constrain_slice(x).value;
        let k = y.len() as f64;
        let dot: f64 = y.iter().zip(y_bar).map(|(a, b)| a * b).sum();
        // softmax backprop plus ∂/∂z(-K lse(z)) = -K·y (Σz = 0 is built in).
        let z_bar: Vec<f64> = y
            .iter()
            .zip(y_bar)
            .map(|(yi, ybi)| yi * (ybi - dot) - logj_bar * k * yi)
            .collect();
        sum_to_zero_vjp(&z_bar)
    }
}

impl Transform for Simplex {
    fn name(&self) -> &'static str {
        "simplex"
    }
    fn unconstrained_len(&self) -> usize {
        self.len.saturating_sub(1)
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        if self.len == 0 {
            return Constrained {
                value: Vec::new(),
                log_jacobian: 0.0,
            };
        }
        Self::constrain_slice(x)
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        Self::free_slice(y)
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        if self.len == 0 {
            return Vec::new();
        }
        Self::vjp_slice(x, y_bar, logj_bar)
    }
}
