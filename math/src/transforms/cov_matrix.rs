//! `cov_matrix[K]`: `Σ = L Lᵀ` with `L` read as a K×K `cholesky_factor_cov`
//! (log-diagonal). Stan's log |J| = K log 2 + Σ_k (K - k + 1) log L_kk
//! (k from 0), i.e. the Jacobian of x ↦ vech(Σ).

use super::cholesky_factor_cov::{free_positions, read_factor};
use super::linalg::{
    at, cholesky, is_symmetric, multiply_lower_tri_self_transpose,
    multiply_lower_tri_self_transpose_vjp,
};
use super::{
    CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_finite, check_len,
};
use std::f64::consts::LN_2;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CovMatrix {
    pub k: usize,
}

impl CovMatrix {
    /// Exponent of L_kk in the Jacobian (Stan's `K - k + 1`, k from 0).
    fn diagonal_weight(&self, k: usize) -> f64 {
        (self.k - k + 1) as f64
    }
}

impl Transform for CovMatrix {
    fn name(&self) -> &'static str {
        "cov_matrix"
    }
    fn unconstrained_len(&self) -> usize {
        self.k * (self.k + 1) / 2
    }
    fn constrained_len(&self) -> usize {
        self.k * self.k
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let k = self.k;
        let l = read_factor(x, k, k);
        let mut log_jacobian = k as f64 * LN_2;
        for ((m, _, diagonal), &v) in free_positions(k, k).zip(x) {
            if diagonal {
                log_jacobian += self.diagonal_weight(m) * v;
            }
        }
        Constrained {
            value: multiply_lower_tri_self_transpose(&l, k),
            log_jacobian,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        let k = self.k;
        check_len(self.name(), y.len(), self.constrained_len())?;
        check_finite(self.name(), y)?;
        if !is_symmetric(y, k, CONSTRAINT_TOLERANCE) {
            return Err(ConstraintError::new(self.name(), "matrix is not symmetric"));
        }
        let l = cholesky(y, k)
            .ok_or_else(|| ConstraintError::new(self.name(), "matrix is not positive definite"))?;
        Ok(free_positions(k, k)
            .map(|(m, n, diagonal)| {
                let v = l[at(k, m, n)];
                if diagonal { v.ln() } else { v }
            })
            .collect())
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        let k = self.k;
        let l = read_factor(x, k, k);
        let l_bar = multiply_lower_tri_self_transpose_vjp(&l, y_bar, k);
        free_positions(k, k)
            .map(|(m, n, diagonal)| {
                let lb = l_bar[at(k, m, n)];
                if diagonal {
                    lb * l[at(k, m, m)] + logj_bar * self.diagonal_weight(m)
                } else {
                    lb
                }
            })
            .collect()
    }
}
