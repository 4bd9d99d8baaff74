//! `let a = multiply(X, v); let b = add(s, a);` runs as one product whose
//! rows get `s` added as they become final (`ops::product_then_add`): each
//! lane's log density and gradient must still be exactly the
//! interpreter's, through both executors, for an addend per lane, shared
//! data or a literal, before or after the product, with the product's
//! rows in several blocks and its lanes packed or not.

mod common;

use common::{
    assert_lanes_equal_the_interpreter, assert_lanes_succeed_as_the_interpreter, compile,
    count_runs, thetas,
};

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
        assert_lanes_succeed_as_the_interpreter(&c, &thetas(z, 99, 2.0), "product then add");
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
            let mut th = thetas(z, 7, 2.0);
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
