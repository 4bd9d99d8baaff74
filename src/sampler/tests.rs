//! Unit tests of the sampler program's pieces (run through the scalar
//! interpreter) against values computed by hand from Stan's formulas, and
//! of the whole NUTS program against closed-form Gaussian posteriors.

use super::program::nuts_program;
use super::*;
use language::value::Value;
use runtime::{Host, Rng, run_function};
use std::sync::mpsc;

/// Host for functions that call no external function.
struct NoHost;

impl Host for NoHost {
    fn call_external(&mut self, name: &str, _: Vec<Value>) -> Result<Option<Value>, RuntimeError> {
        Err(RuntimeError::fatal(format!(
            "unexpected external call {name}"
        )))
    }
}

fn call(name: &str, args: Vec<Value>) -> Vec<Value> {
    let program = nuts_program().unwrap_or_else(|e| panic!("{e}"));
    match run_function(program, name, args, Rng::new(1, 0, 0), &mut NoHost) {
        Ok(Some(Value::Tuple(items))) => items,
        Ok(Some(other)) => vec![other],
        other => panic!("{name}: {other:?}"),
    }
}

fn real(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        Value::Int(i) => *i as f64,
        other => panic!("not a real: {other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("not an int: {other:?}"),
    }
}

fn vector(v: &Value) -> Vec<f64> {
    match v {
        Value::Vector(x) => x.clone(),
        other => panic!("not a vector: {other:?}"),
    }
}

#[test]
fn the_sampler_program_compiles() {
    let program = nuts_program().unwrap_or_else(|e| panic!("{e}"));
    let externals: Vec<&str> = program
        .functions
        .iter()
        .filter(|f| f.external)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(
        externals,
        [
            "model_log_density_gradient",
            "emit_draw",
            "emit_adaptation",
            "emit_trajectory"
        ]
    );
}

#[test]
fn dual_averaging_matches_stan_formulas() {
    // Two updates from mu = log(10 * 0.5), delta 0.8, accept 0.6 then 1.3
    // (clipped to 1), by hand from stepsize_adaptation::learn_stepsize:
    // t=1: eta = 1/11, s = 0.2/11, x = mu - s*1/0.05, x_eta = 1,   xbar = x.
    // t=2: eta = 1/12, s = (11/12) s1 + (1/12)(-0.2), x = mu - s*sqrt2/0.05,
    //      x_eta = 2^-0.75, xbar = (1 - x_eta) xbar1 + x_eta x.
    let mu = (10.0f64 * 0.5).ln();
    let s1 = 0.2 / 11.0;
    let x1 = mu - s1 / 0.05;
    let out = call(
        "dual_averaging_update",
        vec![
            Value::Real(0.6),
            Value::Real(0.8),
            Value::Real(mu),
            Value::Int(0),
            Value::Real(0.0),
            Value::Real(0.0),
        ],
    );
    assert!((real(&out[0]) - x1.exp()).abs() < 1e-12);
    assert_eq!(int(&out[1]), 1);
    assert!((real(&out[2]) - s1).abs() < 1e-15);
    assert!((real(&out[3]) - x1).abs() < 1e-12);

    let s2 = (11.0 / 12.0) * s1 + (1.0 / 12.0) * (0.8 - 1.0);
    let x2 = mu - s2 * 2f64.sqrt() / 0.05;
    let w = 2f64.powf(-0.75);
    let xbar2 = (1.0 - w) * x1 + w * x2;
    let out = call(
        "dual_averaging_update",
        vec![
            Value::Real(1.3),
            Value::Real(0.8),
            Value::Real(mu),
            Value::Int(1),
            Value::Real(s1),
            Value::Real(x1),
        ],
    );
    assert!((real(&out[0]) - x2.exp()).abs() < 1e-12);
    assert!((real(&out[2]) - s2).abs() < 1e-15);
    assert!((real(&out[3]) - xbar2).abs() < 1e-12);
}

/// The 0-based warmup iterations after which the metric is updated, by
/// running the program's window functions as `sample_chain_rng` does.
fn metric_updates(num_warmup: i64) -> Vec<i64> {
    let p = call(
        "window_params",
        vec![
            Value::Int(num_warmup),
            Value::Int(75),
            Value::Int(50),
            Value::Int(25),
        ],
    );
    let (init, term, base) = (int(&p[0]), int(&p[1]), int(&p[2]));
    let (mut end, mut size) = (init + base - 1, base);
    let mut updates = Vec::new();
    for counter in 0..num_warmup {
        if counter == end && counter != num_warmup {
            updates.push(counter);
            let next = call(
                "next_window",
                vec![
                    Value::Int(counter),
                    Value::Int(end),
                    Value::Int(size),
                    Value::Int(num_warmup),
                    Value::Int(term),
                ],
            );
            (end, size) = (int(&next[0]), int(&next[1]));
        }
    }
    updates
}

#[test]
fn adaptation_windows_match_stan() {
    // Stan's default warmup 1000: windows of 25, 50, 100, 200, then 500
    // stretched to the terminal buffer (CmdStan updates the metric after
    // iterations 100, 150, 250, 450 and 950).
    assert_eq!(metric_updates(1000), [99, 149, 249, 449, 949]);
    // 200: the second window (50) ends exactly at the terminal buffer.
    assert_eq!(metric_updates(200), [99, 149]);
    // 300: windows 25, 50, then 100 stretched to end at 300 - 50 - 1.
    assert_eq!(metric_updates(300), [99, 149, 249]);
    // Short warmup: 15% / 75% / 10% → init 15, window 75, term 10.
    let p = call(
        "window_params",
        vec![
            Value::Int(100),
            Value::Int(75),
            Value::Int(50),
            Value::Int(25),
        ],
    );
    assert_eq!((int(&p[0]), int(&p[1]), int(&p[2])), (15, 10, 75));
    assert_eq!(metric_updates(100), [89]);
}

#[test]
fn welford_variance_is_regularized_as_stan() {
    let xs = [[1.0, 10.0], [2.0, 30.0], [4.0, 20.0], [7.0, 60.0]];
    let (mut n, mut mean, mut m2) = (0, vec![0.0; 2], vec![0.0; 2]);
    for x in xs {
        let out = call(
            "welford_add",
            vec![
                Value::Int(n),
                Value::Vector(mean),
                Value::Vector(m2),
                Value::Vector(x.to_vec()),
            ],
        );
        (n, mean, m2) = (int(&out[0]), vector(&out[1]), vector(&out[2]));
    }
    assert_eq!(n, 4);
    assert!((mean[0] - 3.5).abs() < 1e-14 && (mean[1] - 30.0).abs() < 1e-14);
    // Sample variances 7 and 466.666…, shrunk: (4/9) var + 1e-3 (5/9).
    let var = call(
        "regularized_variance",
        vec![
            Value::Int(n),
            Value::Vector(m2),
            Value::Vector(vec![1.0, 1.0]),
        ],
    );
    let var = vector(&var[0]);
    let expected = [7.0, 1400.0 / 3.0].map(|v| 4.0 / 9.0 * v + 1e-3 * 5.0 / 9.0);
    assert!((var[0] - expected[0]).abs() < 1e-12, "{var:?}");
    assert!((var[1] - expected[1]).abs() < 1e-10, "{var:?}");
}

// ------------------------------------------------------------ whole chains

pub(crate) struct Compiled {
    pub model: Model,
    pub grad: GradProgram,
}

pub(crate) fn compile(source: &str) -> Compiled {
    let (program, diagnostics) = language::compile_model(source, "test");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    let model = Model::new(&program, &language::data::DataFile::empty()).unwrap();
    Compiled { model, grad }
}

/// Post-warmup draws of chain `chain` (constrained values, flattened) and their statistics.
pub(crate) fn run_one(
    c: &Compiled,
    settings: &Settings,
    chain: usize,
) -> (Vec<Vec<f64>>, Vec<SampleStats>) {
    let (tx, rx) = mpsc::channel();
    let job = ChainJob {
        model: &c.model,
        grad: &c.grad,
        settings,
    };
    let control = Control::new();
    run_chain(&job, chain, tx, &control).unwrap_or_else(|e| panic!("{e:?}"));
    let mut draws = Vec::new();
    let mut stats = Vec::new();
    for event in rx.try_iter() {
        if let Event::Iteration { record, .. } = event
            && !record.warmup
        {
            let mut flat = Vec::new();
            let Some(DrawValues::Named(values)) = record.values else {
                panic!("the interpreter's draws by name")
            };
            for (_, v) in values {
                v.flatten_reals(&mut flat);
            }
            draws.push(flat);
            stats.push(record.stats);
        }
    }
    (draws, stats)
}

fn settings(warmup: usize, samples: usize, seed: u64) -> Settings {
    Settings::stan_defaults(warmup, samples, seed)
}

fn mean_sd(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = xs.clone().count() as f64;
    let mean = xs.clone().sum::<f64>() / n;
    let var = xs.map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

#[test]
fn standard_normal_in_ten_dimensions() {
    let c = compile("parameters { vector[10] x; } model { x ~ std_normal(); }");
    let (draws, stats) = run_one(&c, &settings(300, 1000, 7), 0);
    assert_eq!(draws.len(), 1000);
    // NUTS on an iid normal is nearly antithetic: ESS ≥ 1000, so the mean's
    // MC error is < 0.032; 5 sigma. The sd of the sd estimate is ≈ 1/sqrt(2n).
    for d in 0..10 {
        let (mean, sd) = mean_sd(draws.iter().map(|x| x[d]));
        assert!(mean.abs() < 0.16, "x[{d}] mean {mean}");
        assert!((sd - 1.0).abs() < 0.12, "x[{d}] sd {sd}");
    }
    // Adapted step size for a 10-d unit normal at delta 0.8 is about 0.6–0.9:
    // trees of depth 2–3 with 3–7 leapfrog steps.
    let mean_steps = stats.iter().map(|s| s.n_leapfrog as f64).sum::<f64>() / 1000.0;
    let mean_accept = stats.iter().map(|s| s.accept_stat).sum::<f64>() / 1000.0;
    assert!((2.0..=10.0).contains(&mean_steps), "{mean_steps}");
    assert!((0.65..=0.95).contains(&mean_accept), "{mean_accept}");
    assert!(stats.iter().all(|s| !s.divergent));
    // A tree of depth d took 2^d - 1 steps, plus those of the rejected
    // last sub-tree (at most 2^d).
    assert!(stats.iter().all(|s| {
        s.n_leapfrog >= (1 << s.tree_depth) - 1 && s.n_leapfrog < (1 << (s.tree_depth + 1))
    }));
}

#[test]
fn normal_in_one_dimension() {
    let c = compile("parameters { real x; } model { x ~ normal(3, 2); }");
    let (draws, stats) = run_one(&c, &settings(200, 1000, 3), 1);
    let (mean, sd) = mean_sd(draws.iter().map(|x| x[0]));
    // ESS of NUTS on a 1-d normal is ≳ 500 here: MC error of the mean < 0.09.
    assert!((mean - 3.0).abs() < 0.45, "mean {mean}");
    assert!((sd - 2.0).abs() < 0.3, "sd {sd}");
    assert!(stats.iter().all(|s| s.tree_depth <= 3 && !s.divergent));
}

#[test]
fn correlated_gaussian_means_sds_and_correlation() {
    // N(0, Σ) with sds 1 and 3 and correlation 0.9, written out by hand.
    let c = compile(
        "parameters { vector[2] x; }
         model {
           real r = 0.9;
           real a = x[1] / 1;
           real b = x[2] / 3;
           target += -0.5 / (1 - r^2) * (a^2 - 2 * r * a * b + b^2);
         }",
    );
    let (draws, stats) = run_one(&c, &settings(400, 1500, 5), 2);
    let (m1, s1) = mean_sd(draws.iter().map(|x| x[0]));
    let (m2, s2) = mean_sd(draws.iter().map(|x| x[1]));
    let cov =
        draws.iter().map(|x| (x[0] - m1) * (x[1] - m2)).sum::<f64>() / (draws.len() as f64 - 1.0);
    let corr = cov / (s1 * s2);
    // With ESS ≳ 300, 5 MC errors of the mean are < 0.3 sd.
    assert!(m1.abs() < 0.3 && m2.abs() < 0.9, "means {m1} {m2}");
    assert!(
        (s1 - 1.0).abs() < 0.2 && (s2 - 3.0).abs() < 0.6,
        "sds {s1} {s2}"
    );
    assert!((corr - 0.9).abs() < 0.05, "correlation {corr}");
    // The adapted diagonal metric cannot remove the correlation: trees are
    // deeper than for independent coordinates but far below the maximum.
    let mean_depth = stats.iter().map(|s| s.tree_depth as f64).sum::<f64>() / stats.len() as f64;
    assert!((1.5..6.0).contains(&mean_depth), "{mean_depth}");
}
