//! Bessel functions: `log I_v` (Stan's `log_modified_bessel_first_kind`,
//! used by `von_mises`), `I_v`, `K_v`, and `J_v`/`Y_v` (from the C library, [`super::clib`]).

use super::{HALF_LOG_TWO_PI, lgamma};

/// Rescaling threshold that keeps the running series sum finite.
const RESCALE: f64 = 1e250;

/// Power series Σ_k (z/2)^{2k+v} / (k! Γ(k+v+1)) accumulated in log space.
fn log_series(v: f64, z: f64) -> f64 {
    let quarter_z2 = 0.25 * z * z;
    let mut log_scale = v * (0.5 * z).ln() - lgamma(v + 1.0);
    // Σ_{k≥1} of the scaled terms; the k = 0 term is 1 until the first
    // rescaling, kept apart so that log1p keeps small z accurate.
    let (mut term, mut tail, mut head) = (1.0_f64, 0.0_f64, 1.0_f64);
    let mut k = 0.0;
    loop {
        k += 1.0;
        term *= quarter_z2 / (k * (k + v));
        tail += term;
        if tail > RESCALE {
            tail /= RESCALE;
            head /= RESCALE;
            term /= RESCALE;
            log_scale += RESCALE.ln();
        }
        if term < (head + tail) * 1e-17 && k > quarter_z2.sqrt() {
            break;
        }
    }
    if head == 1.0 {
        log_scale + tail.ln_1p()
    } else {
        log_scale + (head + tail).ln()
    }
}

/// Hankel asymptotic expansion, accurate when z ≫ v².
fn log_asymptotic(v: f64, z: f64) -> f64 {
    let mu = 4.0 * v * v;
    let (mut term, mut sum) = (1.0_f64, 1.0_f64);
    for k in 1..60 {
        let kf = f64::from(k);
        let next = -term * (mu - (2.0 * kf - 1.0).powi(2)) / (kf * 8.0 * z);
        if next.abs() >= term.abs() {
            break;
        }
        term = next;
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    z - HALF_LOG_TWO_PI - 0.5 * z.ln() + sum.ln()
}

/// `log I_v(z)` for v ≥ 0, z ≥ 0; NaN outside that domain.
pub fn log_modified_bessel_first_kind(v: f64, z: f64) -> f64 {
    if v.is_nan() || z.is_nan() || v < 0.0 || z < 0.0 {
        return f64::NAN;
    }
    if z == f64::INFINITY {
        return z;
    }
    if z == 0.0 {
        return if v == 0.0 { 0.0 } else { f64::NEG_INFINITY };
    }
    if z > 50.0 && z > 4.0 * v * v {
        log_asymptotic(v, z)
    } else {
        log_series(v, z)
    }
}

/// ∂/∂z log I_v(z) = I_{v+1}(z)/I_v(z) + v/z. (Stan requires v to be data.)
pub fn log_modified_bessel_first_kind_dz(v: f64, z: f64) -> f64 {
    if z == 0.0 {
        return if v == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (log_modified_bessel_first_kind(v + 1.0, z) - log_modified_bessel_first_kind(v, z)).exp()
        + v / z
}

/// `I_v(z)` for integer order (Stan's `modified_bessel_first_kind`).
pub fn modified_bessel_first_kind(v: i32, z: f64) -> f64 {
    // I_{-v} = I_v for integer order; I_v(-z) = (-1)^v I_v(z).
    let order = f64::from(v.unsigned_abs());
    let magnitude = log_modified_bessel_first_kind(order, z.abs()).exp();
    if z < 0.0 && v % 2 != 0 {
        -magnitude
    } else {
        magnitude
    }
}
/// d/dz I_v(z) = I_{v-1}(z) + I_{v+1}(z) over 2.
pub fn modified_bessel_first_kind_d(v: i32, z: f64) -> f64 {
    0.5 * (modified_bessel_first_kind(v - 1, z) + modified_bessel_first_kind(v + 1, z))
}

/// Bessel function of the first kind `J_v(x)` for integer order (Stan's
/// `bessel_first_kind`).
pub fn bessel_first_kind(v: i32, x: f64) -> f64 {
    super::clib::jn(v, x)
}
/// d/dx J_v(x) = (J_{v-1}(x) - J_{v+1}(x)) / 2.
pub fn bessel_first_kind_d(v: i32, x: f64) -> f64 {
    0.5 * (super::clib::jn(v - 1, x) - super::clib::jn(v + 1, x))
}

/// Bessel function of the second kind `Y_v(x)`, x > 0, integer order (Stan's
/// `bessel_second_kind`).
pub fn bessel_second_kind(v: i32, x: f64) -> f64 {
    super::clib::yn(v, x)
}
/// d/dx Y_v(x) = (Y_{v-1}(x) - Y_{v+1}(x)) / 2.
pub fn bessel_second_kind_d(v: i32, x: f64) -> f64 {
    0.5 * (super::clib::yn(v - 1, x) - super::clib::yn(v + 1, x))
}

/// Modified Bessel function of the second kind `K_v(z)`, z > 0 (Stan's
/// `modified_bessel_second_kind`), from `K_v(z) = ∫₀^∞ e^{-z cosh t} cosh(vt) dt`
/// by the trapezoidal rule, which converges geometrically for this
/// analytic, doubly-exponentially decaying integrand.
pub fn modified_bessel_second_kind(v: i32, z: f64) -> f64 {
    if z.is_nan() || z <= 0.0 {
        return if z == 0.0 { f64::INFINITY } else { f64::NAN };
    }
    const STEP: f64 = 0.05;
    let v = f64::from(v);
    // Scale by e^{z} so large z neither underflows early nor loses terms.
    let mut total = 0.5;
    let mut k = 1.0;
    loop {
        let t = k * STEP;
        let term = (-z * (t.cosh() - 1.0) + v * t).exp() * 0.5 * (1.0 + (-2.0 * v * t).exp());
        total += term;
        if term < 1e-18 * total && z * (t.cosh() - 1.0) > v.abs() * t + 40.0 {
            break;
        }
        k += 1.0;
    }
    STEP * total * (-z).exp()
}
/// d/dz K_v(z) = -(K_{v-1}(z) + K_{v+1}(z)) / 2.
pub fn modified_bessel_second_kind_d(v: i32, z: f64) -> f64 {
    -0.5 * (modified_bessel_second_kind(v - 1, z) + modified_bessel_second_kind(v + 1, z))
}
