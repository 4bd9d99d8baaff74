//! The counter-based RNG: reproducible, independent of batching, and the
//! `_rng` functions have the right moments (Monte Carlo, 5-sigma bounds).

use language::data::DataFile;
use language::mir;
use language::value::Value;
use runtime::{Model, Rng};

const DRAWS: u64 = 20_000;

fn model(source: &str) -> Model {
    let fe = language::compile_front_end(source);
    assert!(
        !fe.diagnostics.iter().any(|d| d.is_error()),
        "{:?}",
        fe.diagnostics
            .iter()
            .map(|d| &d.message)
            .collect::<Vec<_>>()
    );
    let program = mir::lower(&fe.program, fe.checked.as_ref().unwrap(), "rng")
        .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| &d.message).collect::<Vec<_>>()));
    Model::new(&program, &DataFile::empty()).unwrap()
}

/// Draws of generated quantity `x` (a scalar) over `DRAWS` draws of chain 0.
fn sample(call: &str) -> Vec<f64> {
    let m = model(&format!("generated quantities {{ real x = {call}; }}"));
    (0..DRAWS)
        .map(|d| {
            let draw = m.generated_quantities(&[], Rng::new(42, 0, d)).unwrap();
            draw.values[0].1.as_real().unwrap()
        })
        .collect()
}

/// Sample mean within 5 standard errors of `mean`, sample variance within
/// 5 standard errors (using the fourth central moment `m4`) of `var`.
fn assert_moments(call: &str, mean: f64, var: f64, m4: f64) {
    let xs = sample(call);
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    let se_mean = (var / n).sqrt();
    assert!(
        (m - mean).abs() < 5.0 * se_mean,
        "{call}: mean {m}, expected {mean} ± {se_mean}"
    );
    let se_var = ((m4 - var * var) / n).sqrt();
    assert!(
        (v - var).abs() < 5.0 * se_var,
        "{call}: variance {v}, expected {var} ± {se_var}"
    );
}

#[test]
fn streams_are_reproducible_and_keyed() {
    let a: Vec<u32> = {
        let mut r = Rng::new(7, 3, 11);
        (0..8).map(|_| r.next_u32()).collect()
    };
    let b: Vec<u32> = {
        let mut r = Rng::new(7, 3, 11);
        (0..8).map(|_| r.next_u32()).collect()
    };
    assert_eq!(a, b);
    for other in [Rng::new(8, 3, 11), Rng::new(7, 4, 11), Rng::new(7, 3, 12)] {
        let mut r = other;
        let c: Vec<u32> = (0..8).map(|_| r.next_u32()).collect();
        assert_ne!(a, c);
    }
    // draw d of a chain does not depend on which draws ran before it
    let m = model("generated quantities { real x = normal_rng(0, 1); }");
    let direct = m.generated_quantities(&[], Rng::new(5, 2, 9)).unwrap();
    for d in 0..9 {
        m.generated_quantities(&[], Rng::new(5, 2, d)).unwrap();
    }
    assert_eq!(
        direct,
        m.generated_quantities(&[], Rng::new(5, 2, 9)).unwrap()
    );
}

#[test]
fn uniform_is_in_the_open_unit_interval() {
    let mut r = Rng::new(1, 0, 0);
    for _ in 0..100_000 {
        let u = r.uniform();
        assert!(u > 0.0 && u < 1.0);
    }
}

#[test]
fn continuous_moments() {
    // (call, mean, variance, fourth central moment)
    assert_moments("normal_rng(1.5, 2)", 1.5, 4.0, 3.0 * 16.0);
    assert_moments("uniform_rng(-1, 3)", 1.0, 16.0 / 12.0, 4f64.powi(4) / 80.0);
    assert_moments("exponential_rng(2)", 0.5, 0.25, 9.0 / 16.0);
    // gamma(a, b): var a/b², m4 = 3a(a+2)/b⁴
    assert_moments("gamma_rng(3, 2)", 1.5, 0.75, 3.0 * 3.0 * 5.0 / 16.0);
    assert_moments("gamma_rng(0.5, 1)", 0.5, 0.5, 3.0 * 0.5 * 2.5);
    // beta(2, 3): mean 0.4, var 0.04; m4 bounded by var (values in [0,1])
    assert_moments("beta_rng(2, 3)", 0.4, 0.04, 0.04);
    // lognormal(0, 0.5): mean e^{1/8}, var (e^{1/4} - 1) e^{1/4}
    let s2: f64 = 0.25;
    let var = (s2.exp() - 1.0) * s2.exp();
    assert_moments(
        "lognormal_rng(0, 0.5)",
        (s2 / 2.0).exp(),
        var,
        20.0 * var * var,
    );
    // student_t(10, 1, 2): var σ² ν/(ν-2) = 5; kurtosis 3 + 6/(ν-4) = 4
    assert_moments("student_t_rng(10, 1, 2)", 1.0, 5.0, 4.0 * 25.0);
}

#[test]
fn cauchy_median_and_quartiles() {
    let mut xs = sample("cauchy_rng(1, 2)");
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    // quartiles of Cauchy(1, 2) are 1 ± 2; the sample quartile has sd ≈ 0.028 here
    assert!((xs[n / 2] - 1.0).abs() < 0.1);
    assert!((xs[n / 4] + 1.0).abs() < 0.15);
    assert!((xs[3 * n / 4] - 3.0).abs() < 0.15);
}

#[test]
fn discrete_moments() {
    assert_moments("bernoulli_rng(0.3)", 0.3, 0.21, 0.21 * (1.0 - 3.0 * 0.21));
    let p = 1.0 / (1.0 + (-0.5f64).exp());
    assert_moments(
        "bernoulli_logit_rng(0.5)",
        p,
        p * (1.0 - p),
        p * (1.0 - p) * (1.0 - 3.0 * p * (1.0 - p)),
    );
    let (n, q) = (20.0, 0.3);
    let v = n * q * (1.0 - q);
    assert_moments(
        "binomial_rng(20, 0.3)",
        n * q,
        v,
        3.0 * v * v + v * (1.0 - 6.0 * q * (1.0 - q)),
    );
    for lambda in [3.5, 40.0] {
        assert_moments(
            &format!("poisson_rng({lambda})"),
            lambda,
            lambda,
            lambda * (1.0 + 3.0 * lambda),
        );
    }
    let l = 2f64.exp();
    assert_moments("poisson_log_rng(2)", l, l, l * (1.0 + 3.0 * l));
    // categorical({0.2, 0.5, 0.3}): mean 2.1, var 0.49
    let m4 = 0.2 * 1.1f64.powi(4) + 0.5 * 0.1f64.powi(4) + 0.3 * 0.9f64.powi(4);
    assert_moments("categorical_rng([0.2, 0.5, 0.3]')", 2.1, 0.49, m4);
}

#[test]
fn vectorised_rng_gives_an_array() {
    let m = model("generated quantities { array[3] real x = normal_rng([0, 10, 100]', 1); }");
    let draw = m.generated_quantities(&[], Rng::new(3, 0, 0)).unwrap();
    let Value::Array(items) = &draw.values[0].1 else {
        panic!("{:?}", draw.values)
    };
    for (item, mu) in items.iter().zip([0.0, 10.0, 100.0]) {
        assert!((item.as_real().unwrap() - mu).abs() < 6.0);
    }
}

#[test]
fn transformed_data_draws_depend_on_the_seed_only() {
    let fe = language::compile_front_end(
        "transformed data { real z = normal_rng(0, 1); } generated quantities { real x = z; }",
    );
    let program = mir::lower(&fe.program, fe.checked.as_ref().unwrap(), "td").unwrap();
    let z = |seed| {
        let m = Model::with_seed(&program, &DataFile::empty(), seed).unwrap();
        m.generated_quantities(&[], Rng::new(0, 0, 0))
            .unwrap()
            .values[0]
            .1
            .clone()
    };
    assert_eq!(z(1), z(1));
    assert_ne!(z(1), z(2));
}

#[test]
fn more_generators_have_the_right_moments() {
    // neg_binomial_2(μ, φ): var μ + μ²/φ; its m4 is bounded generously by 12·var² + var
    let (mu, phi) = (4.0, 2.0);
    let v = mu + mu * mu / phi;
    assert_moments("neg_binomial_2_rng(4, 2)", mu, v, 12.0 * v * v + v);
    assert_moments("neg_binomial_2_log_rng(log(4), 2)", mu, v, 12.0 * v * v + v);
    // Laplace(μ, σ): var 2σ², kurtosis 6
    assert_moments("double_exponential_rng(1, 2)", 1.0, 8.0, 6.0 * 64.0);
    // logistic(μ, s): var s²π²/3, kurtosis 4.2
    let lv = 4.0 * std::f64::consts::PI.powi(2) / 3.0;
    assert_moments("logistic_rng(1, 2)", 1.0, lv, 4.2 * lv * lv);
    // weibull(α = 2, σ = 3): mean σΓ(1.5), var σ²(1 − Γ(1.5)²)
    let g = std::f64::consts::PI.sqrt() / 2.0;
    let wv = 9.0 * (1.0 - g * g);
    assert_moments("weibull_rng(2, 3)", 3.0 * g, wv, 5.0 * wv * wv);
    // chi_square(ν): var 2ν, m4 = 12ν(ν + 4)
    assert_moments("chi_square_rng(5)", 5.0, 10.0, 12.0 * 5.0 * 9.0);
    // inv_gamma(α = 6, β = 10): mean β/(α−1), var β²/((α−1)²(α−2))
    let iv = 100.0 / (25.0 * 4.0);
    assert_moments("inv_gamma_rng(6, 10)", 2.0, iv, 200.0 * iv * iv);
    // gumbel(μ, β): mean μ + γβ, var π²β²/6, kurtosis 5.4
    let gv = std::f64::consts::PI.powi(2) * 4.0 / 6.0;
    assert_moments(
        "gumbel_rng(1, 2)",
        1.0 + 0.5772156649015329 * 2.0,
        gv,
        5.4 * gv * gv,
    );
    // categorical_logit(log θ) has the categorical moments
    let m4 = 0.2 * 1.1f64.powi(4) + 0.5 * 0.1f64.powi(4) + 0.3 * 0.9f64.powi(4);
    assert_moments(
        "categorical_logit_rng(log([0.2, 0.5, 0.3]'))",
        2.1,
        0.49,
        m4,
    );
}

/// The ziggurat's normals against the normal distribution: a chi-square
/// test over 302 bins (0.03 wide on [-4.5, 4.5], and the two tails) of two
/// million draws from 2000 streams. The bins are narrower than the layers
/// near the centre, so a wrong wedge shows (checked: accepting every wedge
/// point gives χ² ≈ 590 against a bound of 424); the tail's draws are
/// counted and their mean excess compared with the normal's (checked: the
/// tail's exponential at 0.7 R fails it).
#[test]
fn std_normal_has_the_normal_distribution() {
    let phi = |x: f64| 0.5 * bat_math::scalar::erfc(-x / std::f64::consts::SQRT_2);
    let (width, inner) = (0.03, 300);
    let lo = -width * inner as f64 / 2.0;
    let mut counts = vec![0u64; inner + 2];
    let mut n = 0u64;
    for stream in 0..2000 {
        let mut r = Rng::new(11, stream, 0);
        for _ in 0..1000 {
            let z = r.std_normal();
            let bin = ((z - lo) / width).floor();
            let at = if bin < 0.0 {
                0
            } else if bin >= inner as f64 {
                inner + 1
            } else {
                bin as usize + 1
            };
            counts[at] += 1;
            n += 1;
        }
    }
    let edge = |k: usize| lo + width * k as f64;
    let expected = |at: usize| {
        let p = match at {
            0 => phi(lo),
            a if a == inner + 1 => 1.0 - phi(edge(inner)),
            a => phi(edge(a)) - phi(edge(a - 1)),
        };
        p * n as f64
    };
    let chi2: f64 = (0..inner + 2)
        .map(|at| (counts[at] as f64 - expected(at)).powi(2) / expected(at))
        .sum();
    let df = (inner + 1) as f64;
    assert!(
        chi2 < df + 5.0 * (2.0 * df).sqrt(),
        "χ² = {chi2} over {df} degrees of freedom"
    );
    // the tail past the base layer's edge R: 2(1 - Φ(R)) of the draws, and
    // their mean excess over R that of the normal's tail, φ(R)/(1 - Φ(R)) - R
    let r = runtime::ziggurat::R;
    let mut excess = Vec::new();
    let draws = 5_000_000u64;
    for stream in 0..5000 {
        let mut rng = Rng::new(12, stream, 0);
        for _ in 0..draws / 5000 {
            let z = rng.std_normal().abs();
            if z > r {
                excess.push(z - r);
            }
        }
    }
    let p = 2.0 * (1.0 - phi(r));
    let se = (draws as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (excess.len() as f64 - draws as f64 * p).abs() < 5.0 * se,
        "{} draws past R, expected {} ± {se}",
        excess.len(),
        draws as f64 * p
    );
    let density = (-0.5 * r * r).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let hazard = density / (1.0 - phi(r));
    let (mean, var) = (hazard - r, 1.0 - r * hazard + r * r - (hazard - r).powi(2));
    let found = excess.iter().sum::<f64>() / excess.len() as f64;
    let se = (var / excess.len() as f64).sqrt();
    assert!(
        (found - mean).abs() < 5.0 * se,
        "mean excess past R {found}, expected {mean} ± {se}"
    );
}
