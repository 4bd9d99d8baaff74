//! `corr_matrix[K]`: a correlation matrix `Ω = L Lᵀ` from K(K-1)/2 free
//! values, which are `atanh` of Stan's canonical partial correlations in
//! column-major order of the strict lower triangle (Stan's `read_corr_L`;
//! note this differs from the row-major order of `cholesky_factor_corr`).
//! Stan's log |J| is `Σ log(1 - z²) + ½ Σ_{c, r>c} (K - c - 2) log(1 - z_{r,c}²)`
//! (c from 0), the Jacobian of x ↦ strict lower triangle of Ω.

use super::corr_partials::{
    cholesky_from_partials, cholesky_from_partials_vjp, column_major_index, log_sech2,
    partials_from_cholesky, row_major_index,
};
use super::linalg::{
    at, cholesky, is_symmetric, multiply_lower_tri_self_transpose,
    multiply_lower_tri_self_transpose_vjp,
};
use super::{
    CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_finite, check_len,
};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CorrMatrix {
    pub k: usize,
}

impl CorrMatrix {
    /// Jacobian weight of `log(1 - z²)` for the partial correlation (r, c).
    fn weight(&self, c: usize) -> f64 {
        1.0 + 0.5 * (self.k - c - 2) as f64
    }

    /// `(r, c, column-major position, row-major position)` of each element.
    fn elements(&self) -> impl Iterator<Item = (usize, usize, usize, usize)> + '_ {
        let k = self.k;
        (0..k).flat_map(move |c| {
            (c + 1..k).map(move |r| (r, c, column_major_index(k, r, c), row_major_index(r, c)))
        })
    }

    /// Row-major partial correlations from the free vector.
    fn partials(&self, x: &[f64]) -> Vec<f64> {
        let mut z = vec![0.0; x.len()];
        for (_, _, cm, rm) in self.elements() {
            z[rm] = x[cm].tanh();
        }
        z
    }
}

impl Transform for CorrMatrix {
    fn name(&self) -> &'static str {
        "corr_matrix"
    }
    fn unconstrained_len(&self) -> usize {
        self.k * self.k.saturating_sub(1) / 2
    }
    fn constrained_len(&self) -> usize {
        self.k * self.k
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let l = cholesky_from_partials(&self.partials(x), self.k);
        let log_jacobian = self
            .elements()
            .map(|(_, c, cm, _)| self.weight(c) * log_sech2(x[cm]))
            .sum();
        Constrained {
            value: multiply_lower_tri_self_transpose(&l, self.k),
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
        if let Some(i) = (0..k).find(|&i| (y[at(k, i, i)] - 1.0).abs() > CONSTRAINT_TOLERANCE) {
            return Err(ConstraintError::new(
                self.name(),
                format!(
                    "diagonal element [{0}, {0}] is {1}, not 1",
                    i + 1,
                    y[at(k, i, i)]
                ),
            ));
        }
        let l = cholesky(y, k)
            .ok_or_else(|| ConstraintError::new(self.name(), "matrix is not positive definite"))?;
        let z = partials_from_cholesky(&l, k);
        let mut x = vec![0.0; z.len()];
        for (_, _, cm, rm) in self.elements() {
            x[cm] = z[rm].atanh();
        }
        Ok(x)
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        let z = self.partials(x);
        let l = cholesky_from_partials(&z, self.k);
        let l_bar = multiply_lower_tri_self_transpose_vjp(&l, y_bar, self.k);
        let z_bar = cholesky_from_partials_vjp(&z, &l, &l_bar, self.k);
        let mut x_bar = vec![0.0; x.len()];
        for (_, c, cm, rm) in self.elements() {
            x_bar[cm] =
                z_bar[rm] * log_sech2(x[cm]).exp() - 2.0 * z[rm] * self.weight(c) * logj_bar;
        }
        x_bar
    }
}
