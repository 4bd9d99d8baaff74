//! Loops over data whose iterations the program-counter executor runs as
//! lanes of one batch (small batches): every lane's log density, gradient
//! or error equals the structured interpreter's bit for bit — with several
//! `target +=` per iteration, accumulations into an adjoint indexed by
//! data, iterations split into chunks, chains failing at different
//! iterations (the error of the earliest is reported), a loop that
//! carries a value between iterations (run as it is), and batches too
//! wide to run loops as lanes.

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use language::data::DataFile;
use runtime::{Model, Rng};

const MODEL: &str = "
  data {
    int<lower=0> N;
    vector[N] y;
    vector[N] x;
    array[N] int<lower=1, upper=3> g;
  }
  parameters {
    real mu;
    real<lower=0> sigma;
    vector[3] b;
    real c;
  }
  model {
    mu ~ normal(0, 1);
    b ~ normal(0, 1);
    c ~ normal(0, 1);
    for (n in 1:N) {
      real r = (y[n] - mu - b[g[n]]) / sigma;
      target += -0.5 * square(r);
      target += -log(sigma);
    }
    // The scale reaches zero at an iteration that depends on c: chains
    // with c below 0 fail at their own iteration.
    for (n in 1:N) {
      target += log_mix(0.3, normal_lpdf(y[n] | mu, sigma), normal_lpdf(y[n] | b[1], 1 + c * x[n]));
    }
    // An inner loop in the body (the reverse sweep saves and restores
    // `m` on AD stacks within each iteration).
    for (t in 3:N) {
      real m = c;
      for (k in 1:2) {
        m = m + b[k] * y[t - k];
      }
      target += normal_lpdf(y[t] | m, sigma);
    }
    real last = 0;
    int after = 0;
    for (n in 1:N) {
      last = y[n] * mu;
      after = n;
    }
    target += last + after;
  }";

/// N points: y from a fixed stream, x rising from 0 to 3, groups 1..3.
fn data(n: usize) -> DataFile {
    let mut rng = Rng::new(11, 0, 0);
    let y: Vec<String> = (0..n)
        .map(|_| format!("{}", 4.0 * rng.uniform() - 2.0))
        .collect();
    let x: Vec<String> = (0..n)
        .map(|i| format!("{}", 3.0 * i as f64 / n as f64))
        .collect();
    let g: Vec<String> = (0..n).map(|i| format!("{}", 1 + i % 3)).collect();
    let json = format!(
        r#"{{"N": {n}, "y": [{}], "x": [{}], "g": [{}]}}"#,
        y.join(","),
        x.join(","),
        g.join(",")
    );
    DataFile::parse(&json).unwrap()
}

fn thetas(z: usize, seed: u64) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(seed, l as u32, 0);
            (0..6).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect()
}

#[test]
fn loops_over_data_run_as_lanes_equal_the_interpreter() {
    let program = language::compile_model(MODEL, "loops").0.unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    // 1000 points of 5 chains: at most 4096 lanes at once, so chunks of
    // iterations. 70 chains run the loops as they are.
    for (n, sizes) in [(2, &[1, 3][..]), (40, &[1, 3, 5, 70]), (1000, &[5])] {
        let data = data(n);
        let config = ExecConfig {
            batching: Batching::ProgramCounter,
            ..ExecConfig::default()
        };
        let model = Model::new(&program, &data).unwrap();
        let batched = BatchedModel::new(cfg.clone(), model, config).unwrap();
        // Forward and reverse loops of the first three source loops (the
        // last carries `last` and `after` from one iteration to the next).
        assert_eq!(batched.loops_run_as_lanes(), 6);
        let model = batched.model();
        let mut failures = 0;
        for &z in sizes {
            let th = thetas(z, 3 + z as u64);
            for jacobian in [true, false] {
                let ours = batched.log_density_gradient(&th, jacobian).unwrap();
                for (l, got) in ours.iter().enumerate() {
                    let truth = model.log_density_gradient(&g, &th[l], jacobian);
                    let at = format!("N={n} Z={z} lane {l} jacobian={jacobian}");
                    match (got, &truth) {
                        (Ok((lp, grad)), Ok((lp0, grad0))) => {
                            assert_eq!(lp.to_bits(), lp0.to_bits(), "{at}: lp {lp} != {lp0}");
                            for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                                assert_eq!(
                                    a.to_bits(),
                                    b.to_bits(),
                                    "{at}: gradient[{k}] {a} != {b}"
                                );
                            }
                        }
                        (Err(a), Err(b)) => {
                            failures += 1;
                            assert_eq!(
                                (&a.message, a.span, a.kind),
                                (&b.message, b.span, b.kind),
                                "{at}"
                            );
                        }
                        (a, b) => panic!("{at}: {a:?} but the interpreter: {b:?}"),
                    }
                }
            }
        }
        if n > 2 {
            assert!(
                failures > 0,
                "N={n}: no chain failed; the test lost its failing iterations"
            );
        }
    }
}
