//! Gamma-family functions: lgamma, digamma, trigamma, lbeta, lmgamma,
//! binomial coefficients and falling/rising factorials
//! (Stan: `prim/fun/lbeta.hpp`, `lgamma_stirling_diff.hpp`,
//! `binomial_coefficient_log.hpp`, `lmgamma.hpp`, …).

use super::{HALF_LOG_TWO_PI, log1m};
use std::f64::consts::PI;

/// Below this, Stan evaluates `lgamma` directly rather than via Stirling.
const STIRLING_DIFF_USEFUL: f64 = 10.0;

/// `log |Γ(x)|` (`+inf` at the poles).
pub fn lgamma(x: f64) -> f64 {
    super::clib::lgamma(x)
}
pub fn lgamma_d(x: f64) -> f64 {
    digamma(x)
}

/// `Γ(x)`.
pub fn tgamma(x: f64) -> f64 {
    super::clib::tgamma(x)
}
pub fn tgamma_d(x: f64) -> f64 {
    tgamma(x) * digamma(x)
}

/// `tan(πx)` reduced modulo the period first, so it stays exact near integers.
fn tan_pi(x: f64) -> f64 {
    (PI * (x - x.round())).tan()
}
fn sin_pi(x: f64) -> f64 {
    let r = x - 2.0 * (x / 2.0).round();
    (PI * r).sin()
}
fn is_nonpositive_integer(x: f64) -> bool {
    x <= 0.0 && x == x.floor()
}

/// Digamma ψ(x) = d/dx log Γ(x): reflection for x < 0, upward recurrence to
/// x ≥ 10, then the asymptotic (Bernoulli) series.
pub fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY || is_nonpositive_integer(x) {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return x;
    }
    if x < 0.0 {
        return digamma(1.0 - x) - PI / tan_pi(x);
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    let series = f
        * (-1.0 / 12.0
            + f * (1.0 / 120.0
                + f * (-1.0 / 252.0
                    + f * (1.0 / 240.0
                        + f * (-1.0 / 132.0 + f * (691.0 / 32760.0 + f * (-1.0 / 12.0)))))));
    acc + x.ln() - 0.5 / x + series
}
pub fn digamma_d(x: f64) -> f64 {
    trigamma(x)
}

/// Trigamma ψ₁(x) = ψ'(x).
pub fn trigamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY || is_nonpositive_integer(x) {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x < 0.0 {
        let s = sin_pi(x);
        return PI * PI / (s * s) - trigamma(1.0 - x);
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let f = inv * inv;
    let series = inv
        * (1.0
            + inv * 0.5
            + f * (1.0 / 6.0
                + f * (-1.0 / 30.0
                    + f * (1.0 / 42.0
                        + f * (-1.0 / 30.0 + f * (5.0 / 66.0 + f * (-691.0 / 2730.0)))))));
    acc + series
}
pub fn trigamma_d(x: f64) -> f64 {
    tetragamma(x)
}

/// Tetragamma ψ₂(x) = ψ₁'(x), the derivative rule of [`trigamma`].
pub fn tetragamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY || is_nonpositive_integer(x) {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x < 0.0 {
        let s = sin_pi(x);
        let c = (PI * (x - 2.0 * (x / 2.0).round())).cos();
        return -2.0 * PI.powi(3) * c / (s * s * s) + tetragamma(1.0 - x);
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 2.0 / (x * x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let f = inv * inv;
    let series = -f
        * (1.0
            + inv
            + 0.5 * f
            + f * f
                * (-1.0 / 6.0
                    + f * (1.0 / 6.0
                        + f * (-3.0 / 10.0 + f * (5.0 / 6.0 + f * (-691.0 / 210.0))))));
    acc + series
}

/// Stirling's approximation to `lgamma`.
pub fn lgamma_stirling(x: f64) -> f64 {
    HALF_LOG_TWO_PI + (x - 0.5) * x.ln() - x
}

/// `lgamma(x) - lgamma_stirling(x)`, accurate for large x (Stan's series).
pub fn lgamma_stirling_diff(x: f64) -> f64 {
    const SERIES: [f64; 6] = [
        0.083_333_333_333_333_33,
        -0.002_777_777_777_777_778,
        0.000_793_650_793_650_793_7,
        -0.000_595_238_095_238_095_2,
        0.000_841_750_841_750_841_8,
        -0.001_917_526_917_526_917_5,
    ];
    if x.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    if x < STIRLING_DIFF_USEFUL {
        return lgamma(x) - lgamma_stirling(x);
    }
    let inv_sq = 1.0 / (x * x);
    let mut multiplier = 1.0 / x;
    let mut result = SERIES[0] * multiplier;
    for c in &SERIES[1..] {
        multiplier *= inv_sq;
        result += c * multiplier;
    }
    result
}

/// `log B(a, b)`, with Stan's Stirling-difference forms for large arguments
/// so that e.g. `lbeta(1e10, 1e10)` keeps its precision.
pub fn lbeta(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    let (x, y) = if a < b { (a, b) } else { (b, a) };
    if x == 0.0 {
        return f64::INFINITY;
    }
    if y.is_infinite() {
        return f64::NEG_INFINITY;
    }
    if y < STIRLING_DIFF_USEFUL {
        return lgamma(x) + lgamma(y) - lgamma(x + y);
    }
    let x_over_xy = x / (x + y);
    if x < STIRLING_DIFF_USEFUL {
        let stirling_diff = lgamma_stirling_diff(y) - lgamma_stirling_diff(x + y);
        let stirling = (y - 0.5) * log1m(x_over_xy) + x * (1.0 - (x + y).ln());
        return stirling + lgamma(x) + stirling_diff;
    }
    let stirling_diff =
        lgamma_stirling_diff(x) + lgamma_stirling_diff(y) - lgamma_stirling_diff(x + y);
    let stirling =
        (x - 0.5) * x_over_xy.ln() + y * log1m(x_over_xy) + HALF_LOG_TWO_PI - 0.5 * y.ln();
    stirling + stirling_diff
}
pub fn lbeta_grad(a: f64, b: f64) -> (f64, f64) {
    let dab = digamma(a + b);
    (digamma(a) - dab, digamma(b) - dab)
}

/// The beta function `B(a, b) = exp(lbeta(a, b))`.
pub fn beta(a: f64, b: f64) -> f64 {
    lbeta(a, b).exp()
}
pub fn beta_grad(a: f64, b: f64) -> (f64, f64) {
    let (da, db) = lbeta_grad(a, b);
    let v = beta(a, b);
    (v * da, v * db)
}

/// Log multivariate gamma `log Γ_k(x)`.
pub fn lmgamma(k: u32, x: f64) -> f64 {
    let k_f = f64::from(k);
    let mut result = k_f * (k_f - 1.0) * (PI.ln() / 4.0);
    for j in 1..=k {
        result += lgamma(x + (1.0 - f64::from(j)) / 2.0);
    }
    result
}
/// d/dx [`lmgamma`].
pub fn lmgamma_d(k: u32, x: f64) -> f64 {
    (1..=k)
        .map(|j| digamma(x + (1.0 - f64::from(j)) / 2.0))
        .sum()
}

/// `log (n choose k)` for real n ≥ -1, k ≥ -1, n - k ≥ -1 (Stan's
/// `binomial_coefficient_log`, a.k.a. `lchoose`); NaN outside the domain.
pub fn lchoose(n: f64, k: f64) -> f64 {
    if n.is_nan() || k.is_nan() {
        return f64::NAN;
    }
    if n > -1.0 && k > n / 2.0 + 1e-8 {
        return lchoose(n, n - k);
    }
    let n_plus_1 = n + 1.0;
    let n_plus_1_mk = n_plus_1 - k;
    if n < -1.0 || k < -1.0 || n_plus_1_mk < 0.0 {
        return f64::NAN;
    }
    if k == 0.0 {
        0.0
    } else if n_plus_1 < STIRLING_DIFF_USEFUL {
        lgamma(n_plus_1) - lgamma(k + 1.0) - lgamma(n_plus_1_mk)
    } else {
        -lbeta(n_plus_1_mk, k + 1.0) - n.ln_1p()
    }
}
pub fn lchoose_grad(n: f64, k: f64) -> (f64, f64) {
    let d_nk = digamma(n - k + 1.0);
    (digamma(n + 1.0) - d_nk, d_nk - digamma(k + 1.0))
}

/// `log(x! / (x-n)!) = lgamma(x+1) - lgamma(x-n+1)`.
pub fn log_falling_factorial(x: f64, n: f64) -> f64 {
    if x < 0.0 {
        f64::NAN
    } else {
        lgamma(x + 1.0) - lgamma(x - n + 1.0)
    }
}
pub fn log_falling_factorial_grad(x: f64, n: f64) -> (f64, f64) {
    let d = digamma(x - n + 1.0);
    (digamma(x + 1.0) - d, d)
}

/// `log Γ(x+n)/Γ(x)`.
pub fn log_rising_factorial(x: f64, n: f64) -> f64 {
    if x < 0.0 {
        f64::NAN
    } else {
        lgamma(x + n) - lgamma(x)
    }
}
pub fn log_rising_factorial_grad(x: f64, n: f64) -> (f64, f64) {
    let d = digamma(x + n);
    (d - digamma(x), d)
}

/// `x (x-1) … (x-n+1)` for integer n ≥ 0.
pub fn falling_factorial(x: f64, n: u32) -> f64 {
    (0..n).map(|i| x - f64::from(i)).product()
}
pub fn falling_factorial_d(x: f64, n: u32) -> f64 {
    falling_factorial(x, n) * (digamma(x + 1.0) - digamma(x - f64::from(n) + 1.0))
}

/// `x (x+1) … (x+n-1)` for integer n ≥ 0.
pub fn rising_factorial(x: f64, n: u32) -> f64 {
    (0..n).map(|i| x + f64::from(i)).product()
}
pub fn rising_factorial_d(x: f64, n: u32) -> f64 {
    rising_factorial(x, n) * (digamma(x + f64::from(n)) - digamma(x))
}
