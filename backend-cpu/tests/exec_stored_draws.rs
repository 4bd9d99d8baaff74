//! Kept draws as stored numbers (`BatchedModel::stored_draws`, what
//! `bat run --backend native` writes) equal the draws by name
//! (`BatchedModel::generated_quantities`, checked against the interpreter
//! in `exec_constrain.rs`) as the draws file stores those: every
//! variable's name, stored dimensions, int-ness and elements in row-major
//! order, bit for bit — for matrices (column-major in memory), arrays of
//! vectors and of matrices, ints, values shared by every lane, and lanes
//! that fail — under both executors and several batch sizes. Tuples have
//! no stored layout from their slots: the caller is told to take the draws
//! by name.

mod common;

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig, KeptDraws};
use runtime::Rng;

const MODEL: &str = "
  data { int N; vector[N] x; }
  parameters {
    real mu;
    real<lower=0> sigma;
    cholesky_factor_corr[3] L;
    cov_matrix[2] S;
    array[2] vector[3] v;
  }
  transformed parameters {
    matrix[3, 2] M = L[:, 1:2] * sigma;
    array[2] matrix[2, 2] Ms = {S, S * mu};
  }
  model { mu ~ normal(0, 1); }
  generated quantities {
    array[N] real y = normal_rng(mu + x, sigma);
    array[N] int k = poisson_rng(rep_array(sigma + 1, N));
    int n = N;
    real constant = 2.5;
    matrix[2, 3] row_by_row = [[1, 2, 3], [4, 5, 6]];
    array[2, 2] vector[2] nested;
    for (i in 1:2) for (j in 1:2) nested[i, j] = [i * mu, j * sigma]';
    real fails = normal_rng(0, mu + 1.5);
  }";

const DATA: &str = r#"{"N": 3, "x": [0.3, -1.2, 2.5]}"#;

const TUPLES: &str = "
  parameters { real a; }
  model { a ~ normal(0, 1); }
  generated quantities { tuple(real, int) t = (a, 2); }";

fn batched(source: &str, batching: Batching) -> BatchedModel {
    let config = ExecConfig {
        batching,
        ..ExecConfig::default()
    };
    common::draws_model(source, DATA, config)
}

fn thetas(z: usize, n: usize) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(23, l as u32, 1);
            (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect()
}

fn rngs(z: usize) -> Vec<Rng> {
    (0..z).map(|l| Rng::new(4, l as u32, 9)).collect()
}

#[test]
fn stored_draws_are_the_named_draws_as_stored() {
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let model = batched(MODEL, batching);
        let n = model.model().num_unconstrained();
        for z in [1, 5, 40] {
            let (th, at) = (thetas(z, n), format!("{batching:?}, {z} lanes"));
            let named = model.generated_quantities(&th, &rngs(z)).unwrap();
            let stored = model
                .stored_draws(&th, &rngs(z))
                .unwrap()
                .unwrap_or_else(|| panic!("{at}: every variable has a stored layout"));
            assert_eq!(stored.lanes.len(), z);
            let mut failed = 0;
            for (l, (named, stored_lane)) in named.iter().zip(&stored.lanes).enumerate() {
                let (draw, numbers) = match (named, stored_lane) {
                    (Ok(draw), Ok(numbers)) => (draw, numbers),
                    (Err(a), Err(b)) => {
                        assert_eq!(a, b, "{at}, lane {l}: the same error");
                        failed += 1;
                        continue;
                    }
                    (a, b) => panic!("{at}, lane {l}: {a:?} vs {b:?}"),
                };
                let mut expected = Vec::new();
                for ((name, value), var) in draw.values.iter().zip(&stored.vars) {
                    let (dims, is_int) = value.stored_dims().unwrap();
                    assert_eq!((name, &dims, is_int), (&var.name, &var.dims, var.is_int));
                    value.flatten_row_major(&mut expected);
                }
                assert_eq!(draw.values.len(), stored.vars.len());
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(numbers), bits(&expected), "{at}, lane {l}");
            }
            if z == 40 {
                // `fails` needs mu > -1.5: some lanes fail, most run
                assert!(failed > 0 && failed < 20, "{at}: {failed} lanes failed");
            }
        }
    }
    // the layout as a file stores it: a matrix row by row
    let model = batched(MODEL, Batching::ProgramCounter);
    let th = thetas(1, model.model().num_unconstrained());
    let stored = model.stored_draws(&th, &rngs(1)).unwrap().unwrap();
    let mut at = 0;
    for var in &stored.vars {
        let size: usize = var.dims.iter().product();
        if var.name == "row_by_row" {
            assert_eq!(var.dims, [2, 3]);
            let numbers = stored.lanes[0].as_ref().unwrap();
            assert_eq!(numbers[at..at + size], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        }
        at += size;
    }
}

/// Tuples are left to the draws by name: `kept_draws` reads them from its
/// one run, the same as `generated_quantities` (the interpreter's, lane by
/// lane, checked above).
#[test]
fn tuples_are_left_to_the_draws_by_name() {
    let model = batched(TUPLES, Batching::ProgramCounter);
    let th = thetas(4, 1);
    assert!(model.stored_draws(&th, &rngs(4)).unwrap().is_none());
    let by_name = model.generated_quantities(&th, &rngs(4)).unwrap();
    assert!(by_name.iter().all(|d| d.is_ok()));
    let KeptDraws::Named(kept) = model.kept_draws(&th, &rngs(4)).unwrap() else {
        panic!("tuples cannot be stored from their slots");
    };
    assert_eq!(kept, by_name);
}
