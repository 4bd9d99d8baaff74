//! Vector primitives whose derivative rules do not decompose into scalar
//! ones cheaply: `log_sum_exp`, `softmax`, `log_softmax` (each with its
//! reverse-mode rule: the adjoint of the input given the adjoint of the
//! output).

use crate::scalar::log_sum_exp;

/// Adjoint of `log_sum_exp(x)` given the output adjoint: `ȳ·softmax(x)`.
pub fn log_sum_exp_vjp(x: &[f64], y_bar: f64) -> Vec<f64> {
    softmax(x).into_iter().map(|p| p * y_bar).collect()
}

/// `exp(x - log_sum_exp(x))`; empty for empty input.
pub fn softmax(x: &[f64]) -> Vec<f64> {
    let lse = log_sum_exp(x);
    x.iter().map(|v| (v - lse).exp()).collect()
}

/// Adjoint of [`softmax`]: `x̄ = y ⊙ (ȳ - ⟨y, ȳ⟩)`.
pub fn softmax_vjp(x: &[f64], y_bar: &[f64]) -> Vec<f64> {
    let y = softmax(x);
    let dot: f64 = y.iter().zip(y_bar).map(|(a, b)| a * b).sum();
    y.iter()
        .zip(y_bar)
        .map(|(yi, ybi)| yi * (ybi - dot))
        .collect()
}

/// `x - log_sum_exp(x)`.
pub fn log_softmax(x: &[f64]) -> Vec<f64> {
    let lse = log_sum_exp(x);
    x.iter().map(|v| v - lse).collect()
}

/// Adjoint of [`log_softmax`]: `x̄ = ȳ - softmax(x)·Σȳ`.
pub fn log_softmax_vjp(x: &[f64], y_bar: &[f64]) -> Vec<f64> {
    let total: f64 = y_bar.iter().sum();
    softmax(x)
        .iter()
        .zip(y_bar)
        .map(|(p, yb)| yb - p * total)
        .collect()
}
