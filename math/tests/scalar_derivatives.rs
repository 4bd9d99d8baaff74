//! Every primitive's derivative rule against a finite-difference derivative
//! of its own value rule, over random points in its domain.

use bat_math::Primitive;
use proptest::prelude::*;

/// How one argument of a primitive is sampled from a unit-interval draw `u`.
#[derive(Clone, Copy, Debug)]
enum Arg {
    /// Uniform on [lo, hi].
    Lin(f64, f64),
    /// Log-uniform on [lo, hi], 0 < lo < hi.
    LogU(f64, f64),
    /// Integer (data) argument in lo..=hi: not differentiated, partial must be 0.
    Int(i32, i32),
}

impl Arg {
    fn sample(self, u: f64) -> f64 {
        match self {
            Arg::Lin(lo, hi) => lo + u * (hi - lo),
            Arg::LogU(lo, hi) => (lo.ln() + u * (hi.ln() - lo.ln())).exp(),
            Arg::Int(lo, hi) => {
                (f64::from(lo) + (u * f64::from(hi - lo + 1)).floor()).min(f64::from(hi))
            }
        }
    }
    fn bounds(self) -> (f64, f64) {
        match self {
            Arg::Lin(lo, hi) | Arg::LogU(lo, hi) => (lo, hi),
            Arg::Int(lo, hi) => (f64::from(lo), f64::from(hi)),
        }
    }
}

/// The domain each primitive is tested on (inside Stan's domain, away from
/// poles and kinks). Every primitive must appear here.
fn domain(p: Primitive) -> Option<Vec<Arg>> {
    use Arg::*;
    use Primitive as P;
    Some(match p {
        P::Neg | P::Exp | P::Exp2 | P::Expm1 => vec![Lin(-20.0, 20.0)],
        P::Log | P::Log2 | P::Log10 | P::Sqrt | P::Cbrt => vec![LogU(1e-3, 1e3)],
        P::Log1p => vec![Lin(-0.9, 100.0)],
        P::Log1m => vec![Lin(-100.0, 0.9)],
        P::Square | P::StdNormalLpdf => vec![Lin(-10.0, 10.0)],
        P::Inv | P::InvSquare => vec![Lin(0.1, 10.0)],
        P::InvSqrt => vec![LogU(1e-2, 1e2)],
        P::Fabs => vec![Lin(-10.0, -0.05)],
        P::Sin | P::Cos | P::Atan | P::Asinh => vec![Lin(-10.0, 10.0)],
        P::Tan => vec![Lin(-1.4, 1.4)],
        P::Asin | P::Acos | P::Atanh => vec![Lin(-0.95, 0.95)],
        P::Sinh | P::Cosh | P::Tanh => vec![Lin(-5.0, 5.0)],
        P::Acosh => vec![Lin(1.05, 10.0)],
        P::Log1pExp => vec![Lin(-40.0, 40.0)],
        P::Log1mExp => vec![Lin(-30.0, -0.01)],
        P::Logit => vec![Lin(0.01, 0.99)],
        P::InvLogit | P::LogInvLogit | P::Log1mInvLogit => vec![Lin(-30.0, 30.0)],
        P::InvCloglog => vec![Lin(-5.0, 3.0)],
        P::Lgamma | P::Digamma => vec![LogU(0.01, 1e4)],
        P::Tgamma => vec![Lin(0.1, 20.0)],
        P::Trigamma => vec![LogU(0.05, 1e3)],
        P::Erf | P::Erfc => vec![Lin(-5.0, 5.0)],
        P::InvErfc => vec![Lin(1e-3, 2.0 - 1e-3)],
        P::Phi => vec![Lin(-35.0, 8.0)],
        P::PhiApprox => vec![Lin(-10.0, 10.0)],
        P::InvPhi => vec![Lin(1e-4, 1.0 - 1e-4)],
        P::LogPhi => vec![Lin(-60.0, 30.0)],
        P::Floor | P::Ceil | P::Round | P::Trunc => return None,
        P::Add | P::Sub | P::Mul => vec![Lin(-10.0, 10.0), Lin(-10.0, 10.0)],
        // Disjoint ranges keep the kink at x == y out of reach.
        P::Fmin | P::Fmax => vec![Lin(-10.0, -0.5), Lin(0.5, 10.0)],
        P::Fdim => vec![Lin(0.5, 10.0), Lin(-10.0, -0.5)],
        P::Div => vec![Lin(-10.0, 10.0), Lin(0.5, 10.0)],
        P::Pow => vec![LogU(0.1, 10.0), Lin(-3.0, 3.0)],
        P::Hypot => vec![Lin(0.1, 10.0), Lin(0.1, 10.0)],
        P::Atan2 => vec![Lin(-10.0, 10.0), Lin(0.1, 10.0)],
        P::Fmod => vec![Lin(5.0, 5.5), Lin(2.0, 2.2)],
        P::LogSumExp => vec![Lin(-50.0, 50.0), Lin(-50.0, 50.0)],
        P::LogDiffExp => vec![Lin(0.0, 10.0), Lin(-20.0, -0.05)],
        P::Lbeta => vec![LogU(0.01, 1e4), LogU(0.01, 1e4)],
        P::Beta => vec![LogU(0.05, 30.0), LogU(0.05, 30.0)],
        P::Lmultiply => vec![Lin(-5.0, 5.0), LogU(1e-3, 1e3)],
        P::LogInvLogitDiff => vec![Lin(0.0, 20.0), Lin(-20.0, -0.05)],
        P::BinaryLogLoss => vec![Int(0, 1), Lin(0.01, 0.99)],
        P::Lchoose => vec![Lin(60.0, 100.0), Lin(0.5, 55.0)],
        P::LogFallingFactorial => vec![Lin(5.0, 50.0), Lin(0.5, 4.5)],
        P::LogRisingFactorial => vec![Lin(0.1, 50.0), Lin(0.1, 20.0)],
        P::FallingFactorial => vec![Lin(5.0, 50.0), Int(0, 5)],
        P::RisingFactorial => vec![Lin(0.1, 20.0), Int(0, 5)],
        P::Lmgamma => vec![Int(1, 5), Lin(3.0, 50.0)],
        P::GammaP | P::GammaQ => vec![LogU(0.1, 1e4), LogU(0.01, 2e4)],
        P::OwensT => vec![Lin(-5.0, 5.0), Lin(-5.0, 5.0)],
        P::LogModifiedBesselFirstKind => vec![Int(0, 6), LogU(0.01, 500.0)],
        P::ModifiedBesselFirstKind => vec![Int(-3, 3), Lin(-20.0, 20.0)],
        P::ModifiedBesselSecondKind => vec![Int(-3, 4), LogU(0.01, 300.0)],
        P::BesselFirstKind => vec![Int(-3, 4), Lin(-30.0, 30.0)],
        P::BesselSecondKind => vec![Int(0, 4), LogU(0.05, 100.0)],
        P::LogMix => vec![Lin(0.01, 0.99), Lin(-20.0, 5.0), Lin(-20.0, 5.0)],
        P::IncBeta => vec![LogU(0.1, 5000.0), LogU(0.1, 5000.0), Lin(1e-3, 0.999)],
        P::Fma => vec![Lin(-10.0, 10.0), Lin(-10.0, 10.0), Lin(-10.0, 10.0)],
    })
}

/// Ridders' extrapolated central difference of `p` w.r.t. argument `i`
/// (Numerical Recipes `dfridr`): the derivative, an error estimate, and the
/// difference's rounding floor.
fn finite_difference(p: Primitive, args: &[f64], i: usize, bounds: (f64, f64)) -> Difference {
    let x = args[i];
    let room = (x - bounds.0).min(bounds.1 - x) * 0.9;
    let h0 = (0.01 * x.abs().max(0.1)).min(room.max(1e-9));
    let at = |dx: f64| {
        let mut a = args.to_vec();
        a[i] = x + dx;
        p.eval(&a)
    };
    let noise = evaluation_noise(at, x, room);
    // Ridders' extrapolation is only as good as its first step: a function
    // that changes over a scale much smaller than `h0` (e.g. inc_beta with
    // a ≈ 3000, whose slope in x peaks within ±0.002) fools the first
    // tableau rows, which then stop early with a wrong estimate and a small
    // error. Start from several steps and keep the estimate with the
    // smallest error.
    let (value, err, step) = [1.0, 0.1, 0.01, 0.001]
        .iter()
        .map(|scale| ridders(at, h0 * scale))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("several starting steps");
    // A central difference at step `step` cannot tell slopes apart below
    // noise/step; the extrapolation's weights amplify that by a few.
    Difference {
        value,
        err,
        floor: 10.0 * noise / step,
    }
}

struct Difference {
    value: f64,
    err: f64,
    floor: f64,
}

/// The rounding noise of `f` near `x`, measured: second differences at a
/// spacing where curvature contributes nothing (≈ 1e-9 relative) are pure
/// evaluation noise. Ridders' own error estimate misses it when a small
/// step's noisy estimates happen to agree (OwensT at h = -3.38, a = 2.74:
/// values 1.8e-4 with 1e-19 noise gave a difference of -9.7e-15 for a slope
/// of 1.7e-23). At least half an ulp of `f(x)`: where `f` is so flat
/// that every second difference rounds to exactly zero, the measurement
/// sees no noise, yet each evaluation still carries its rounding
/// (log_sum_exp(16.59, b) in b: slope 6.8e-8, f rounded to 1.8e-15).
fn evaluation_noise(f: impl Fn(f64) -> f64, x: f64, room: f64) -> f64 {
    let delta = (1e-9 * x.abs().max(1e-3)).min(room / 8.0);
    let centre = f(0.0);
    let rounding = 0.5 * f64::EPSILON * centre.abs();
    (1..=4)
        .map(|k| {
            let d = k as f64 * delta;
            (f(d) - 2.0 * centre + f(-d)).abs() / 2.0
        })
        .fold(rounding, f64::max)
}

/// Returns the best estimate, its error, and the step it was made at.
fn ridders(f: impl Fn(f64) -> f64 + Copy, h0: f64) -> (f64, f64, f64) {
    const CON: f64 = 1.4;
    const CON2: f64 = CON * CON;
    const N: usize = 12;
    let mut h = h0;
    let mut table = [[0.0f64; N]; N];
    table[0][0] = (f(h) - f(-h)) / (2.0 * h);
    let (mut best, mut err, mut best_step) = (table[0][0], f64::INFINITY, h);
    for i in 1..N {
        h /= CON;
        table[0][i] = (f(h) - f(-h)) / (2.0 * h);
        let mut fac = CON2;
        for j in 1..=i {
            table[j][i] = (table[j - 1][i] * fac - table[j - 1][i - 1]) / (fac - 1.0);
            fac *= CON2;
            let e = (table[j][i] - table[j - 1][i])
                .abs()
                .max((table[j][i] - table[j - 1][i - 1]).abs());
            if e <= err {
                err = e;
                best = table[j][i];
                best_step = h;
            }
        }
        if (table[i][i] - table[i - 1][i - 1]).abs() >= 2.0 * err {
            break;
        }
    }
    (best, err, best_step)
}

fn check(p: Primitive, us: [f64; 3]) -> Result<(), TestCaseError> {
    let Some(dom) = domain(p) else { return Ok(()) };
    prop_assert_eq!(dom.len(), p.arity(), "{:?}: domain arity", p);
    let args: Vec<f64> = dom.iter().zip(us).map(|(d, u)| d.sample(u)).collect();
    let value = p.eval(&args);
    let grad = p.grad(&args);
    prop_assert_eq!(grad.len(), p.arity());
    prop_assert!(value.is_finite(), "{:?}{:?} = {}", p, args, value);
    for (i, d) in dom.iter().enumerate() {
        if let Arg::Int(..) = d {
            prop_assert_eq!(
                grad[i],
                0.0,
                "{:?}: integer argument {} has a partial",
                p,
                i
            );
            prop_assert!(
                p.data_only_args().contains(&i),
                "{:?}: argument {} not declared data-only",
                p,
                i
            );
            continue;
        }
        prop_assert!(
            !p.data_only_args().contains(&i),
            "{:?}: argument {} is differentiable",
            p,
            i
        );
        let Difference {
            value: fd,
            err,
            floor,
        } = finite_difference(p, &args, i, d.bounds());
        // FD cannot resolve a slope below ~eps·|f|/|x|: allow for that floor.
        let resolution = 1e-10 * value.abs() / args[i].abs().max(1.0);
        let tol = 1e-6 * fd.abs().max(grad[i].abs()) + 10.0 * err + resolution + floor + 1e-300;
        prop_assert!(
            (grad[i] - fd).abs() <= tol,
            "{:?}{:?}: d/darg{} rule {} vs finite difference {} (tol {})",
            p,
            args,
            i,
            grad[i],
            fd,
            tol
        );
    }
    Ok(())
}

/// A point proptest found: T ≈ 1.8e-4 carries ~1e-19 of summation noise,
/// so small Ridders steps gave -9.7e-15 with a small error estimate for a
/// true slope of 1.7e-23; the measured noise floor covers it.
#[test]
fn owens_t_flat_in_a_for_large_h_within_the_noise_floor() {
    check(
        Primitive::OwensT,
        [0.1620553812399789, 0.7736201051733835, 0.02],
    )
    .unwrap();
}

/// A point proptest found: OwensT's quadrature used to change its panel
/// count with `a`, so T jumped there and the finite difference of a slope
/// of 7e-66 came out 5.5e-16.
#[test]
fn owens_t_is_smooth_in_a_where_its_quadrature_changed_panels() {
    check(
        Primitive::OwensT,
        [0.10741784475073676, 0.9224674733661617, 0.02],
    )
    .unwrap();
}

/// A point proptest found (seed 3 of a 20,000-case sweep): ∂/∂b
/// log_sum_exp(16.59, 0.085) is 1/(1 + e^(a−b)) = 6.780165171245317e-8
/// (mpmath, 40 digits; the rule gives …315), but f ≈ 16.59 is rounded to
/// ±1.8e-15, every second difference of the noise measurement was exactly
/// zero, and Ridders' small steps turned that rounding into 6.96e-8 with a
/// small error estimate. The noise floor now counts half an ulp of f.
#[test]
fn log_sum_exp_flat_in_its_small_argument_within_the_rounding_floor() {
    check(
        Primitive::LogSumExp,
        [0.6659134579233453, 0.5008466657938, 0.02],
    )
    .unwrap();
}

#[test]
fn every_differentiable_primitive_has_a_test_domain() {
    let untested: Vec<_> = Primitive::ALL
        .iter()
        .filter(|p| domain(**p).is_none())
        .collect();
    // Only the piecewise-constant rounding functions are exempt.
    assert_eq!(untested.len(), 4, "{untested:?}");
}

#[test]
fn rounding_primitives_have_zero_derivative() {
    for p in [
        Primitive::Floor,
        Primitive::Ceil,
        Primitive::Round,
        Primitive::Trunc,
    ] {
        assert_eq!(p.grad(&[2.3])[0], 0.0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn derivative_rules_match_finite_differences(
        us in [0.02..0.98f64, 0.02..0.98f64, 0.02..0.98f64],
    ) {
        for &p in Primitive::ALL {
            check(p, us)?;
        }
    }

    /// The reflection branches (x < 0) of lgamma/digamma/trigamma.
    #[test]
    fn gamma_family_derivatives_for_negative_arguments(whole in -7..0i32, frac in 0.05..0.95f64) {
        let x = f64::from(whole) + frac;
        for p in [Primitive::Lgamma, Primitive::Digamma, Primitive::Trigamma] {
            let (fd, err, _) = ridders(|dx| p.eval(&[x + dx]), 0.02);
            let d = p.grad(&[x])[0];
            prop_assert!((d - fd).abs() <= 1e-6 * d.abs() + 10.0 * err, "{:?}({}) {} vs {}", p, x, d, fd);
        }
    }
}

proptest! {
    /// Branches the single per-primitive domain above does not reach:
    /// `lchoose` with n + 1 < 10 (direct lgamma form).
    #[test]
    fn lchoose_small_n_branch(n in 1.0..8.5f64, frac in 0.05..0.95f64) {
        let k = n * frac;
        let g = Primitive::Lchoose.grad(&[n, k]);
        for (i, v) in [n, k].into_iter().enumerate() {
            let h = 0.01 * frac.min(1.0 - frac);
            let (fd, err, _) = ridders(
                |d| {
                    let mut a = [n, k];
                    a[i] = v + d;
                    Primitive::Lchoose.eval(&a)
                },
                h,
            );
            prop_assert!((g[i] - fd).abs() <= 1e-6 * fd.abs().max(1e-3) + 10.0 * err, "lchoose({}, {}) d{}: {} vs {}", n, k, i, g[i], fd);
        }
    }
}
