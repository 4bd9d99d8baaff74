//! `ordered[K]`: `y₁ = x₁`, `y_k = y_{k-1} + exp(x_k)`; log |J| = Σ_{k≥2} x_k.

use super::{Constrained, ConstraintError, Transform, check_finite, check_len};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ordered {
    pub len: usize,
}

impl Transform for Ordered {
    fn name(&self) -> &'static str {
        "ordered"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let mut value = Vec::with_capacity(x.len());
        let mut log_jacobian = 0.0;
        for (k, &xk) in x.iter().enumerate() {
            if k == 0 {
                value.push(xk);
            } else {
                value.push(value[k - 1] + xk.exp());
                log_jacobian += xk;
            }
        }
        Constrained {
            value,
            log_jacobian,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        check_finite(self.name(), y)?;
        let mut x = Vec::with_capacity(y.len());
        for (k, &yk) in y.iter().enumerate() {
            if k == 0 {
                x.push(yk);
            } else {
                if !(yk > y[k - 1]) {
                    return Err(ConstraintError::new(
                        self.name(),
                        format!(
                            "element {} ({yk}) is not greater than element {} ({})",
                            k + 1,
                            k,
                            y[k - 1]
                        ),
                    ));
                }
                x.push((yk - y[k - 1]).ln());
            }
        }
        Ok(x)
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        // ∂y_k/∂x_j = exp(x_j) for 1 ≤ j ≤ k: x̄_j = exp(x_j) Σ_{k≥j} ȳ_k.
        let mut x_bar = vec![0.0; x.len()];
        let mut suffix = 0.0;
        for k in (0..x.len()).rev() {
            suffix += y_bar[k];
            x_bar[k] = if k == 0 {
                suffix
            } else {
                suffix * x[k].exp() + logj_bar
            };
        }
        x_bar
    }
}
