//! `unit_vector[K]`: `y = x / ‖x‖`. Stan adds `-½ xᵀx` to the target (a
//! standard-normal density on the free vector that pins down its radius),
//! reported here as the log-Jacobian term.

use super::{
    CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_finite, check_len,
};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitVector {
    pub len: usize,
}

impl Transform for UnitVector {
    fn name(&self) -> &'static str {
        "unit_vector"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let sq: f64 = x.iter().map(|v| v * v).sum();
        let norm = sq.sqrt();
        Constrained {
            value: x.iter().map(|v| v / norm).collect(),
            log_jacobian: -0.5 * sq,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        check_finite(self.name(), y)?;
        let sq: f64 = y.iter().map(|v| v * v).sum();
        if (sq - 1.0).abs() > CONSTRAINT_TOLERANCE {
            return Err(ConstraintError::new(
                self.name(),
                format!("squared norm is {sq}, not 1"),
            ));
        }
        Ok(y.to_vec())
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        // ∂y/∂x = (I - y yᵀ)/‖x‖.
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let y: Vec<f64> = x.iter().map(|v| v / norm).collect();
        let y_dot: f64 = y.iter().zip(y_bar).map(|(a, b)| a * b).sum();
        x.iter()
            .zip(y.iter().zip(y_bar))
            .map(|(xi, (yi, ybi))| (ybi - yi * y_dot) / norm - logj_bar * xi)
            .collect()
    }
}
