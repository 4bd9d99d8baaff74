//! The `offset`/`multiplier` affine transform (Stan's
//! `offset_multiplier_constrain`): `y = μ + σ x`, log |J| = log σ per element.

use super::{Constrained, ConstraintError, Transform, check_len};

/// `y = offset + multiplier * x`; returns `(y, log |J|)`.
pub fn offset_multiplier_constrain(x: f64, offset: f64, multiplier: f64) -> (f64, f64) {
    (offset + multiplier * x, multiplier.ln())
}
/// Adjoints `(x̄, offset̄, multiplier̄)` of [`offset_multiplier_constrain`].
pub fn offset_multiplier_constrain_vjp(
    x: f64,
    _offset: f64,
    multiplier: f64,
    y_bar: f64,
    logj_bar: f64,
) -> (f64, f64, f64) {
    (y_bar * multiplier, y_bar, y_bar * x + logj_bar / multiplier)
}
/// Inverse: `(y - offset) / multiplier`; the multiplier must be positive and
/// finite and the offset finite (Stan's checks).
pub fn offset_multiplier_free(
    y: f64,
    offset: f64,
    multiplier: f64,
) -> Result<f64, ConstraintError> {
    if !offset.is_finite() {
        return Err(ConstraintError::new(
            "offset",
            format!("offset {offset} is not finite"),
        ));
    }
    if !(multiplier > 0.0 && multiplier.is_finite()) {
        return Err(ConstraintError::new(
            "multiplier",
            format!("multiplier {multiplier} is not positive and finite"),
        ));
    }
    Ok((y - offset) / multiplier)
}

/// `len` elements with `offset=offset, multiplier=multiplier`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffsetMultiplier {
    pub offset: f64,
    pub multiplier: f64,
    pub len: usize,
}

impl Transform for OffsetMultiplier {
    fn name(&self) -> &'static str {
        "offset/multiplier"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        Constrained {
            value: x
                .iter()
                .map(|&xi| offset_multiplier_constrain(xi, self.offset, self.multiplier).0)
                .collect(),
            log_jacobian: x.len() as f64 * self.multiplier.ln(),
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        y.iter()
            .map(|&yi| offset_multiplier_free(yi, self.offset, self.multiplier))
            .collect()
    }
    fn constrain_vjp(&self, _x: &[f64], y_bar: &[f64], _logj_bar: f64) -> Vec<f64> {
        y_bar.iter().map(|yb| yb * self.multiplier).collect()
    }
}
