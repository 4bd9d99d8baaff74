//! `cholesky_factor_corr[K]`: Cholesky factor of a correlation matrix, from
//! K(K-1)/2 free values in row-major order of the strict lower triangle.
//! `z = tanh(x)` are partial correlations; Stan's log |J| is
//! `Σ log(1 - z²) + ½ Σ_i Σ_{j=1}^{i-1} log(1 - Σ_{l<j} L[i,l]²)`, which
//! per element (i, l) is a weight `1 + ½(i - 1 - l)` on `log(1 - z²)` for
//! l ≤ i-2 and 1 for l = i-1.

use super::corr_partials::{
    cholesky_from_partials, cholesky_from_partials_vjp, log_sech2, partials_from_cholesky,
    row_major_index,
};
use super::linalg::at;
use super::{CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_len};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CholeskyFactorCorr {
    pub k: usize,
}

/// Jacobian weight of `log(1 - z²)` for row-major element (i, l).
fn weight(i: usize, l: usize) -> f64 {
    1.0 + 0.5 * (i - 1 - l) as f64
}

/// Calls `f(i, l, position)` for each free element in row-major order.
fn for_each_element(k: usize, mut f: impl FnMut(usize, usize, usize)) {
    for i in 1..k {
        for l in 0..i {
            f(i, l, row_major_index(i, l));
        }
    }
}

impl Transform for CholeskyFactorCorr {
    fn name(&self) -> &'static str {
        "cholesky_factor_corr"
    }
    fn unconstrained_len(&self) -> usize {
        self.k * self.k.saturating_sub(1) / 2
    }
    fn constrained_len(&self) -> usize {
        self.k * self.k
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let z: Vec<f64> = x.iter().map(|v| v.tanh()).collect();
        let mut log_jacobian = 0.0;
        for_each_element(self.k, |i, l, p| {
            log_jacobian += weight(i, l) * log_sech2(x[p])
        });
        Constrained {
            value: cholesky_from_partials(&z, self.k),
            log_jacobian,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        let k = self.k;
        check_len(self.name(), y.len(), self.constrained_len())?;
        super::cholesky_factor_cov::check_cholesky_factor(self.name(), y, k, k)?;
        for i in 0..k {
            let sq: f64 = (0..=i).map(|j| y[at(k, i, j)].powi(2)).sum();
            if (sq - 1.0).abs() > CONSTRAINT_TOLERANCE {
                return Err(ConstraintError::new(
                    self.name(),
                    format!("row {} has squared norm {sq}, not 1", i + 1),
                ));
            }
        }
        Ok(partials_from_cholesky(y, k)
            .into_iter()
            .map(f64::atanh)
            .collect())
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        let z: Vec<f64> = x.iter().map(|v| v.tanh()).collect();
        let l = cholesky_from_partials(&z, self.k);
        let z_bar = cholesky_from_partials_vjp(&z, &l, y_bar, self.k);
        let mut x_bar = vec![0.0; x.len()];
        for_each_element(self.k, |i, l, p| {
            // dz/dx = sech²x; d/dx log sech²x = -2 tanh x.
            x_bar[p] = z_bar[p] * log_sech2(x[p]).exp() - 2.0 * z[p] * weight(i, l) * logj_bar;
        });
        x_bar
    }
}
