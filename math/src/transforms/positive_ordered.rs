//! `positive_ordered[K]`: `y₁ = exp(x₁)`, `y_k = y_{k-1} + exp(x_k)`;
//! log |J| = Σ x_k.

use super::{Constrained, ConstraintError, Transform, check_finite, check_len};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PositiveOrdered {
    pub len: usize,
}

impl Transform for PositiveOrdered {
    fn name(&self) -> &'static str {
        "positive_ordered"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let mut value = Vec::with_capacity(x.len());
        let mut running = 0.0;
        for &xk in x {
            running += xk.exp();
            value.push(running);
        }
        Constrained {
            value,
            log_jacobian: x.iter().sum(),
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        check_finite(self.name(), y)?;
        if let Some(&first) = y.first()
            && first < 0.0
        {
            return Err(ConstraintError::new(
                self.name(),
                format!("element 1 ({first}) is negative"),
            ));
        }
        let mut x = Vec::with_capacity(y.len());
        for (k, &yk) in y.iter().enumerate() {
            if k == 0 {
                x.push(yk.ln());
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
        let mut x_bar = vec![0.0; x.len()];
        let mut suffix = 0.0;
        for k in (0..x.len()).rev() {
            suffix += y_bar[k];
            x_bar[k] = suffix * x[k].exp() + logj_bar;
        }
        x_bar
    }
}
