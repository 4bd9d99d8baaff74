//! Error function and standard-normal CDF family: `erf`, `erfc`, `Phi`,
//! `Phi_approx`, `inv_Phi`, `log_Phi`, `owens_t` (Stan: `prim/fun/Phi.hpp`,
//! `inv_Phi.hpp`, `owens_t.hpp`, `std_normal_log_cdf`).

use super::{HALF_LOG_TWO_PI, SQRT_TWO_PI, inv_logit, inv_logit_d};
use std::f64::consts::{FRAC_1_SQRT_2, PI};

pub fn erf(x: f64) -> f64 {
    super::clib::erf(x)
}
pub fn erf_d(x: f64) -> f64 {
    2.0 / PI.sqrt() * (-x * x).exp()
}
pub fn erfc(x: f64) -> f64 {
    super::clib::erfc(x)
}
pub fn erfc_d(x: f64) -> f64 {
    -erf_d(x)
}

/// Standard normal density φ(x).
pub fn std_normal_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / SQRT_TWO_PI
}

/// Standard normal CDF Φ(x), with Stan's cut-offs (0 below -37.5, 1 above
/// 8.25, `erfc` form in the lower tail).
#[allow(non_snake_case)]
pub fn Phi(x: f64) -> f64 {
    if x.is_nan() {
        f64::NAN
    } else if x < -37.5 {
        0.0
    } else if x < -5.0 {
        0.5 * erfc(-FRAC_1_SQRT_2 * x)
    } else if x > 8.25 {
        1.0
    } else {
        0.5 * (1.0 + erf(FRAC_1_SQRT_2 * x))
    }
}
#[allow(non_snake_case)]
pub fn Phi_d(x: f64) -> f64 {
    std_normal_pdf(x)
}

/// Logistic approximation `inv_logit(0.07056 x³ + 1.5976 x)`.
#[allow(non_snake_case)]
pub fn Phi_approx(x: f64) -> f64 {
    inv_logit(0.07056 * x.powi(3) + 1.5976 * x)
}
#[allow(non_snake_case)]
pub fn Phi_approx_d(x: f64) -> f64 {
    inv_logit_d(0.07056 * x.powi(3) + 1.5976 * x) * (3.0 * 0.07056 * x * x + 1.5976)
}

/// log Φ(x), accurate in both tails: `log1p(-Q)` for x > 0, `log(erfc)/2`
/// down to -30 and the asymptotic Mills-ratio series below.
#[allow(non_snake_case)]
pub fn log_Phi(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    if x > 0.0 {
        (-0.5 * erfc(FRAC_1_SQRT_2 * x)).ln_1p()
    } else if x > -30.0 {
        (0.5 * erfc(-FRAC_1_SQRT_2 * x)).ln()
    } else {
        // Φ(x) = φ(x)/(-x) · Σ_k (-1)^k (2k-1)!! / x^{2k}
        let inv_x2 = 1.0 / (x * x);
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..10 {
            term *= -f64::from(2 * k - 1) * inv_x2;
            sum += term;
        }
        -0.5 * x * x - HALF_LOG_TWO_PI - (-x).ln() + sum.ln()
    }
}
/// d/dx log Φ(x) = φ(x)/Φ(x) (the inverse Mills ratio), in log space.
#[allow(non_snake_case)]
pub fn log_Phi_d(x: f64) -> f64 {
    (-0.5 * x * x - HALF_LOG_TWO_PI - log_Phi(x)).exp()
}

/// Φ(x) - p with Φ from `erfc` on the side where it keeps relative
/// accuracy (Stan's `Phi` is only absolutely accurate on (-5, 0)), so the
/// refined quantile is accurate in both tails.
fn phi_minus(x: f64, p: f64) -> f64 {
    if x > 0.0 {
        (1.0 - p) - 0.5 * erfc(FRAC_1_SQRT_2 * x)
    } else {
        0.5 * erfc(-FRAC_1_SQRT_2 * x) - p
    }
}

/// Inverse standard normal CDF: Acklam's rational approximation followed by
/// Halley refinement (as Stan's `inv_Phi`).
#[allow(non_snake_case)]
pub fn inv_Phi(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p < 8e-311 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let mut x = if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 0.97575 {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (-p).ln_1p()).sqrt())
    };
    for _ in 0..2 {
        if x.abs() >= 37.6 {
            break;
        }
        let u = phi_minus(x, p) * SQRT_TWO_PI * (0.5 * x * x).exp();
        x -= u / (1.0 + 0.5 * x * u);
    }
    x
}
#[allow(non_snake_case)]
pub fn inv_Phi_d(p: f64) -> f64 {
    1.0 / std_normal_pdf(inv_Phi(p))
}

/// Inverse complementary error function, via `inv_erfc(x) = -inv_Phi(x/2)/√2`.
pub fn inv_erfc(x: f64) -> f64 {
    -inv_Phi(0.5 * x) * FRAC_1_SQRT_2
}
pub fn inv_erfc_d(x: f64) -> f64 {
    let y = inv_erfc(x);
    -0.5 * PI.sqrt() * (y * y).exp()
}

/// Gauss–Legendre 8-point nodes and weights on [-1, 1].
const GL_NODES: [f64; 4] = [
    0.183_434_642_495_649_8,
    0.525_532_409_916_329,
    0.796_666_477_413_626_7,
    0.960_289_856_497_536_3,
];
const GL_WEIGHTS: [f64; 4] = [
    0.362_683_783_378_362,
    0.313_706_645_877_887_3,
    0.222_381_034_453_374_5,
    0.101_228_536_290_376_3,
];

/// Owen's T function T(h, a) = (1/2π) ∫₀ᵃ exp(-h²(1+x²)/2)/(1+x²) dx.
///
/// Evaluated as (1/2π) ∫₀^{atan a} exp(-h² sec²θ / 2) dθ, whose integrand is
/// smooth and bounded, by composite Gauss–Legendre quadrature.
pub fn owens_t(h: f64, a: f64) -> f64 {
    if h.is_nan() || a.is_nan() {
        return f64::NAN;
    }
    let upper = a.abs().atan();
    // The panel count depends on `h` only (`upper` ≤ π/2): were it to
    // change with `a`, T would jump by the quadrature error where it
    // changes, and ∂T/∂a — below 1e-60 for large |h| — would be lost in the
    // jump (finite differences across a jump at h = -3.93, a = 4.22 gave
    // 5.5e-16 for a slope of 7e-66).
    let panels = (16.0_f64)
        .max((h.abs() * std::f64::consts::FRAC_PI_2 * 4.0).ceil())
        .min(4096.0) as usize;
    let width = upper / panels as f64;
    let integrand = |theta: f64| {
        let c = theta.cos();
        (-0.5 * h * h / (c * c)).exp()
    };
    let mut total = 0.0;
    for panel in 0..panels {
        let mid = (panel as f64 + 0.5) * width;
        let half = 0.5 * width;
        for (node, weight) in GL_NODES.iter().zip(GL_WEIGHTS) {
            total += weight * half * (integrand(mid - half * node) + integrand(mid + half * node));
        }
    }
    a.signum() * total / (2.0 * PI)
}
pub fn owens_t_grad(h: f64, a: f64) -> (f64, f64) {
    let dh = -std_normal_pdf(h) * erf(a * h * FRAC_1_SQRT_2) / 2.0;
    let one_a2 = 1.0 + a * a;
    let da = (-0.5 * h * h * one_a2).exp() / (2.0 * PI * one_a2);
    (dh, da)
}
