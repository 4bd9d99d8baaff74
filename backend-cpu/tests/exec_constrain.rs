//! A draw's parameters constrained for all lanes at once (the entry
//! `constrain_parameters` of `lower_generated_quantities`: one `ReadParam`
//! per parameter, no Jacobian) equal the interpreter's `Model::constrain`
//! bit for bit for every kind of transform — scalar bounds shared or
//! depending on another parameter, vector bounds from data, offset and
//! multiplier, and the structured transforms that go lane by lane — under
//! both executors, masked and gathered, and whatever the batch size. A
//! lane given a point of the wrong length fails alone.

mod common;

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use runtime::Rng;

const MODEL: &str = "
  data { vector[2] lo; }
  parameters {
    real free;
    real<lower=0> pos;
    real<upper=1> below;
    real<lower=-1, upper=2> inside;
    real<lower=pos> above_pos;
    real<offset=1, multiplier=2> scaled;
    vector<lower=lo>[2] v_lo;
    vector<lower=-1, upper=lo>[2] v_box;
    simplex[3] s;
    ordered[3] o;
    positive_ordered[2] po;
    unit_vector[3] u;
    cholesky_factor_corr[3] L;
    cov_matrix[2] S;
    array[2] real<lower=0> arr;
  }
  model { free ~ normal(0, 1); }
  generated quantities {
    real total = free + pos + below + inside + above_pos + scaled + sum(v_lo) + sum(v_box)
      + sum(s) + sum(o) + sum(po) + sum(u) + sum(L) + sum(S) + sum(arr);
  }";

const DATA: &str = r#"{"lo": [0.5, 3]}"#;

/// Bounds from other parameters: the lanes where `a >= b` fail.
const CROSSED: &str = "
  parameters { real a; real b; real<lower=a, upper=b> c; }
  model { a ~ normal(0, 1); }
  generated quantities { real width = b - a; }";

fn batched(batching: Batching, gather_below: f64) -> BatchedModel {
    batched_of(MODEL, batching, gather_below)
}

fn batched_of(source: &str, batching: Batching, gather_below: f64) -> BatchedModel {
    let config = ExecConfig {
        batching,
        gather_below,
        ..ExecConfig::default()
    };
    let model = common::draws_model(source, DATA, config);
    assert!(
        model
            .program()
            .entry(language::batch::CONSTRAIN_PARAMETERS_ENTRY)
            .is_some(),
        "the program constrains its parameters itself"
    );
    model
}

fn thetas(z: usize, n: usize) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(17, l as u32, 3);
            (0..n).map(|_| 6.0 * rng.uniform() - 3.0).collect()
        })
        .collect()
}

fn rngs(z: usize) -> Vec<Rng> {
    (0..z).map(|l| Rng::new(1, l as u32, 2)).collect()
}

#[test]
fn batched_constrain_gives_the_interpreters_values_bit_for_bit() {
    for batching in [Batching::Local, Batching::ProgramCounter] {
        for gather_below in [0.0, 1.1] {
            let model = batched(batching, gather_below);
            let n = model.model().num_unconstrained();
            for z in [1, 7, 64] {
                let th = thetas(z, n);
                let ours = model.generated_quantities(&th, &rngs(z)).unwrap();
                for (l, got) in ours.iter().enumerate() {
                    let truth = model
                        .model()
                        .generated_quantities(&th[l], rngs(z)[l].clone());
                    // Debug text: −0.0 differs from 0.0, NaN equals NaN.
                    assert_eq!(
                        format!("{got:?}"),
                        format!("{truth:?}"),
                        "lane {l} of {z}, {batching:?}, gather below {gather_below}"
                    );
                    let draw = got.as_ref().expect("every lane runs");
                    let names: Vec<&str> = draw.values.iter().map(|(k, _)| k.as_str()).collect();
                    assert_eq!(names.first(), Some(&"free"));
                    assert_eq!(names.last(), Some(&"total"));
                }
            }
        }
    }
}

#[test]
fn crossed_bounds_fail_the_lanes_with_the_interpreters_error() {
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let model = batched_of(CROSSED, batching, 0.3);
        let th = thetas(40, 3);
        let ours = model.generated_quantities(&th, &rngs(40)).unwrap();
        let mut failed = 0;
        for (l, got) in ours.iter().enumerate() {
            let truth = model
                .model()
                .generated_quantities(&th[l], rngs(40)[l].clone());
            assert_eq!(
                format!("{got:?}"),
                format!("{truth:?}"),
                "lane {l}, {batching:?}"
            );
            if let Err(e) = got {
                failed += 1;
                // The error points at `c`'s declaration.
                let span = e.span.expect("a span");
                assert_eq!(
                    &CROSSED[span.start as usize..span.end as usize],
                    "c",
                    "{e:?}"
                );
            }
        }
        assert!(failed > 0 && failed < 40, "{failed} of 40 lanes failed");
    }
}

#[test]
fn a_point_of_the_wrong_length_fails_its_lane_only() {
    let model = batched(Batching::ProgramCounter, 0.0);
    let n = model.model().num_unconstrained();
    let mut th = thetas(3, n);
    th[1].pop();
    let out = model.generated_quantities(&th, &rngs(3)).unwrap();
    assert!(out[0].is_ok() && out[2].is_ok());
    let err = out[1].as_ref().expect_err("a short point fails");
    assert!(
        err.to_string().contains(&format!(
            "expected {n} unconstrained parameters, found {}",
            n - 1
        )),
        "{err}"
    );
}
