//! The branch-free `exp` and `log1p` (and the logistic functions built on
//! them) against libm over millions of points, edges included: within
//! 1 ulp of libm (itself within 1 ulp of the truth), exact at the
//! special values.

use bat_math::scalar::branchless::{exp_nonpos, log1p_unit};
use bat_math::scalar::{LOG_EPSILON, inv_logit, log_inv_logit, log_inv_logit_and_neg_inv_logit};

/// Distance in units in the last place (both finite and of one sign, or
/// equal).
fn ulps(a: f64, b: f64) -> u64 {
    if a.to_bits() == b.to_bits() || (a == 0.0 && b == 0.0) {
        return 0;
    }
    if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() || a.signum() != b.signum() {
        return u64::MAX;
    }
    a.abs().to_bits().abs_diff(b.abs().to_bits())
}

/// splitmix64: uniform `[0, 1)` doubles.
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
    /// `10^e` with e uniform in `[lo, hi)`: every scale equally.
    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        10f64.powf(lo + (hi - lo) * self.unit())
    }
}

/// Asserts `got` is within `max` ulps of `want` at every point, naming the
/// worst point.
fn assert_within_ulps(
    name: &str,
    points: &[f64],
    max: u64,
    got: impl Fn(f64) -> f64,
    want: impl Fn(f64) -> f64,
) {
    let (worst, at) = points
        .iter()
        .map(|&x| (ulps(got(x), want(x)), x))
        .fold((0, 0.0), |w, p| if p.0 > w.0 { p } else { w });
    assert!(worst <= max, "{name}({at}) is {worst} ulps off");
}

fn neighbours(x: f64) -> [f64; 3] {
    [
        f64::from_bits(x.to_bits() - 1),
        x,
        f64::from_bits(x.to_bits() + 1),
    ]
}

#[test]
fn exp_nonpos_is_within_one_ulp_of_libm() {
    let mut rng = Rng(1);
    let mut points: Vec<f64> = Vec::new();
    for _ in 0..1_000_000 {
        points.push(-746.0 * rng.unit());
        points.push(-rng.log_uniform(-320.0, 2.9));
        // The subnormal results.
        points.push(-708.0 - 37.2 * rng.unit());
        // Around the reduction's switch points k·ln 2 / 2.
        let k = (rng.unit() * 2000.0) as i32 as f64;
        points.push(-(k + 0.5) * std::f64::consts::LN_2 * (1.0 + 1e-12 * (rng.unit() - 0.5)));
    }
    for x in [
        0.5e-323,
        1e-310,
        1e-300,
        1e-20,
        1e-8,
        0.5,
        1.0,
        708.3964185322641,
        708.4,
    ] {
        points.push(-x);
    }
    points.extend(neighbours(-745.133_219_101_941_1)); // smallest non-zero result
    points.extend(neighbours(-745.133_219_101_941_2));
    points.extend(neighbours(-std::f64::consts::LN_2 / 2.0));
    assert_within_ulps("exp_nonpos", &points, 1, exp_nonpos, f64::exp);
    // Special values exactly.
    assert_eq!(exp_nonpos(0.0), 1.0);
    assert_eq!(exp_nonpos(-0.0), 1.0);
    assert_eq!(exp_nonpos(f64::NEG_INFINITY).to_bits(), 0.0f64.to_bits());
    assert_eq!(exp_nonpos(-746.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(exp_nonpos(-1e300).to_bits(), 0.0f64.to_bits());
    assert!(exp_nonpos(f64::NAN).is_nan());
    assert_eq!(exp_nonpos(-745.0), (-745f64).exp());
}

#[test]
fn log1p_unit_is_within_one_ulp_of_libm() {
    let mut rng = Rng(2);
    let mut points: Vec<f64> = Vec::new();
    for _ in 0..1_000_000 {
        points.push(rng.unit());
        points.push(rng.log_uniform(-323.0, 0.0));
        points.push(std::f64::consts::SQRT_2 - 1.0 + 1e-6 * (rng.unit() - 0.5));
        points.push(1.0 - 1e-6 * rng.unit());
    }
    points.extend(neighbours(std::f64::consts::SQRT_2 - 1.0));
    points.extend([
        1.0,
        f64::from_bits(1),
        f64::MIN_POSITIVE,
        1e-300,
        2f64.powi(-53),
    ]);
    assert_within_ulps("log1p_unit", &points, 1, log1p_unit, f64::ln_1p);
    assert_eq!(log1p_unit(0.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(log1p_unit(f64::from_bits(1)), f64::from_bits(1));
    assert_eq!(log1p_unit(1.0), std::f64::consts::LN_2);
    assert!(log1p_unit(f64::NAN).is_nan());
}

/// Finer than the 1-ulp bound: `log1p_unit` rounds as libm's (nearly
/// correctly rounded) `log1p` at all but a few points per thousand
/// (0.12% with fdlibm's Horner evaluation, 0.15% with Estrin's), which
/// an error of a good fraction of an ulp would not (a crude `1/u` in the
/// correction term above √2 − 1, still within 1 ulp: 3%).
#[test]
fn log1p_unit_rounds_as_libm_almost_everywhere() {
    let mut rng = Rng(4);
    let n = 1_000_000;
    let differ = (0..n)
        .map(|_| rng.unit())
        .filter(|&t| log1p_unit(t) != t.ln_1p())
        .count();
    assert!(
        differ <= n / 400,
        "log1p_unit differs from libm at {differ} of {n} points in [0, 1] (at most 0.25% expected)"
    );
}

/// The logistic functions against their libm formulas: a couple of ulps
/// (each of exp and log1p may be 1 ulp off libm), same special values.
#[test]
fn logistic_functions_match_their_libm_formulas() {
    fn inv_logit_libm(a: f64) -> f64 {
        if a < 0.0 {
            let e = a.exp();
            if a < LOG_EPSILON { e } else { e / (1.0 + e) }
        } else {
            1.0 / (1.0 + (-a).exp())
        }
    }
    fn log_inv_logit_libm(u: f64) -> f64 {
        if u < 0.0 {
            u - u.exp().ln_1p()
        } else {
            -(-u).exp().ln_1p()
        }
    }
    let mut rng = Rng(3);
    let points: Vec<f64> = (0..2_000_000)
        .map(|i| {
            let mag = if i % 2 == 0 {
                40.0 * rng.unit()
            } else {
                rng.log_uniform(-320.0, 3.0)
            };
            if rng.unit() < 0.5 { -mag } else { mag }
        })
        .collect();
    assert_within_ulps("inv_logit", &points, 2, inv_logit, inv_logit_libm);
    assert_within_ulps(
        "log_inv_logit",
        &points,
        2,
        log_inv_logit,
        log_inv_logit_libm,
    );
    for a in [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 800.0, -800.0] {
        assert_eq!(
            inv_logit(a).to_bits(),
            inv_logit_libm(a).to_bits(),
            "inv_logit({a})"
        );
        assert_eq!(
            log_inv_logit(a).to_bits(),
            log_inv_logit_libm(a).to_bits(),
            "log_inv_logit({a})"
        );
    }
    assert!(inv_logit(f64::NAN).is_nan() && log_inv_logit(f64::NAN).is_nan());
}

/// `inv_logit` selects one numerator for its one division: bit for bit
/// the branchy formula on `exp_nonpos` (`eᵃ` below `LOG_EPSILON`, else
/// `eᵃ/(1 + eᵃ)` for negative `a`, `1/(1 + e⁻ᵃ)` otherwise).
#[test]
fn inv_logit_is_its_branchy_formula_bit_for_bit() {
    fn branchy(a: f64) -> f64 {
        let e = exp_nonpos(-a.abs());
        if a < 0.0 {
            if a < LOG_EPSILON { e } else { e / (1.0 + e) }
        } else {
            1.0 / (1.0 + e)
        }
    }
    let mut rng = Rng(5);
    let mut points: Vec<f64> = (0..1_000_000).map(|_| 100.0 * (rng.unit() - 0.5)).collect();
    points.extend([
        0.0,
        -0.0,
        LOG_EPSILON,
        -40.0,
        40.0,
        f64::INFINITY,
        -f64::INFINITY,
    ]);
    for a in points {
        assert_eq!(
            inv_logit(a).to_bits(),
            branchy(a).to_bits(),
            "inv_logit({a})"
        );
    }
    assert!(inv_logit(f64::NAN).is_nan());
}

/// The pair sharing one exponential is the two functions, bit for bit,
/// over both tails, the switch points and the special values.
#[test]
fn logistic_pair_is_the_two_functions_bit_for_bit() {
    let mut rng = Rng(7);
    let mut points: Vec<f64> = (0..1_000_000)
        .map(|i| {
            let mag = if i % 2 == 0 {
                60.0 * rng.unit()
            } else {
                rng.log_uniform(-320.0, 3.0)
            };
            if rng.unit() < 0.5 { -mag } else { mag }
        })
        .collect();
    points.extend([
        0.0,
        -0.0,
        LOG_EPSILON,
        -LOG_EPSILON,
        745.5,
        -745.5,
        800.0,
        -800.0,
        f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ]);
    for u in points {
        let (value, derivative) = log_inv_logit_and_neg_inv_logit(u);
        assert_eq!(
            value.to_bits(),
            log_inv_logit(u).to_bits(),
            "log_inv_logit({u})"
        );
        assert_eq!(
            derivative.to_bits(),
            inv_logit(-u).to_bits(),
            "inv_logit(-{u})"
        );
    }
    let (value, derivative) = log_inv_logit_and_neg_inv_logit(f64::NAN);
    assert!(value.is_nan() && derivative.is_nan());
}
