//! Generated quantities run batched — random draws from each lane's own
//! counter-based stream, `print`, `reject`, `while`/`for` with per-lane
//! trip counts, `break`/`continue`, tuples, int and real locals — give
//! each lane exactly the values, printed output and errors of the
//! interpreter's `Model::generated_quantities` for that lane.
//!
//! A second model covers the `_rng` draws written straight into dense
//! slots (backend-cpu's `eval::draws`): scalar and container arguments
//! (shared and per lane, real and int), int-valued draws, a one-element
//! container standing for every element, draws on some lanes only (masked
//! or gathered), lanes failing on bad arguments, and the categorical draws
//! that go lane by lane. Every draw of a lane comes from its one stream in
//! order, so equal values of every draw (the last one included) mean equal
//! streams.

use backend_cpu::lanes::{LaneStatus, Lanes, Slot, State};
use backend_cpu::structured::{self, Branching};
use language::data::DataFile;
use language::mir::{Origin, StmtKind};
use runtime::{Model, Rng};
use std::sync::Arc;

const MODEL: &str = r#"
data { int N; vector[N] x; }
parameters { real mu; real<lower=0> sigma; }
transformed parameters { real s2 = square(sigma); }
model { x ~ normal(mu, sigma); }
generated quantities {
  array[N] real yrep = normal_rng(mu + x, sigma);
  int k = 0;
  real acc = 0;
  while (acc < 3 * sigma) {
    acc += exponential_rng(1);
    k += 1;
    if (k > 50) break;
  }
  int c = categorical_rng(softmax(x));
  vector[N] w;
  for (n in 1:N) {
    if (x[n] > mu) continue;
    w[n] = x[n] - mu;
  }
  if (mu > 1.0) print("big mu ", mu, " k=", k, " w=", w);
  if (sigma > 5) reject("sigma too big: ", sigma);
  tuple(real, int) t = (acc, k);
  real first = t.1;
  int second = t.2 * c;
}
"#;

const DATA: &str = r#"{"N": 4, "x": [0.3, -1.2, 2.5, 0.9]}"#;

const DRAWS_MODEL: &str = r#"
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
  // Fails at the second element on the other lanes where mu <= 0 (a zero
  // scale), after drawing the first.
  array[2] real edge = normal_rng(0, {1, fmax(mu, 0)});
}
"#;

const DRAWS_DATA: &str = r#"{"N": 4, "x": [0.3, -1.2, 2.5, 0.9], "k": [1, 0, 3, 2]}"#;

/// A Viterbi decoder (as posteriordb's hmm_example has): element writes
/// into int and real arrays at shared indexes, on all lanes and on the
/// lanes a per-lane branch takes, with shared and per-lane values; writes
/// at per-lane indexes; and a write out of range on some lanes (their
/// error).
const VITERBI_MODEL: &str = r#"
data { int N; int K; array[N] real y; }
parameters { positive_ordered[K] mu; }
generated quantities {
  array[N] int z;
  array[N, K] int back;
  array[N, K] real best;
  int taken = 0;
  for (k in 1:K) {
    best[1, k] = normal_lpdf(y[1] | mu[k], 1);
    back[1, k] = 0;
  }
  for (t in 2:N) {
    for (k in 1:K) {
      best[t, k] = negative_infinity();
      for (j in 1:K) {
        real lp = best[t - 1, j] + normal_lpdf(y[t] | mu[k], 1);
        if (lp > best[t, k]) {
          back[t, k] = j;
          best[t, k] = lp;
          taken += 1;
        }
      }
    }
  }
  z[N] = 1;
  for (k in 1:K) {
    if (best[N, k] == max(best[N])) z[N] = k;
  }
  for (t in 1:(N - 1)) z[N - t] = back[N - t + 1, z[N - t + 1]];
  array[K] int counts = rep_array(0, K);
  for (t in 1:N) counts[z[t]] += 1;
  if (mu[1] > 2) counts[K + 1] = 1;
}
"#;

const VITERBI_DATA: &str =
    r#"{"N": 9, "K": 3, "y": [0.5, 3.1, 2.9, 0.2, 6.0, 5.5, 0.1, 3.3, 6.2]}"#;

/// How the lanes of [`check_lane_by_lane`] ended.
#[derive(Default)]
struct Tally {
    ran: usize,
    failed: usize,
    printed: usize,
}

/// Run `source`'s transformed parameters and generated quantities batched
/// at random parameters (uniform(-2, 2) unconstrained, stream `theta_seed`
/// per lane), masked and gathered, for each Z of `zs`; every lane's values
/// (Debug text), printed output and error must be the interpreter's.
fn check_lane_by_lane(source: &str, data: &str, zs: &[usize], seed: u64, theta_seed: u64) -> Tally {
    let program = language::compile_model(source, "gq").0.expect("compiles");
    let data = DataFile::parse(data).unwrap();
    let model = Model::new(&program, &data).unwrap();
    let n = model.num_unconstrained();
    let mut tally = Tally::default();
    for &z in zs {
        let thetas: Vec<Vec<f64>> = (0..z)
            .map(|l| {
                let mut rng = Rng::new(theta_seed, l as u32, 0);
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
                st.set_rng(l, Some(Rng::new(seed, l as u32, 0)));
            }
            let all = Lanes::all(z);
            structured::run(&program.transformed_parameters, &mut st, &all, branching).unwrap();
            structured::run(&program.generated_quantities, &mut st, &all, branching).unwrap();
            for (l, th) in thetas.iter().enumerate() {
                let truth = model.generated_quantities(th, Rng::new(seed, l as u32, 0));
                match (&st.status[l], truth) {
                    (LaneStatus::Running, Ok(draw)) => {
                        assert_eq!(st.lane_output(l), draw.output, "lane {l} output");
                        tally.ran += 1;
                        tally.printed += usize::from(!draw.output.is_empty());
                        let blocks = [
                            &program.transformed_parameters,
                            &program.generated_quantities,
                        ];
                        for s in blocks.into_iter().flatten() {
                            let StmtKind::Decl { var, .. } = &s.kind else {
                                continue;
                            };
                            let info = &program.vars[var.0 as usize];
                            if !matches!(
                                info.origin,
                                Origin::TransformedParameter | Origin::GeneratedQuantity
                            ) {
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
                        assert_eq!(&**ours, &theirs, "Z={z} lane {l}");
                        tally.failed += 1;
                    }
                    (ours, theirs) => {
                        panic!("Z={z} lane {l} {branching:?}: {ours:?} vs {theirs:?}")
                    }
                }
            }
        }
    }
    tally
}

#[test]
fn generated_quantities_match_the_interpreter_lane_by_lane() {
    let tally = check_lane_by_lane(MODEL, DATA, &[1, 7, 64], 7, 99);
    // The random inits exercise both the print and the reject paths.
    assert!(
        tally.failed > 0 && tally.printed > 0,
        "rejected {}, printed {}",
        tally.failed,
        tally.printed
    );
}

#[test]
fn batched_draws_are_the_interpreters_lane_by_lane() {
    let tally = check_lane_by_lane(DRAWS_MODEL, DRAWS_DATA, &[1, 5, 64], 11, 3);
    // The random parameters exercise both the failing and the running lanes.
    assert!(
        tally.failed > 0 && tally.ran > 0,
        "failed {}, ran {}",
        tally.failed,
        tally.ran
    );
}

#[test]
fn element_writes_of_a_viterbi_decoder_are_the_interpreters_lane_by_lane() {
    let tally = check_lane_by_lane(VITERBI_MODEL, VITERBI_DATA, &[1, 6, 64], 5, 17);
    // Some lanes write out of range (mu[1] > 2), the others decode.
    assert!(
        tally.failed > 0 && tally.ran > 0,
        "failed {}, ran {}",
        tally.failed,
        tally.ran
    );
}
