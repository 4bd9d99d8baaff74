//! The op profile (`exec::profile`, `BAT_PROFILE_OPS=1`): every op a
//! batched run executes is counted once per run with its running lanes
//! and batch width, labelled by its printed form. (Its own test binary:
//! turning the profile on is process-wide.)

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig, profile};
use language::data::DataFile;
use runtime::{Model, Rng};

/// Straight-line model: every statement runs once per evaluation.
const STRAIGHT: &str = r#"
data { int N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model {
  mu ~ normal(0, 5);
  y ~ normal(mu, sigma);
}
"#;

/// A recursive function: the PC program saves and restores around its
/// calls and passes arguments and results.
const RECURSIVE: &str = r#"
functions {
  real twice(real x, int k) {
    if (k == 0) {
      return x;
    }
    return 2 * twice(x, k - 1);
  }
}
parameters { real mu; }
model {
  target += -0.5 * square(twice(mu, 3));
}
"#;

fn batched(source: &str, data: &str, batching: Batching) -> (BatchedModel, usize) {
    let program = match language::compile_model(source, "profiled") {
        (Some(p), _) => p,
        (None, ds) => panic!("does not compile: {}", ds[0].message),
    };
    let data = DataFile::parse(data).unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    let model = Model::new(&program, &data).unwrap();
    let n = model.num_unconstrained();
    let config = ExecConfig {
        batching,
        threads: 1,
        ..ExecConfig::default()
    };
    (BatchedModel::new(cfg, model, config).unwrap(), n)
}

/// The profile is process-wide: one test at a time uses it.
static PROFILE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn thetas(n: usize, z: usize) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(5, l as u32, 0);
            (0..n).map(|_| rng.uniform() - 0.5).collect()
        })
        .collect()
}

#[test]
fn the_profile_counts_every_op_run_with_its_lanes() {
    let _one = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
    let data = r#"{"N": 3, "y": [0.5, -1.0, 2.0]}"#;
    let (model, n) = batched(STRAIGHT, data, Batching::ProgramCounter);
    let z = 6;
    profile::set_enabled(false);
    model.log_density_gradient(&thetas(n, z), true).unwrap();
    assert!(profile::take().is_empty(), "nothing timed while off");

    profile::set_enabled(true);
    for _ in 0..2 {
        model.log_density_gradient(&thetas(n, z), true).unwrap();
    }
    let entries = profile::take();
    profile::set_enabled(false);
    assert!(entries.len() > 3, "{entries:?}");
    for e in &entries {
        assert_eq!(e.runs, 2, "{}: straight-line, two evaluations", e.label);
        assert_eq!(
            (e.lanes, e.width),
            (2 * z as u64, 2 * z as u64),
            "{}",
            e.label
        );
    }
    assert!(
        entries.iter().any(|e| e.label.contains("target +=")),
        "{entries:?}"
    );
    assert!(
        entries.windows(2).all(|w| w[0].time >= w[1].time),
        "costliest first"
    );
    let table = profile::report(&entries, 5);
    assert_eq!(table.lines().count(), 2 + 5, "{table}");
    assert!(profile::take().is_empty(), "taking clears the totals");
}

#[test]
fn calls_show_as_their_pushes_pops_arguments_and_results() {
    let _one = PROFILE.lock().unwrap_or_else(|e| e.into_inner());
    let (model, n) = batched(RECURSIVE, "{}", Batching::ProgramCounter);
    profile::take();
    profile::set_enabled(true);
    model.log_density_gradient(&thetas(n, 4), true).unwrap();
    let entries = profile::take();
    profile::set_enabled(false);
    let runs = |prefix: &str| -> u64 {
        entries
            .iter()
            .filter(|e| e.label.starts_with(prefix))
            .map(|e| e.runs)
            .sum()
    };
    // `twice` is called once from the model and recurses three times
    // (lanes at every depth run together): its argument ops and its
    // result run at every depth.
    assert!(runs("arg ") >= 4, "{entries:?}");
    assert!(runs("result ") >= 4, "{entries:?}");
    assert_eq!(runs("push "), runs("pop "), "{entries:?}");
}
