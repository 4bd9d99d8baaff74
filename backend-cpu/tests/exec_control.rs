//! Control flow under both executors: recursion (fibonacci, mutual
//! recursion) with different depths per lane, `while` loops with per-lane
//! trip counts, `break`/`continue`, nested loops, random draws — every
//! lane's draw equals the scalar CFG interpreter's (`generated_quantities_cfg`,
//! itself checked bit for bit against the structured interpreter) for that
//! lane's θ and random stream, for every executor setting and batch size.

use backend_cpu::exec::{BatchedModel, Batching, EarliestFirst, ExecConfig, MostWaiting};
use language::data::DataFile;
use language::value::Value;
use runtime::{Model, Rng};
use std::sync::Arc;

const CONTROL: &str = "
  functions {
    int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }
    int is_even(int n);
    int is_odd(int n) { if (n == 0) return 0; return is_even(n - 1); }
    int is_even(int n) { if (n == 0) return 1; return is_odd(n - 1); }
    real walk_rng(real x) {
      real s = x; int k = 0;
      while (1) {
        k += 1;
        if (k > 50) break;
        if (k % 3 == 0) continue;
        s += normal_rng(0, 1);
        if (s > 3) return s;
      }
      return -s;
    }
    int depth(int n) { if (n == 0) return 0; return 1 + depth(n - 1); }
  }
  data { int D; }
  parameters { real mu; }
  model { mu ~ normal(0, 1); }
  generated quantities {
    int k = poisson_rng(4);
    int f = fib(k);
    int e = is_even(k + poisson_rng(10)) || is_odd(fib(k % 5));
    real w = walk_rng(mu) + (e ? walk_rng(1) : 0);
    array[3, 4] real grid;
    for (i in 1:3) {
      int m = poisson_rng(2);
      for (j in 1:4) {
        if (j > m + 1) break;
        if (j == 2) continue;
        grid[i, j] = i * 10 + j + mu;
      }
    }
    int steps = 0;
    real s = mu;
    while (s < 4 && steps < 100) {
      s += exponential_rng(1);
      steps += 1;
    }
    int d = depth(D + poisson_rng(3));
  }";

fn model(source: &str, data: &str) -> (language::batch::cfg::Program, Model) {
    let (mir, diags) = language::compile_model(source, "control");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = language::batch::lower_generated_quantities(&mir).expect("lowers");
    let model = Model::new(&mir, &DataFile::parse(data).unwrap()).expect("data");
    (cfg, model)
}

fn configs() -> Vec<ExecConfig> {
    let mut out = Vec::new();
    for batching in [Batching::Local, Batching::ProgramCounter] {
        for (choice, gather_below) in [
            (
                Arc::new(EarliestFirst) as Arc<dyn backend_cpu::exec::BlockChoice>,
                0.0,
            ),
            (Arc::new(EarliestFirst), 1.1),
            (Arc::new(MostWaiting), 0.3),
        ] {
            out.push(ExecConfig {
                batching,
                choice,
                gather_below,
                ..ExecConfig::default()
            });
        }
    }
    out
}

fn thetas(z: usize) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(5, l as u32, 1);
            vec![4.0 * rng.uniform() - 2.0]
        })
        .collect()
}

fn rngs(z: usize) -> Vec<Rng> {
    (0..z).map(|l| Rng::new(2026, l as u32, 7)).collect()
}

/// Every lane of every setting equals the interpreter; returns the draws
/// (debug-printed) of the first setting.
fn check(source: &str, data: &str, z: usize) -> Vec<String> {
    let mut first = None;
    for config in configs() {
        let (cfg, m) = model(source, data);
        let batched = BatchedModel::new(cfg, m, config.clone()).unwrap();
        let th = thetas(z);
        let ours = batched.generated_quantities(&th, &rngs(z)).unwrap();
        let ours: Vec<String> = ours.iter().map(|d| format!("{d:?}")).collect();
        for (l, got) in ours.iter().enumerate() {
            let truth = batched.model().generated_quantities_cfg(
                batched.program(),
                &th[l],
                Rng::new(2026, l as u32, 7),
            );
            assert_eq!(got, &format!("{truth:?}"), "lane {l} of {z}, {config:?}");
        }
        first.get_or_insert(ours);
    }
    first.unwrap()
}

#[test]
fn recursion_loops_and_draws_match_the_interpreter_per_lane() {
    let draws = check(CONTROL, r#"{"D": 3}"#, 24);
    // The lanes really took different paths: recursion depths and loop
    // trip counts differ between lanes.
    let distinct: std::collections::BTreeSet<_> = draws.iter().collect();
    assert!(distinct.len() > 20, "{draws:?}");
}

#[test]
fn too_deep_recursion_fails_only_the_lanes_that_go_too_deep() {
    // D + poisson(3) crosses the interpreter's limit of nested calls
    // (MAX_CALL_DEPTH) in some lanes only.
    let data = format!(r#"{{"D": {}}}"#, runtime::MAX_CALL_DEPTH - 3);
    // The interpreter recurses on the host stack: give it room (debug).
    let draws = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let draws = check(CONTROL, &data, 16);
            // The structured interpreter stops the same lanes with the same
            // message (it also points at the call: the CFG keeps no span
            // for a call terminator).
            let (_, m) = model(CONTROL, &data);
            for (l, theta) in thetas(16).iter().enumerate() {
                let truth = m.generated_quantities(theta, Rng::new(2026, l as u32, 7));
                if let Err(e) = truth {
                    assert!(draws[l].contains(&format!("{:?}", e.message)), "lane {l}");
                } else {
                    assert!(draws[l].starts_with("Ok"), "lane {l}");
                }
            }
            draws
        })
        .unwrap()
        .join()
        .unwrap();
    let failed = draws
        .iter()
        .filter(|d| d.contains("recursion too deep"))
        .count();
    assert!(failed > 0 && failed < draws.len(), "{draws:?}");
    assert!(
        draws.iter().any(|d| d.contains("(in `depth`)")),
        "{draws:?}"
    );
}

#[test]
fn lane_results_do_not_depend_on_the_batch() {
    let small = check(CONTROL, r#"{"D": 2}"#, 7);
    for z in [1, 64] {
        let big = check(CONTROL, r#"{"D": 2}"#, z);
        let n = z.min(7);
        assert_eq!(big[..n], small[..n], "Z = {z}");
    }
    // Z = 1000 for one setting of each executor.
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let (cfg, m) = model(CONTROL, r#"{"D": 2}"#);
        let config = ExecConfig {
            batching,
            threads: 3,
            ..ExecConfig::default()
        };
        let batched = BatchedModel::new(cfg, m, config).unwrap();
        let big = batched
            .generated_quantities(&thetas(1000), &rngs(1000))
            .unwrap();
        let big: Vec<String> = big.iter().map(|d| format!("{d:?}")).collect();
        assert_eq!(big[..7], small[..], "{batching:?}");
        for l in [500, 999] {
            let truth = batched
                .model()
                .generated_quantities(&thetas(1000)[l], Rng::new(2026, l as u32, 7));
            assert_eq!(big[l], format!("{truth:?}"), "lane {l}");
        }
    }
}

fn fib(n: i64) -> i64 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

#[test]
fn run_function_gives_fibonacci_per_lane() {
    for config in configs() {
        let (cfg, m) = model(CONTROL, r#"{"D": 1}"#);
        let batched = BatchedModel::new(cfg, m, config.clone()).unwrap();
        let ns: Vec<i64> = (0..40).map(|l| (l * 7) % 17).collect();
        let args: Vec<Vec<Value>> = ns.iter().map(|&n| vec![Value::Int(n)]).collect();
        let out = batched.run_function("fib", &args, None).unwrap();
        for (n, got) in ns.iter().zip(out) {
            assert_eq!(
                got.unwrap(),
                Some(Value::Int(fib(*n))),
                "fib({n}) {config:?}"
            );
        }
        let out = batched.run_function("is_odd", &args, None).unwrap();
        for (n, got) in ns.iter().zip(out) {
            assert_eq!(got.unwrap(), Some(Value::Int(n % 2)), "is_odd({n})");
        }
        let limited = ExecConfig {
            max_depth: 5,
            ..config.clone()
        };
        let (cfg, m) = model(CONTROL, r#"{"D": 1}"#);
        let batched = BatchedModel::new(cfg, m, limited).unwrap();
        let out = batched.run_function("depth", &args, None).unwrap();
        for (n, got) in ns.iter().zip(out) {
            match got {
                Ok(v) => {
                    assert!(*n < 5, "depth({n}) ran past the limit");
                    assert_eq!(v, Some(Value::Int(*n)));
                }
                Err(e) => {
                    assert!(*n >= 5, "depth({n}): {e:?}");
                    assert_eq!(
                        e.message,
                        "recursion too deep: more than 5 nested calls of user functions (in `depth`)"
                    );
                }
            }
        }
    }
}

#[test]
fn deep_recursion_with_one_thread_runs_on_a_deep_stack_every_time() {
    // 20,000 nested calls (host recursion under local batching) need far
    // more than a test thread's stack: the batch must run on the model's
    // deep-stack thread, on every evaluation (that thread is kept).
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let config = ExecConfig {
            batching,
            threads: 1,
            max_depth: 30_000,
            ..ExecConfig::default()
        };
        let (cfg, m) = model(CONTROL, r#"{"D": 1}"#);
        let batched = BatchedModel::new(cfg, m, config).unwrap();
        let args = vec![vec![Value::Int(20_000)], vec![Value::Int(7)]];
        for _ in 0..2 {
            let out = batched.run_function("depth", &args, None).unwrap();
            assert_eq!(out[0].clone().unwrap(), Some(Value::Int(20_000)));
            assert_eq!(out[1].clone().unwrap(), Some(Value::Int(7)));
        }
    }
}

/// Vector arithmetic in a loop most lanes leave early: the late
/// iterations run for a few lanes of the batch, where the kernels compute
/// only the running lanes (`kernels::sparse_lanes`): elementwise maps of
/// one, two and three operands, in-place updates of temporaries, sums,
/// `dot_self` and `dot_product`; and `to_vector` of per-lane arrays,
/// matrices and row vectors (a reshape of the dense lanes).
const FEW_LANES: &str = "
  data { int D; }
  parameters { real mu; }
  model { mu ~ normal(0, 1); }
  generated quantities {
    vector[5] v = [1, 2, 3, 4, 5]' * 0.1 + mu;
    vector[5] w = rep_vector(0.5, 5);
    real acc = mu;
    int steps = 0;
    vector[4] drawn = to_vector(normal_rng(rep_vector(mu, 4), 1));
    vector[4] flat = to_vector([[mu, 2 * mu], [3, mu - 1]]);
    vector[2] row = to_vector([mu, -mu]);
    while (uniform_rng(0, 1) < 0.85 && steps < 60) {
      steps += 1;
      v = 1.5 - log1p(exp(v * 0.3) + w) / (1 + mu * mu);
      w = (v .* w + 0.01) / (1 + dot_self(v));
      acc = fma(acc, 0.5, dot_product(v, w) + sum(w) - sqrt(dot_self(v)));
    }
  }";

#[test]
fn vector_kernels_on_few_running_lanes_match_the_interpreter() {
    let draws = check(FEW_LANES, r#"{"D": 1}"#, 64);
    // Some lanes ran the loop long after fewer than a quarter of the
    // batch was left in it.
    let steps: Vec<i64> = draws
        .iter()
        .map(|d| {
            let at = d.find("steps").expect("steps in the draw");
            d[at..]
                .split(|c: char| !c.is_ascii_digit() && c != '-')
                .find_map(|t| t.parse().ok())
                .unwrap()
        })
        .collect();
    let mut sorted = steps.clone();
    sorted.sort_unstable();
    assert!(sorted[48] < sorted[63], "{steps:?}");
    assert!(sorted[63] >= 15, "{steps:?}");
}

/// Tuple locals split into component locals (`language::batch::sra`): a
/// recursive function whose first sub-result `a` is live across the second
/// recursive call (only its components 1 and 3, a nested tuple), returned
/// whole on one path and projected, with draws between the calls; a tuple
/// literal swapping a tuple's own components stays whole.
const TUPLE_LOCALS: &str = "
  functions {
    tuple(real, vector, tuple(int, real)) tree_rng(int d, vector x, real s) {
      if (d <= 0) {
        real u = normal_rng(s, 1);
        return (u, x * u, (1, u * u));
      }
      tuple(real, vector[rows(x)], tuple(int, real)) a
          = tree_rng(d - 1 - poisson_rng(1), x, s);
      if (a.1 > 1.5) {
        return a;
      }
      tuple(real, vector[rows(x)], tuple(int, real)) b = tree_rng(d - 1, a.2, a.1);
      tuple(int, real) c = a.3;
      c.2 += b.3.2;
      // A literal reading the variable it defines (kept whole).
      tuple(real, real) w = (a.1, 2 * s);
      w = (w.2, w.1);
      return (a.1 + b.1 + w.1 * w.2 + w.1, b.2 + a.2, (c.1 + b.3.1, c.2));
    }
  }
  data { int D; }
  parameters { real mu; }
  model { mu ~ normal(0, 1); }
  generated quantities {
    tuple(real, vector[2], tuple(int, real)) t
        = tree_rng(D + poisson_rng(2), [mu, 1]', mu);
    real first = t.1;
    int leaves = t.3.1;
    vector[2] v = t.2;
  }";

#[test]
fn split_tuple_locals_match_the_structured_interpreter_per_lane() {
    let (cfg, m) = model(TUPLE_LOCALS, r#"{"D": 3}"#);
    // The pass applied: `a` and its nested component are gone.
    let f = cfg.functions.iter().find(|f| f.name == "tree_rng").unwrap();
    let locals: Vec<&str> = f
        .locals
        .iter()
        .map(|v| cfg.mir.vars[v.0 as usize].name.as_str())
        .collect();
    assert!(
        locals.contains(&"a.3.1") && !locals.contains(&"a"),
        "{locals:?}"
    );
    let z = 24;
    let th = thetas(z);
    // Truth: the structured interpreter on the MIR (no CFG, no split).
    let truth: Vec<String> = th
        .iter()
        .enumerate()
        .map(|(l, theta)| {
            format!(
                "{:?}",
                m.generated_quantities(theta, Rng::new(2026, l as u32, 7))
            )
        })
        .collect();
    assert!(truth.iter().all(|t| t.starts_with("Ok")), "{truth:?}");
    let distinct: std::collections::BTreeSet<_> = truth.iter().collect();
    assert!(distinct.len() == z, "{truth:?}");
    for config in configs() {
        let (cfg, m) = model(TUPLE_LOCALS, r#"{"D": 3}"#);
        let batched = BatchedModel::new(cfg, m, config.clone()).unwrap();
        let ours = batched.generated_quantities(&th, &rngs(z)).unwrap();
        for (l, got) in ours.iter().enumerate() {
            assert_eq!(format!("{got:?}"), truth[l], "lane {l}, {config:?}");
        }
    }
}
