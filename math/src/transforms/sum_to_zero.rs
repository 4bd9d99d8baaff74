//! `sum_to_zero_vector[K]` (Stan ≥ 2.36): the inverse isometric log-ratio
//! (pivot-coordinate) map from K-1 free values to K values summing to zero.
//! It is linear and an isometry (orthonormal basis of the zero-sum subspace),
//! so Stan adds no Jacobian term.

use super::{
    CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_finite, check_len,
};

/// Stan's `sum_to_zero_constrain`: N free values to N+1 summing to zero.
pub fn sum_to_zero_constrain(y: &[f64]) -> Vec<f64> {
    let n = y.len();
    let mut z = vec![0.0; n + 1];
    let mut sum_w = 0.0;
    for i in (1..=n).rev() {
        let nf = i as f64;
        let w = y[i - 1] / (nf * (nf + 1.0)).sqrt();
        sum_w += w;
        z[i - 1] += sum_w;
        z[i] -= w * nf;
    }
    z
}

/// Adjoint of [`sum_to_zero_constrain`] (the transpose of the linear map):
/// with `w_j = y_{j-1}/√(j(j+1))`, `z_m` gets `w_j` for every `j > m` and
/// `-m·w_m`, so `w̄_j = Σ_{m<j} z̄_m - j·z̄_j`.
pub fn sum_to_zero_vjp(z_bar: &[f64]) -> Vec<f64> {
    let n = z_bar.len().saturating_sub(1);
    let mut y_bar = vec![0.0; n];
    let mut prefix = 0.0;
    for j in 1..=n {
        prefix += z_bar[j - 1];
        let jf = j as f64;
        y_bar[j - 1] = (prefix - jf * z_bar[j]) / (jf * (jf + 1.0)).sqrt();
    }
    y_bar
}

/// Stan's `sum_to_zero_free` without the validity check.
pub fn sum_to_zero_free_unchecked(z: &[f64]) -> Vec<f64> {
    let n = z.len().saturating_sub(1);
    let mut y = vec![0.0; n];
    if n == 0 {
        return y;
    }
    let nf = n as f64;
    y[n - 1] = -z[n] * (nf * (nf + 1.0)).sqrt() / nf;
    let mut sum_w = 0.0;
    for i in (0..n.saturating_sub(1)).rev() {
        let k = (i + 1) as f64;
        let w = y[i + 1] / ((k + 1.0) * (k + 2.0)).sqrt();
        sum_w += w;
        y[i] = (sum_w - z[i + 1]) * (k * (k + 1.0)).sqrt() / k;
    }
    y
}

pub(crate) fn check_sums_to_zero(
    constraint: &'static str,
    z: &[f64],
) -> Result<(), ConstraintError> {
    let sum: f64 = z.iter().sum();
    if sum.abs() > CONSTRAINT_TOLERANCE {
        return Err(ConstraintError::new(
            constraint,
            format!("elements sum to {sum}, not 0"),
        ));
    }
    Ok(())
}

/// `sum_to_zero_vector[len]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SumToZeroVector {
    pub len: usize,
}

impl Transform for SumToZeroVector {
    fn name(&self) -> &'static str {
        "sum_to_zero_vector"
    }
    fn unconstrained_len(&self) -> usize {
        self.len.saturating_sub(1)
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let value = if self.len == 0 {
            Vec::new()
        } else {
            sum_to_zero_constrain(x)
        };
        Constrained {
            value,
            log_jacobian: 0.0,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        check_finite(self.name(), y)?;
        check_sums_to_zero(self.name(), y)?;
        Ok(sum_to_zero_free_unchecked(y))
    }
    fn constrain_vjp(&self, _x: &[f64], y_bar: &[f64], _logj_bar: f64) -> Vec<f64> {
        sum_to_zero_vjp(y_bar)
    }
}
