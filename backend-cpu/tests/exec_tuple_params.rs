//! Tuple parameters, nested ones included, on the batched executors:
//! each lane's log density and gradient equal the closed form of the
//! model's normal densities (the gradient in Stan's unconstrained order:
//! a tuple's components one after the other) and the interpreter's, bit
//! for bit; a model that never reads its tuple parameters has a zero
//! gradient instead of a failure.

mod common;

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use runtime::{Model, Rng};

/// Each coordinate a normal of its own location and scale, so that a
/// coordinate out of place shows; `m[1, 2]` has a second term, reached
/// through an index after two tuple projections.
const NESTED: &str = "
  parameters {
    tuple(real, real) ps;
    tuple(real, tuple(real, matrix[2, 2])) ps2;
  }
  model {
    ps.1 ~ normal(1, 2);
    ps.2 ~ normal(-1, 0.5);
    ps2.1 ~ normal(2, 3);
    ps2.2.1 ~ normal(0, 1.5);
    to_vector(ps2.2.2) ~ normal(3, 4);
    ps2.2.2[1, 2] ~ normal(5, 1);
  }";

/// (location, scale) of each unconstrained coordinate: `ps.1`, `ps.2`,
/// `ps2.1`, `ps2.2.1`, then the matrix column-major.
const TERMS: [(f64, f64); 8] = [
    (1.0, 2.0),
    (-1.0, 0.5),
    (2.0, 3.0),
    (0.0, 1.5),
    (3.0, 4.0),
    (3.0, 4.0),
    (3.0, 4.0),
    (3.0, 4.0),
];

/// The position of `m[1, 2]` in θ (column-major after four reals).
const M12: usize = 4 + 2;

fn points(n: usize, z: usize, seed: u64) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(seed, l as u32, 0);
            (0..n).map(|_| 6.0 * rng.uniform() - 3.0).collect()
        })
        .collect()
}

/// The log density (`~` drops the constants) and its gradient.
fn closed_form(x: &[f64]) -> (f64, Vec<f64>) {
    let mut lp = 0.0;
    let mut grad = vec![0.0; x.len()];
    for (k, &(mu, sigma)) in TERMS.iter().enumerate() {
        let z = (x[k] - mu) / sigma;
        lp += -0.5 * z * z;
        grad[k] = -z / sigma;
    }
    let z = x[M12] - 5.0;
    lp += -0.5 * z * z;
    grad[M12] += -z;
    (lp, grad)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn nested_tuple_parameters_have_the_closed_form_gradient() {
    let c = common::compile(NESTED, "nested", "{}");
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let config = ExecConfig {
            batching,
            ..ExecConfig::default()
        };
        let model = Model::new(&c.program, &c.data).unwrap();
        let batched = BatchedModel::new(c.cfg.clone(), model, config).unwrap();
        for z in [1, 5] {
            let th = points(TERMS.len(), z, 11);
            let got = batched.log_density_gradient(&th, true).unwrap();
            for (l, result) in got.iter().enumerate() {
                let at = format!("{batching:?}, Z={z}, lane {l}");
                let (lp, grad) = result.as_ref().unwrap_or_else(|e| panic!("{at}: {e:?}"));
                let (lp0, grad0) = closed_form(&th[l]);
                assert!(close(*lp, lp0), "{at}: lp {lp} vs {lp0}");
                assert_eq!(grad.len(), grad0.len(), "{at}");
                for (k, (a, b)) in grad.iter().zip(&grad0).enumerate() {
                    assert!(close(*a, *b), "{at}: grad[{k}] {a} vs {b}");
                }
            }
        }
    }
}

#[test]
fn nested_tuple_parameters_match_the_interpreter_lane_by_lane() {
    let c = common::compile(NESTED, "nested", "{}");
    for z in [1, 4, 9] {
        let th = points(TERMS.len(), z, 3);
        common::assert_lanes_succeed_as_the_interpreter(&c, &th, "nested tuples");
    }
}

/// stanc3's `tuples/tuple-nested-param.stan`: parameters only, no model
/// block (it used to panic in the parameter adjoint, which read the tuple
/// as a single real).
#[test]
fn unread_nested_tuple_parameters_have_a_zero_gradient() {
    let source = "
      parameters {
        tuple(real, real) ps;
        tuple(real, tuple(real, matrix[10, 10])) ps2;
      }";
    let c = common::compile(source, "unread", "{}");
    let th = points(104, 6, 5);
    common::assert_lanes_succeed_as_the_interpreter(&c, &th, "unread tuples");
    let model = Model::new(&c.program, &c.data).unwrap();
    let batched = BatchedModel::new(c.cfg.clone(), model, ExecConfig::default()).unwrap();
    for result in batched.log_density_gradient(&th, true).unwrap() {
        let (lp, grad) = result.unwrap();
        assert_eq!(lp, 0.0);
        assert_eq!(grad, vec![0.0; 104]);
    }
}
