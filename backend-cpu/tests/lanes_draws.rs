//! `_rng` draws written straight into dense slots (backend-cpu's
//! `eval::draws`) give each lane exactly the interpreter's draws, stream
//! and errors: scalar and container arguments (shared and per lane, real
//! and int), int-valued draws, a one-element container standing for every
//! element, draws on some lanes only (masked or gathered), lanes failing
//! on bad arguments, and the categorical draws that go lane by lane.
//! Every draw of a lane comes from its one stream in order, so equal
//! values of every draw (the last one included) mean equal streams.

use backend_cpu::lanes::{LaneStatus, Lanes, Slot, State};
use backend_cpu::structured::{self, Branching};
use language::data::DataFile;
use language::interp::{Model, Rng};
use language::mir::{Origin, StmtKind};
use std::sync::Arc;

const MODEL: &str = r#"
data { int N; vector[N] x; array[N] int k; }
parameters { real mu; real<lower=0> sigma; }
model { x ~ normal(mu, sigma); }
generated quantities {
  real u = uniform_rng(0, 1);
  real z0 = normal_rng(0, 1);
  array[N] real y_shared = normal_rng(x, 1);
  array[N] real y_lanes = normal_rng(mu + x, sigma);
  array[N] real y_int_args = normal_rng(k, sigma);
  array[N] real y_one = normal_rng(mu + x, rep_vector(sigma, 1));
  vector[N] m = to_vector(normal_rng(rep_vector(0, N), 1)) ./ sqrt(sigma + x .* x);
  int p = poisson_rng(sigma);
  array[N] int b = bernoulli_rng(inv_logit(mu + x));
  real g = gamma_rng(sigma + 0.5, 2);
  real maybe = 0;
  if (mu > 0) {
    maybe = exponential_rng(sigma) + uniform_rng(0, 1);
  }
  int c = categorical_rng(softmax(x));
  // Fails on the lanes where mu < -1 (a negative scale).
  real bad = normal_rng(0, mu + 1);
}
"#;

const DATA: &str = r#"{"N": 4, "x": [0.3, -1.2, 2.5, 0.9], "k": [1, 0, 3, 2]}"#;

#[test]
fn batched_draws_are_the_interpreters_lane_by_lane() {
    let program = language::compile_model(MODEL, "draws").0.expect("compiles");
    let data = DataFile::parse(DATA).unwrap();
    let model = Model::new(&program, &data).unwrap();
    let n = model.num_unconstrained();
    let seed = 11;
    let (mut failed, mut ran) = (0, 0);
    for z in [1, 5, 64] {
        let thetas: Vec<Vec<f64>> = (0..z)
            .map(|l| {
                let mut rng = Rng::new(3, l as u32, 0);
                (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
            })
            .collect();
        for branching in [Branching::Mask, Branching::Gather] {
            let mut st = State::new(&program, model.globals(), z);
            st.jacobian = false;
            for (p, decl) in model.params().iter().zip(&program.parameters) {
                let values = thetas
                    .iter()
                    .map(|th| {
                        let constrained = model.constrain(th).unwrap();
                        constrained
                            .into_iter()
                            .find(|(name, _)| *name == p.name)
                            .unwrap()
                            .1
                    })
                    .collect();
                st.vars[decl.var.0 as usize] = Some(Arc::new(Slot::from_lane_values(values)));
            }
            for l in 0..z {
                st.rng[l] = Some(Rng::new(seed, l as u32, 0));
            }
            let all = Lanes::all(z);
            structured::run(&program.generated_quantities, &mut st, &all, branching).unwrap();
            for (l, th) in thetas.iter().enumerate() {
                let truth = model.generated_quantities(th, Rng::new(seed, l as u32, 0));
                match (&st.status[l], truth) {
                    (LaneStatus::Running, Ok(draw)) => {
                        ran += 1;
                        for s in &program.generated_quantities {
                            let StmtKind::Decl { var, .. } = &s.kind else {
                                continue;
                            };
                            let info = &program.vars[var.0 as usize];
                            if info.origin != Origin::GeneratedQuantity {
                                continue;
                            }
                            let ours = st.vars[var.0 as usize].as_ref().unwrap().lane_value(l);
                            let theirs =
                                &draw.values.iter().find(|(n, _)| *n == info.name).unwrap().1;
                            // Debug text: NaN equals NaN, −0.0 differs from 0.0.
                            assert_eq!(
                                format!("{ours:?}"),
                                format!("{theirs:?}"),
                                "Z={z} lane {l} {branching:?}: {}",
                                info.name
                            );
                        }
                    }
                    (LaneStatus::Failed(ours), Err(theirs)) => {
                        assert_eq!(ours, &theirs, "Z={z} lane {l}");
                        failed += 1;
                    }
                    (ours, theirs) => {
                        panic!("Z={z} lane {l} {branching:?}: {ours:?} vs {theirs:?}")
                    }
                }
            }
        }
    }
    // The random parameters exercise both the failing and the running lanes.
    assert!(failed > 0 && ran > 0, "failed {failed}, ran {ran}");
}
