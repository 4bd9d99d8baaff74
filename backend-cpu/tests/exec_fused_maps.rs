//! `inv_logit(-x)` and `log_inv_logit(-x)` run as one pass over `x`
//! (`eval::kernels::map_negated`) when `x` is dense, and as a negation
//! then the map otherwise. Every form — a dense temporary (rewritten in
//! place), a dense variable (copied), a per-lane scalar, shared data (the
//! fallback) — must give each lane exactly the interpreter's log density
//! and gradient, through both executors.

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use language::data::DataFile;
use language::interp::{Model, Rng};

const SOURCE: &str = r#"
data {
  int N;
  vector[N] xd;
  array[N] int k;
}
parameters {
  real a;
  vector[N] v;
}
model {
  vector[N] w = v .* xd;
  target += sum(inv_logit(-w));
  target += sum(log_inv_logit(-w));
  target += sum(inv_logit(-(v + a)));
  target += sum(log_inv_logit(-(xd * a)));
  target += inv_logit(-a) + log_inv_logit(-a);
  target += sum(inv_logit(-xd)) * a;
  target += sum(log_inv_logit(-to_vector(k))) * a;
  // Shared per iteration (not hoisted): the negate-then-map fallback.
  for (i in 1:N) {
    target += (inv_logit(-xd[i]) + log_inv_logit(-k[i])) * a;
  }
  v ~ normal(0, 2);
}
"#;

const DATA: &str = r#"{"N": 5, "xd": [0.5, -1.0, 2.0, 0.25, -40.0], "k": [1, 0, -3, 2, 800]}"#;

#[test]
fn negated_logistic_maps_match_the_interpreter_lane_by_lane() {
    let program = match language::compile_model(SOURCE, "fused") {
        (Some(p), _) => p,
        (None, ds) => panic!("does not compile: {}", ds[0].message),
    };
    let data = DataFile::parse(DATA).unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    let z = 9;
    let th: Vec<Vec<f64>> = (0..z)
        .map(|l| {
            let mut rng = Rng::new(4242, l as u32, 0);
            // Wide enough to reach both tails of the logistic.
            (0..6).map(|_| 60.0 * rng.uniform() - 30.0).collect()
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
            assert_eq!(lp.to_bits(), lp0.to_bits(), "{batching:?} lane {l}: lp");
            for (k, (a, b)) in grad.iter().zip(&grad0).enumerate() {
                assert_eq!(a.to_bits(), b.to_bits(), "{batching:?} lane {l}: grad[{k}]");
            }
        }
    }
}
