//! Exponential/logarithm compounds in their numerically careful forms
//! (Stan: `prim/fun/log1p_exp.hpp`, `log_sum_exp.hpp`, `log_inv_logit.hpp`, …).

use super::LOG_EPSILON;
use super::branchless::{exp_nonpos, log1p_unit};

/// `log(1 - x)`; NaN for `x > 1` (Stan's `log1m`).
pub fn log1m(x: f64) -> f64 {
    if x > 1.0 { f64::NAN } else { (-x).ln_1p() }
}
pub fn log1m_d(x: f64) -> f64 {
    -1.0 / (1.0 - x)
}

/// `log(1 + exp(a))` without overflow.
pub fn log1p_exp(a: f64) -> f64 {
    if a > 0.0 {
        a + (-a).exp().ln_1p()
    } else {
        a.exp().ln_1p()
    }
}
pub fn log1p_exp_d(a: f64) -> f64 {
    inv_logit(a)
}

/// `log(1 - exp(a))` for `a <= 0` (NaN for `a > 0`), switching between
/// `log(-expm1(a))` and `log1m(exp(a))` at `-log 2` as Stan does
/// (Stan writes the threshold as -0.693147).
pub fn log1m_exp(a: f64) -> f64 {
    if a > 0.0 {
        f64::NAN
    } else if a > -std::f64::consts::LN_2 {
        (-a.exp_m1()).ln()
    } else {
        log1m(a.exp())
    }
}
pub fn log1m_exp_d(a: f64) -> f64 {
    -1.0 / (-a).exp_m1()
}

/// `log(exp(x) - exp(y))`; `-inf` when `x == y` finite, NaN when `x < y`.
pub fn log_diff_exp(x: f64, y: f64) -> f64 {
    if x <= y {
        return if x < f64::INFINITY && x == y {
            f64::NEG_INFINITY
        } else {
            f64::NAN
        };
    }
    x + log1m_exp(y - x)
}
pub fn log_diff_exp_grad(x: f64, y: f64) -> (f64, f64) {
    (-1.0 / (y - x).exp_m1(), -1.0 / (x - y).exp_m1())
}

/// `log(exp(a) + exp(b))`.
pub fn log_sum_exp2(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if a == f64::INFINITY && b == f64::INFINITY {
        return f64::INFINITY;
    }
    if a > b {
        a + log1p_exp(b - a)
    } else {
        b + log1p_exp(a - b)
    }
}
pub fn log_sum_exp2_grad(a: f64, b: f64) -> (f64, f64) {
    if a == f64::NEG_INFINITY && b == f64::NEG_INFINITY {
        return (0.0, 0.0);
    }
    (inv_logit(a - b), inv_logit(b - a))
}

/// `log Σ exp(x_i)` over a slice; `-inf` for an empty slice.
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max.is_infinite() {
        return max;
    }
    max + xs.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
}
/// Partials of [`log_sum_exp`]: the softmax of `xs`.
pub fn log_sum_exp_grad(xs: &[f64]) -> Vec<f64> {
    let lse = log_sum_exp(xs);
    if lse == f64::NEG_INFINITY {
        return vec![0.0; xs.len()];
    }
    xs.iter().map(|x| (x - lse).exp()).collect()
}

/// `log(θ exp(λ1) + (1-θ) exp(λ2))`.
pub fn log_mix(theta: f64, lambda1: f64, lambda2: f64) -> f64 {
    log_sum_exp2(theta.ln() + lambda1, log1m(theta) + lambda2)
}
pub fn log_mix_grad(theta: f64, lambda1: f64, lambda2: f64) -> (f64, f64, f64) {
    let f = log_mix(theta, lambda1, lambda2);
    let p1 = (lambda1 - f).exp();
    let p2 = (lambda2 - f).exp();
    (p1 - p2, theta * p1, (1.0 - theta) * p2)
}

/// `log(u / (1 - u))`.
pub fn logit(u: f64) -> f64 {
    (u / (1.0 - u)).ln()
}
pub fn logit_d(u: f64) -> f64 {
    1.0 / (u * (1.0 - u))
}

/// `1 / (1 + exp(-a))`, accurate in both tails. Branch-free (selects
/// around [`exp_nonpos`] of `−|a|`), so mapping it over a slice
/// vectorizes.
#[inline(always)]
pub fn inv_logit(a: f64) -> f64 {
    inv_logit_given(a, exp_nonpos(-a.abs()))
}

/// [`inv_logit`] of `a` given `e = exp(−|a|)`.
#[inline(always)]
fn inv_logit_given(a: f64, e: f64) -> f64 {
    // eᵃ/(1 + eᵃ) or 1/(1 + e⁻ᵃ) as ONE division of a selected numerator:
    // computed branch-free, the two quotients were two vector divisions.
    let numerator = if a < 0.0 { e } else { 1.0 };
    let q = numerator / (1.0 + e);
    if a < LOG_EPSILON { e } else { q }
}
pub fn inv_logit_d(a: f64) -> f64 {
    inv_logit(a) * inv_logit(-a)
}

/// `log(inv_logit(u))`: `u − log1p(eᵘ)` for `u < 0`, else
/// `−log1p(e⁻ᵘ)`, branch-free as [`inv_logit`].
#[inline(always)]
pub fn log_inv_logit(u: f64) -> f64 {
    log_inv_logit_given(u, exp_nonpos(-u.abs()))
}

/// [`log_inv_logit`] of `u` given `e = exp(−|u|)`.
#[inline(always)]
fn log_inv_logit_given(u: f64, e: f64) -> f64 {
    let l = log1p_unit(e);
    if u < 0.0 { u - l } else { -l }
}

/// `(log_inv_logit(u), inv_logit(−u))`, bit for bit, with one `exp(−|u|)`
/// for both: the value and the derivative of `bernoulli_logit`'s log
/// mass (the gradient program computes `log_inv_logit((2y − 1) η)` and
/// later `inv_logit(−(2y − 1) η)`), whose exponential was a quarter of
/// the two maps' time.
#[inline(always)]
pub fn log_inv_logit_and_neg_inv_logit(u: f64) -> (f64, f64) {
    // |−u| is |u|, so both functions would compute this same e.
    log_inv_logit_and_neg_inv_logit_given(u, exp_nonpos(-u.abs()))
}

/// [`log_inv_logit_and_neg_inv_logit`] of `u` given `e = exp_nonpos(−|u|)`
/// ([`exp_nonpos`]): a map can compute the exponentials of a run of
/// elements first, then these (two shorter chains of dependent operations
/// per element, so the core overlaps more elements).
#[inline(always)]
pub fn log_inv_logit_and_neg_inv_logit_given(u: f64, e: f64) -> (f64, f64) {
    (log_inv_logit_given(u, e), inv_logit_given(-u, e))
}
#[inline(always)]
pub fn log_inv_logit_d(u: f64) -> f64 {
    inv_logit(-u)
}

/// `log(1 - inv_logit(u))`.
pub fn log1m_inv_logit(u: f64) -> f64 {
    if u > 0.0 {
        -u - (-u).exp().ln_1p()
    } else {
        -u.exp().ln_1p()
    }
}
pub fn log1m_inv_logit_d(u: f64) -> f64 {
    -inv_logit(u)
}

/// `x log y` with the convention `0 log 0 = 0` (Stan's `lmultiply`, a.k.a.
/// `multiply_log`).
pub fn lmultiply(x: f64, y: f64) -> f64 {
    if x == 0.0 && y == 0.0 {
        0.0
    } else {
        x * y.ln()
    }
}
pub fn lmultiply_grad(x: f64, y: f64) -> (f64, f64) {
    (y.ln(), x / y)
}

/// `log(inv_logit(x) - inv_logit(y))` for `x > y`. Stan writes it as
/// `x - log1p_exp(x) + log1m_exp(y - x) - log1p_exp(y)`; the first two and
/// the last terms are evaluated as `log_inv_logit(x)` and
/// `log1m_inv_logit(y)`, which avoids the cancellation in `x - log1p_exp(x)`.
pub fn log_inv_logit_diff(x: f64, y: f64) -> f64 {
    if x.is_infinite() && x == y {
        return f64::NAN;
    }
    log_inv_logit(x) + log1m_exp(y - x) + log1m_inv_logit(y)
}
pub fn log_inv_logit_diff_grad(x: f64, y: f64) -> (f64, f64) {
    let r = 1.0 / (x - y).exp_m1();
    (inv_logit(-x) + r, -inv_logit(y) - r)
}
