//! `let a = multiply(X, v); let b = add(s, a);` runs as one product whose
//! rows get `s` added as they become final (`ops::product_then_add`): each
//! lane's log density and gradient must still be exactly the
//! interpreter's, through both executors, for an addend per lane, shared
//! data or a literal, before or after the product, with the product's
//! rows in several blocks and its lanes packed or not.

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use language::data::DataFile;
use language::interp::{Model, Rng};

const SOURCE: &str = r#"
data {
  int N;
  int D;
  matrix[N, D] X1;
  matrix[N, D] X2;
  matrix[N, D] X3;
  real c;
  vector[N] y;
}
parameters {
  real alpha;
  vector[D] beta;
}
model {
  y ~ normal(alpha + X1 * beta, 2);
  y ~ normal(X2 * beta + c, 3);
  target += -0.5 * dot_self(0.25 + X3 * beta);
  alpha ~ normal(0, 1);
  beta ~ normal(0, 1);
}
"#;

/// N = 401 rows: three blocks of the AVX2 kernel's 192 rows, the last tile
/// partial.
const N: usize = 401;
const D: usize = 5;

/// An N × D data matrix in JSON, its numbers in [−1, 1] varied by `seed`.
fn matrix_json(seed: usize) -> String {
    let rows: Vec<String> = (0..N)
        .map(|i| {
            let row: Vec<String> = (0..D)
                .map(|j| {
                    format!(
                        "{}",
                        (((i * 7 + j * 13 + seed) * 37) % 101) as f64 / 50.0 - 1.0
                    )
                })
                .collect();
            format!("[{}]", row.join(", "))
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

/// N outcomes in JSON: `f(i)` for row i.
fn column_json(f: impl Fn(usize) -> String) -> String {
    format!("[{}]", (0..N).map(f).collect::<Vec<_>>().join(", "))
}

fn data() -> String {
    format!(
        r#"{{"N": {N}, "D": {D}, "X1": {}, "X2": {}, "X3": {}, "c": 0.7, "y": {}}}"#,
        matrix_json(1),
        matrix_json(2),
        matrix_json(3),
        column_json(|i| format!("{}", (i % 17) as f64 / 4.0 - 2.0))
    )
}

/// A model's program, data, gradient and its CFG.
struct Compiled {
    program: language::mir::Program,
    data: DataFile,
    g: language::ad::GradProgram,
    cfg: language::batch::cfg::Program,
}

fn compile(source: &str, name: &str, data: &str) -> Compiled {
    let program = match language::compile_model(source, name) {
        (Some(p), _) => p,
        (None, ds) => panic!("does not compile: {}", ds[0].message),
    };
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    let data = DataFile::parse(data).unwrap();
    Compiled {
        program,
        data,
        g,
        cfg,
    }
}

/// How many runs of `n` consecutive statements of a block satisfy `form`.
fn count_runs(c: &Compiled, n: usize, form: impl Fn(&[language::mir::Stmt]) -> bool) -> usize {
    c.cfg
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| b.ops.windows(n))
        .filter(|w| form(w))
        .count()
}

/// Random points of `z` lanes from `seed` (6 coordinates, uniform(−2, 2)).
fn thetas(z: usize, seed: u64) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(seed, l as u32, 0);
            (0..6).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect()
}

/// Every lane of `th` through both executors gets exactly the
/// interpreter's log density and gradient, or the interpreter's error;
/// returns which lanes failed.
fn assert_lanes_equal_the_interpreter(c: &Compiled, th: &[Vec<f64>], at: &str) -> Vec<bool> {
    let mut failed = Vec::new();
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let config = ExecConfig {
            batching,
            ..ExecConfig::default()
        };
        let model = Model::new(&c.program, &c.data).unwrap();
        let batched = BatchedModel::new(c.cfg.clone(), model, config).unwrap();
        let ours = batched.log_density_gradient(th, true).unwrap();
        failed = ours.iter().map(|r| r.is_err()).collect();
        for (l, got) in ours.iter().enumerate() {
            let expected = batched.model().log_density_gradient(&c.g, &th[l], true);
            let at = format!("{at}, {batching:?}, Z={}, lane {l}", th.len());
            match (got, &expected) {
                (Ok((lp, grad)), Ok((lp0, grad0))) => {
                    assert_eq!(lp.to_bits(), lp0.to_bits(), "{at}: lp");
                    for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                        assert_eq!(a.to_bits(), b.to_bits(), "{at}: grad[{k}]");
                    }
                }
                (Err(e), Err(e0)) => assert_eq!(e.message, e0.message, "{at}: the error"),
                _ => panic!("{at}: {got:?} vs {expected:?}"),
            }
        }
    }
    failed
}

#[test]
fn a_product_then_an_addend_matches_the_interpreter_lane_by_lane() {
    let c = compile(SOURCE, "product_then_add", &data());
    // The gradient program has the three forms (else this test would test
    // nothing).
    let fusable = count_runs(&c, 2, |w| {
        backend_cpu::ops::product_then_add::fusable(&w[0], &w[1])
    });
    assert_eq!(fusable, 3, "fusable statement pairs");
    for z in [1, 7, 16, 64] {
        let failed = assert_lanes_equal_the_interpreter(&c, &thetas(z, 99), "product then add");
        assert!(failed.iter().all(|f| !f), "no lane fails");
    }
}

/// A logistic regression's linear predictor checked right after it is
/// computed (`check_not_nan` of `bernoulli_logit`, `check_finite` of
/// `normal`'s location): with every sum finite the product answers the
/// check; with a lane's sums NaN or infinite, the check runs and fails
/// that lane (only) with the interpreter's error.
const CHECKED: &str = r#"
data {
  int N;
  int D;
  matrix[N, D] X1;
  matrix[N, D] X2;
  array[N] int k;
  vector[N] y;
}
parameters {
  real alpha;
  vector[D] beta;
}
model {
  k ~ bernoulli_logit(alpha + X1 * beta);
  y ~ normal(X2 * beta + alpha, 3);
  alpha ~ normal(0, 1);
  beta ~ normal(0, 1);
}
"#;

fn checked_data() -> String {
    format!(
        r#"{{"N": {N}, "D": {D}, "X1": {}, "X2": {}, "k": {}, "y": {}}}"#,
        matrix_json(1),
        matrix_json(2),
        column_json(|i| format!("{}", (i * 5 % 7) % 2)),
        column_json(|i| format!("{}", (i % 17) as f64 / 4.0 - 2.0))
    )
}

#[test]
fn a_check_of_the_sum_is_answered_by_the_product_or_fails_the_lanes_it_fails() {
    let c = compile(CHECKED, "checked_sum", &checked_data());
    let checked = count_runs(&c, 3, |w| {
        backend_cpu::ops::product_then_add::checks_the_sum(&w[0], &w[1], &w[2])
    });
    assert_eq!(checked, 2, "products followed by a check of their sum");
    for z in [1, 7, 64] {
        for poisoned in [None, Some(z / 2)] {
            let mut th = thetas(z, 7);
            if let Some(l) = poisoned {
                // β₁ = +inf, β₂ = −inf: rows with both terms nonzero sum
                // to NaN, the others to ±inf.
                th[l][1] = f64::INFINITY;
                th[l][2] = f64::NEG_INFINITY;
            }
            let at = format!("poisoned {poisoned:?}");
            let failed = assert_lanes_equal_the_interpreter(&c, &th, &at);
            let expected: Vec<bool> = (0..z).map(|l| Some(l) == poisoned).collect();
            assert_eq!(failed, expected, "{at}: the lanes that fail");
        }
    }
}
