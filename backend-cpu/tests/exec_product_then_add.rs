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
fn data() -> String {
    let (n, d) = (401, 5);
    let matrix = |seed: usize| {
        let rows: Vec<String> = (0..n)
            .map(|i| {
                let row: Vec<String> = (0..d)
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
    };
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", (i % 17) as f64 / 4.0 - 2.0))
        .collect();
    format!(
        r#"{{"N": {n}, "D": {d}, "X1": {}, "X2": {}, "X3": {}, "c": 0.7, "y": [{}]}}"#,
        matrix(1),
        matrix(2),
        matrix(3),
        y.join(", ")
    )
}

#[test]
fn a_product_then_an_addend_matches_the_interpreter_lane_by_lane() {
    let program = match language::compile_model(SOURCE, "product_then_add") {
        (Some(p), _) => p,
        (None, ds) => panic!("does not compile: {}", ds[0].message),
    };
    let data = DataFile::parse(&data()).unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    // The gradient program has the three forms (else this test would test
    // nothing).
    let fusable = cfg
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| b.ops.windows(2))
        .filter(|w| backend_cpu::ops::product_then_add::fusable(&w[0], &w[1]))
        .count();
    assert_eq!(fusable, 3, "fusable statement pairs");
    for z in [1, 7, 16, 64] {
        let th: Vec<Vec<f64>> = (0..z)
            .map(|l| {
                let mut rng = Rng::new(99, l as u32, 0);
                (0..6).map(|_| 4.0 * rng.uniform() - 2.0).collect()
            })
            .collect();
        for batching in [Batching::Local, Batching::ProgramCounter] {
            let config = ExecConfig {
                batching,
                ..ExecConfig::default()
            };
            let model = Model::new(&program, &data).unwrap();
            let batched = BatchedModel::new(cfg.clone(), model, config).unwrap();
            let ours = batched.log_density_gradient(&th, true).unwrap();
            for (l, got) in ours.iter().enumerate() {
                let (lp, grad) = got.as_ref().unwrap();
                let (lp0, grad0) = batched
                    .model()
                    .log_density_gradient(&g, &th[l], true)
                    .unwrap();
                let at = format!("{batching:?} Z={z} lane {l}");
                assert_eq!(lp.to_bits(), lp0.to_bits(), "{at}: lp");
                for (k, (a, b)) in grad.iter().zip(&grad0).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{at}: grad[{k}]");
                }
            }
        }
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
    let (n, d) = (401, 5);
    let matrix = |seed: usize| {
        let rows: Vec<String> = (0..n)
            .map(|i| {
                let row: Vec<String> = (0..d)
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
    };
    let k: Vec<String> = (0..n).map(|i| format!("{}", (i * 5 % 7) % 2)).collect();
    let y: Vec<String> = (0..n)
        .map(|i| format!("{}", (i % 17) as f64 / 4.0 - 2.0))
        .collect();
    format!(
        r#"{{"N": {n}, "D": {d}, "X1": {}, "X2": {}, "k": [{}], "y": [{}]}}"#,
        matrix(1),
        matrix(2),
        k.join(", "),
        y.join(", ")
    )
}

#[test]
fn a_check_of_the_sum_is_answered_by_the_product_or_fails_the_lanes_it_fails() {
    let program = match language::compile_model(CHECKED, "checked_sum") {
        (Some(p), _) => p,
        (None, ds) => panic!("does not compile: {}", ds[0].message),
    };
    let data = DataFile::parse(&checked_data()).unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    let checked = cfg
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| b.ops.windows(3))
        .filter(|w| backend_cpu::ops::product_then_add::checks_the_sum(&w[0], &w[1], &w[2]))
        .count();
    assert_eq!(checked, 2, "products followed by a check of their sum");
    for z in [1, 7, 64] {
        for poisoned in [None, Some(z / 2)] {
            let th: Vec<Vec<f64>> = (0..z)
                .map(|l| {
                    let mut rng = Rng::new(7, l as u32, 0);
                    let mut t: Vec<f64> = (0..6).map(|_| 4.0 * rng.uniform() - 2.0).collect();
                    if Some(l) == poisoned {
                        // β₁ = +inf, β₂ = −inf: rows with both terms
                        // nonzero sum to NaN, the others to ±inf.
                        t[1] = f64::INFINITY;
                        t[2] = f64::NEG_INFINITY;
                    }
                    t
                })
                .collect();
            for batching in [Batching::Local, Batching::ProgramCounter] {
                let config = ExecConfig {
                    batching,
                    ..ExecConfig::default()
                };
                let model = Model::new(&program, &data).unwrap();
                let batched = BatchedModel::new(cfg.clone(), model, config).unwrap();
                let ours = batched.log_density_gradient(&th, true).unwrap();
                for (l, got) in ours.iter().enumerate() {
                    let expected = batched.model().log_density_gradient(&g, &th[l], true);
                    let at = format!("{batching:?} Z={z} lane {l} poisoned {poisoned:?}");
                    match (got, &expected) {
                        (Ok((lp, grad)), Ok((lp0, grad0))) => {
                            assert_eq!(lp.to_bits(), lp0.to_bits(), "{at}: lp");
                            for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                                assert_eq!(a.to_bits(), b.to_bits(), "{at}: grad[{k}]");
                            }
                        }
                        (Err(e), Err(e0)) => {
                            assert_eq!(Some(l), poisoned, "{at}: fails");
                            assert_eq!(e.message, e0.message, "{at}: the error");
                        }
                        _ => panic!("{at}: {got:?} vs {expected:?}"),
                    }
                }
                if let Some(p) = poisoned {
                    assert!(ours[p].is_err(), "the poisoned lane fails");
                }
            }
        }
    }
}
