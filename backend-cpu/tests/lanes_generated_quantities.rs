//! Generated quantities run batched — random draws from each lane's own
//! counter-based stream, `print`, `reject`, `while`/`for` with per-lane
//! trip counts, `break`/`continue`, tuples, int and real locals — give
//! each lane exactly the values, printed output and errors of the
//! interpreter's `Model::generated_quantities` for that lane.

use backend_cpu::lanes::{LaneStatus, Lanes, Slot, State};
use backend_cpu::structured::{self, Branching};
use language::data::DataFile;
use language::interp::{Model, Rng};
use language::mir::{Origin, StmtKind};
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

#[test]
fn generated_quantities_match_the_interpreter_lane_by_lane() {
    let program = language::compile_model(MODEL, "gq").0.expect("compiles");
    let data = DataFile::parse(DATA).unwrap();
    let model = Model::new(&program, &data).unwrap();
    let n = model.num_unconstrained();
    let seed = 7;
    let (mut rejected, mut printed) = (0, 0);
    for z in [1, 7, 64] {
        let thetas: Vec<Vec<f64>> = (0..z)
            .map(|l| {
                let mut rng = Rng::new(99, l as u32, 0);
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
            structured::run(&program.transformed_parameters, &mut st, &all, branching).unwrap();
            structured::run(&program.generated_quantities, &mut st, &all, branching).unwrap();
            for (l, th) in thetas.iter().enumerate() {
                let truth = model.generated_quantities(th, Rng::new(seed, l as u32, 0));
                match (&st.status[l], truth) {
                    (LaneStatus::Running, Ok(draw)) => {
                        assert_eq!(st.output[l], draw.output, "lane {l} output");
                        printed += usize::from(!draw.output.is_empty());
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
                        assert_eq!(ours, &theirs, "Z={z} lane {l}");
                        rejected += 1;
                    }
                    (ours, theirs) => {
                        panic!("Z={z} lane {l} {branching:?}: {ours:?} vs {theirs:?}")
                    }
                }
            }
        }
    }
    // The random inits exercise both the print and the reject paths.
    assert!(
        rejected > 0 && printed > 0,
        "rejected {rejected}, printed {printed}"
    );
}
