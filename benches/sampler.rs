//! `cargo bench --bench sampler`: `bat run`'s sampler end to end (NUTS as
//! a batched program, the model's batched gradient, the HDF5 draws file),
//! for the three benchmark problems — eight schools
//! (non-centered), a 100-dimensional correlated Gaussian and the N = 10,000,
//! D = 100 logistic regression (run `scripts/setup.sh` first: it generates
//! that data set) — over several chain counts, with program-counter (`pc`)
//! and local static (`local`) batching. Prints a table:
//!
//! - wall: seconds for the whole run (warmup + sampling + writing);
//! - grads: gradient evaluations of all chains (all useful: every batched
//!   call evaluates exactly the chains waiting for a gradient);
//! - grad/s: grads ÷ wall;
//! - util: utilization, useful ÷ lane slots executed in the
//!   gradient program's blocks (each call runs exactly the chains that
//!   asked; lanes that fail or leave a loop of the model early waste
//!   slots);
//! - full: how full the batched gradient calls were on average, grads ÷
//!   (batched calls × chains per sub-batch) (chains that finished early
//!   or wait elsewhere leave slots empty);
//! - min ESS_bulk and min ESS_bulk ÷ wall over the posterior quantities.
//!
//! Settings (environment): `BAT_BENCH_WARMUP` / `BAT_BENCH_SAMPLES`
//! (default 200 each; Stan's 1000 each takes much longer here),
//! `BAT_BENCH_CHAINS` (default `1,4,64,1024`), `BAT_BENCH_PROBLEMS`
//! (default `eight_schools,gaussian_100,logistic`), `BAT_BENCH_BATCHING`
//! (default `pc,local,native`; `native` is `bat run --backend native`, the
//! sampler and gradient programs compiled with g++, whose chains meet at
//! gradients in groups of 16 lanes), `BAT_BENCH_THREADS` (default 0: all
//! cores),
//! `BAT_BENCH_SEED` (default 20240601; ESS varies with the seed by a few
//! percent, so compare binaries at one seed and targets over several),
//! `BAT_BENCH_LANE_SHARE` (lanes ÷ chains, default 1; below 1 a lane runs
//! several chains one after another, `bat run --lanes`). The
//! logistic regression runs at most 64 chains unless `BAT_BENCH_FULL=1`
//! (1024 of its chains take hours on a 2-core machine).

use bat::sampler::native::NativeExecutor;
use bat::sampler::{BatchedExecutor, ChainJob, SamplerExecutor, Settings};
use language::data::DataFile;
use runtime::Model;
use std::path::Path;

struct Problem {
    name: &'static str,
    model: &'static str,
    data: &'static str,
    /// Chain counts above this need `BAT_BENCH_FULL=1`.
    max_chains: usize,
}

const PROBLEMS: &[Problem] = &[
    Problem {
        name: "eight_schools",
        model: "eight_schools_noncentered.bat",
        data: "eight_schools_noncentered.data.json",
        max_chains: usize::MAX,
    },
    Problem {
        name: "gaussian_100",
        model: "correlated_gaussian_100.bat",
        data: "correlated_gaussian_100.data.json",
        max_chains: usize::MAX,
    },
    Problem {
        name: "logistic",
        model: "logistic_regression.bat",
        data: "logistic_regression.data.json",
        max_chains: 64,
    },
];

/// The allocator `bat run` uses (src/main.rs), so that the figures are
/// those of `bat run`.
#[global_allocator]
static ALLOCATOR: bat::allocator::MiMalloc = bat::allocator::MiMalloc;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn list(name: &str, default: &str) -> Vec<String> {
    env_or(name, default)
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    bat::allocator::configure();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let warmup = number("BAT_BENCH_WARMUP", 200);
    let samples = number("BAT_BENCH_SAMPLES", 200);
    let threads = number("BAT_BENCH_THREADS", 0);
    let seed = number("BAT_BENCH_SEED", 20240601) as u64;
    // Lanes of the batch as a share of the chains (`bat run --lanes`):
    // 1 = one lane per chain; 0.25 = a quarter as many lanes, each running
    // about four chains one after the other (pc batching only).
    let lane_share: f64 = env_or("BAT_BENCH_LANE_SHARE", "1")
        .parse()
        .expect("BAT_BENCH_LANE_SHARE: a number in (0, 1]");
    let full = env_or("BAT_BENCH_FULL", "0") == "1";
    let chain_counts: Vec<usize> = list("BAT_BENCH_CHAINS", "1,4,64,1024")
        .iter()
        .filter_map(|c| c.parse().ok())
        .collect();
    let problems = list("BAT_BENCH_PROBLEMS", "eight_schools,gaussian_100,logistic");
    let batchings = list("BAT_BENCH_BATCHING", "pc,local,native");
    let dir = std::env::temp_dir().join(format!("bat-bench-sampler-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    println!(
        "bat run, NUTS: {warmup} warmup + {samples} sampling iterations per chain, seed {seed}, threads {}",
        if threads == 0 {
            "all cores".to_string()
        } else {
            threads.to_string()
        }
    );
    println!(
        "{:<14} {:>6} {:>6} {:>9} {:>11} {:>11} {:>6} {:>6} {:>10} {:>10}",
        "problem",
        "batch",
        "chains",
        "wall s",
        "grads",
        "grad/s",
        "util",
        "full",
        "min ESS",
        "ESS/s"
    );
    for problem in PROBLEMS
        .iter()
        .filter(|p| problems.iter().any(|n| n == p.name))
    {
        let source = std::fs::read_to_string(examples.join(problem.model)).expect("example model");
        let Ok(data_text) = std::fs::read_to_string(examples.join(problem.data)) else {
            println!("{:<14} missing data (run scripts/setup.sh)", problem.name);
            continue;
        };
        let (program, diagnostics) = language::compile_model(&source, problem.name);
        let program = program.unwrap_or_else(|| panic!("{}: {diagnostics:?}", problem.model));
        let data = DataFile::parse(&data_text).expect("example data");
        let model = Model::new(&program, &data).expect("the data fit the model");
        let grad = language::ad::gradient(&program).expect("the model differentiates");
        for name in &batchings {
            let batching = match name.as_str() {
                "pc" | "native" => backend_cpu::exec::Batching::ProgramCounter,
                "local" => backend_cpu::exec::Batching::Local,
                other => panic!("BAT_BENCH_BATCHING: unknown `{other}`"),
            };
            for &chains in &chain_counts {
                if chains > problem.max_chains && !full {
                    continue;
                }
                let settings = Settings::stan_defaults(warmup, samples, seed);
                let output = dir.join(format!("{}-{name}-{chains}.h5", problem.name));
                let job = ChainJob {
                    model: &model,
                    grad: &grad,
                    settings: &settings,
                };
                let executor: Box<dyn SamplerExecutor> = if name == "native" {
                    // Compiled (or taken from the cache) before the clock starts.
                    Box::new(NativeExecutor::new(&job, threads).expect("the native backend"))
                } else {
                    Box::new(BatchedExecutor {
                        batching,
                        threads,
                        gemm: true,
                        lanes: ((chains as f64 * lane_share).ceil() as usize).max(1),
                    })
                };
                let m = bat::measure::sample(&job, executor.as_ref(), chains, &output)
                    .unwrap_or_else(|e| panic!("{}: {e}", problem.name));
                let _ = std::fs::remove_file(&output);
                let grads = m.report.gradient_evaluations;
                println!(
                    "{:<14} {:>6} {:>6} {:>9.2} {:>11} {:>11.0} {:>5.0}% {:>5.0}% {:>10.0} {:>10.1}",
                    problem.name,
                    name,
                    chains,
                    m.wall,
                    grads,
                    grads as f64 / m.wall,
                    100.0 * m.report.batches.utilization().unwrap_or(f64::NAN),
                    100.0 * m.report.batches.fullness().unwrap_or(f64::NAN),
                    m.min_ess_bulk,
                    m.min_ess_bulk / m.wall,
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
