//! The CUDA device benchmark (`cargo bench --bench cuda`): for
//! each benchmark problem and chain count, on device 0,
//!
//! - gradient evaluations per second: the model's gradient program
//!   ([`GradientDevice`], what `bat run --backend cuda` loads) evaluating
//!   all lanes together at Stan-style random points, again and again;
//! - ESS/s: `bat run --backend cuda`'s sampler on the device
//!   ([`CudaSamplerExecutor`]) on that same gradient device, its draws
//!   written and summarised as `bat summary` does: the smallest ESS_bulk
//!   over the parameters per second of sampling (compilation excluded);
//! - the fraction of the device's peak memory bandwidth the gradient
//!   evaluations reach, from the traffic model of [`traffic`].
//!
//! Without a GPU it prints `skipped: <reason>`. `BAT_BENCH_ALLOW_STUB=1`
//! runs it on the tests' stub driver (kernels on the CPU) to exercise the
//! whole path; the output then says its figures are not GPU speeds.

pub mod traffic;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use backend_cuda::gradient::GradientDevice;
use backend_cuda::stub::STUB_DEVICE_NAME;
use language::data::DataFile;
use runtime::{Model, Rng};

use crate::sampler::cuda::{CudaSamplerExecutor, gradient_device};
use crate::sampler::{ChainJob, Settings};

/// A benchmark problem of the issue: an example model with its data.
pub struct Problem {
    pub name: &'static str,
    /// `examples/NAME.bat` with `examples/NAME.data.json`.
    pub example: &'static str,
}

/// Logistic regression N = 10,000, D = 100; the 100-d correlated
/// Gaussian; eight schools, non-centered.
pub const PROBLEMS: &[Problem] = &[
    Problem {
        name: "logistic",
        example: "logistic_regression",
    },
    Problem {
        name: "gaussian_100",
        example: "correlated_gaussian_100",
    },
    Problem {
        name: "eight_schools",
        example: "eight_schools_noncentered",
    },
];

/// What to run (environment variables in [`BenchSettings::from_env`]).
#[derive(Clone, Debug)]
pub struct BenchSettings {
    /// Names of [`PROBLEMS`] to run.
    pub problems: Vec<String>,
    pub chains: Vec<usize>,
    pub warmup: usize,
    pub samples: usize,
    /// Seconds of repeated gradient evaluations per row.
    pub gradient_seconds: f64,
    /// Run on the tests' stub driver rather than skip.
    pub allow_stub: bool,
    /// Where the problems' models and data are.
    pub examples: PathBuf,
    /// Where the draws files go (removed after each row).
    pub scratch: PathBuf,
}

impl BenchSettings {
    /// `BAT_BENCH_PROBLEMS` (default `logistic,gaussian_100,eight_schools`),
    /// `BAT_BENCH_CHAINS` (default `1,1024,16384`), `BAT_BENCH_WARMUP` and
    /// `BAT_BENCH_SAMPLES` (default 200 each), `BAT_BENCH_SECONDS`
    /// (default 2), `BAT_BENCH_ALLOW_STUB=1`.
    pub fn from_env(examples: PathBuf, scratch: PathBuf) -> Result<BenchSettings, String> {
        let var =
            |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_string());
        fn number<T: std::str::FromStr>(name: &str, text: &str) -> Result<T, String> {
            text.trim()
                .parse()
                .map_err(|_| format!("{name}: `{text}` is not a number"))
        }
        let list = |name: &str, default: &str| -> Vec<String> {
            var(name, default)
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        let problems = list("BAT_BENCH_PROBLEMS", "logistic,gaussian_100,eight_schools");
        if let Some(unknown) = problems
            .iter()
            .find(|p| !PROBLEMS.iter().any(|known| known.name == p.as_str()))
        {
            return Err(format!(
                "BAT_BENCH_PROBLEMS: unknown problem `{unknown}` (known: logistic, gaussian_100, eight_schools)"
            ));
        }
        let chains = list("BAT_BENCH_CHAINS", "1,1024,16384")
            .iter()
            .map(|c| number("BAT_BENCH_CHAINS", c))
            .collect::<Result<Vec<usize>, String>>()?;
        if chains.contains(&0) {
            return Err("BAT_BENCH_CHAINS: chain counts must be positive".to_string());
        }
        Ok(BenchSettings {
            problems,
            chains,
            warmup: number("BAT_BENCH_WARMUP", &var("BAT_BENCH_WARMUP", "200"))?,
            samples: number("BAT_BENCH_SAMPLES", &var("BAT_BENCH_SAMPLES", "200"))?,
            gradient_seconds: number("BAT_BENCH_SECONDS", &var("BAT_BENCH_SECONDS", "2"))?,
            allow_stub: var("BAT_BENCH_ALLOW_STUB", "0") == "1",
            examples,
            scratch,
        })
    }
}

/// The columns of a row of the table, in order.
pub const COLUMNS: [&str; 9] = [
    "problem",
    "chains",
    "grad evals/s",
    "B/eval",
    "bandwidth %",
    "sampling s",
    "grads",
    "min ESS_bulk",
    "ESS/s",
];

/// Run the benchmark, writing its table to `out`. Without a device (or on
/// the stub without `allow_stub`) writes `skipped: <reason>`.
pub fn run(settings: &BenchSettings, out: &mut dyn Write) -> io::Result<()> {
    let info = match backend_cuda::probe() {
        Ok(info) => info,
        Err(why) => return writeln!(out, "skipped: {why}"),
    };
    let stub = info.name == STUB_DEVICE_NAME;
    if stub && !settings.allow_stub {
        return writeln!(
            out,
            "skipped: `{}` is the stub driver of the tests, not a GPU (BAT_BENCH_ALLOW_STUB=1 runs on it anyway)",
            info.name
        );
    }
    writeln!(
        out,
        "device: {} (compute capability {}.{})",
        info.name, info.compute_capability.0, info.compute_capability.1
    )?;
    if stub {
        writeln!(
            out,
            "STUB DRIVER (BAT_BENCH_ALLOW_STUB=1): kernels run on the CPU through the shim; \
             the figures below exercise the benchmark and are not GPU speeds"
        )?;
    }
    let peak = info.peak_memory_bandwidth();
    match peak {
        Some(peak) => writeln!(
            out,
            "peak memory bandwidth {:.1} GB/s (2 x {} MHz memory clock x {}-bit bus)",
            peak / 1e9,
            info.memory_clock_khz / 1000,
            info.memory_bus_bits
        )?,
        None => writeln!(
            out,
            "peak memory bandwidth unknown (the driver reports no memory clock or bus width)"
        )?,
    }
    writeln!(out, "{}", traffic::EXPLANATION)?;
    writeln!(
        out,
        "NUTS: {} warmup + {} sampling iterations per chain, sampler and gradients on the device; \
         ESS/s = min ESS_bulk over parameters / sampling s",
        settings.warmup, settings.samples
    )?;
    writeln!(out, "{}", header())?;
    std::fs::create_dir_all(&settings.scratch)?;
    for problem in PROBLEMS
        .iter()
        .filter(|p| settings.problems.iter().any(|n| n == p.name))
    {
        run_problem(problem, settings, peak, out)?;
    }
    Ok(())
}

fn header() -> String {
    let c = COLUMNS;
    format!(
        "{:<14} {:>6} {:>13} {:>11} {:>12} {:>11} {:>11} {:>12} {:>10}",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]
    )
}

/// A problem compiled for the host.
struct Loaded {
    model: Model,
    grad: language::mir::GradProgram,
}

fn load(problem: &Problem, examples: &Path) -> Result<Loaded, String> {
    let path = examples.join(format!("{}.bat", problem.example));
    let data_path = path.with_extension("data.json");
    let data_text = std::fs::read_to_string(&data_path)
        .map_err(|_| format!("no {} (run scripts/setup.sh)", data_path.display()))?;
    let source = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (program, diagnostics) = language::compile_model(&source, problem.example);
    let program = program.ok_or_else(|| format!("does not compile: {diagnostics:?}"))?;
    let data = DataFile::parse(&data_text).map_err(|e| format!("data: {e}"))?;
    let model = Model::new(&program, &data).map_err(|e| format!("data: {e}"))?;
    let grad = language::ad::gradient(&program).map_err(|d| format!("AD: {d:?}"))?;
    Ok(Loaded { model, grad })
}

fn run_problem(
    problem: &Problem,
    settings: &BenchSettings,
    peak: Option<f64>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let loaded = match load(problem, &settings.examples) {
        Ok(loaded) => loaded,
        Err(why) => return writeln!(out, "{:<14} skipped: {why}", problem.name),
    };
    for &chains in &settings.chains {
        match measure(&loaded, chains, settings) {
            Ok(row) => {
                let bandwidth = peak
                    .map(|peak| {
                        100.0 * row.bytes_per_evaluation * row.evaluations_per_second / peak
                    })
                    .unwrap_or(f64::NAN);
                writeln!(
                    out,
                    "{:<14} {:>6} {:>13.0} {:>11.0} {:>12.4} {:>11.3} {:>11} {:>12.1} {:>10.2}",
                    problem.name,
                    chains,
                    row.evaluations_per_second,
                    row.bytes_per_evaluation,
                    bandwidth,
                    row.sampling_seconds,
                    row.gradient_evaluations,
                    row.min_ess_bulk,
                    row.min_ess_bulk / row.sampling_seconds
                )?;
            }
            Err(why) => writeln!(out, "{:<14} {chains:>6} failed: {why}", problem.name)?,
        }
        out.flush()?;
    }
    Ok(())
}

/// One row's measurements.
struct Row {
    evaluations_per_second: f64,
    bytes_per_evaluation: f64,
    sampling_seconds: f64,
    gradient_evaluations: u64,
    min_ess_bulk: f64,
}

fn measure(loaded: &Loaded, chains: usize, settings: &BenchSettings) -> Result<Row, String> {
    let sampler_settings = Settings::stan_defaults(settings.warmup, settings.samples, 20240601);
    let job = ChainJob {
        model: &loaded.model,
        grad: &loaded.grad,
        settings: &sampler_settings,
    };
    let mut device = gradient_device(&job, chains).map_err(|e| e.to_string())?;
    let (evaluations_per_second, bytes_per_evaluation) =
        gradient_rate(&mut device, settings.gradient_seconds)?;
    let executor = CudaSamplerExecutor::with_gradients(device, job.settings.metric)
        .map_err(|e| e.to_string())?;
    // `bat run --backend cuda`'s sampling, draws written and summarised.
    let output = settings.scratch.join(format!(
        "{}-{chains}-{}.h5",
        job.model.program().name,
        std::process::id()
    ));
    let measured = crate::measure::sample(&job, &executor, chains, &output);
    let _ = std::fs::remove_file(&output);
    let measured = measured?;
    Ok(Row {
        evaluations_per_second,
        bytes_per_evaluation,
        sampling_seconds: measured.wall,
        gradient_evaluations: measured.report.gradient_evaluations,
        min_ess_bulk: measured.min_ess_bulk,
    })
}

/// All lanes evaluated together at uniform(−2, 2) points (Stan's inits)
/// for about `seconds`: (lane evaluations per second, modelled bytes per
/// lane evaluation).
fn gradient_rate(device: &mut GradientDevice, seconds: f64) -> Result<(f64, f64), String> {
    let lanes = device.lanes();
    let n = device.model().num_unconstrained();
    let thetas: Vec<Vec<f64>> = (0..lanes)
        .map(|lane| {
            let mut rng = Rng::new(1, lane as u32, 0);
            (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect();
    let evaluate = |device: &mut GradientDevice| {
        device
            .log_density_gradient(&thetas, true)
            .map_err(|e| e.to_string())
    };
    // Warm up (module load, first launches, AD stacks grown), then measure.
    evaluate(device)?;
    let started = Instant::now();
    let mut batches = 0usize;
    while batches == 0 || started.elapsed().as_secs_f64() < seconds {
        evaluate(device)?;
        batches += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let bytes = traffic::bytes_per_lane_evaluation(&device.program().layout, lanes);
    Ok(((lanes * batches) as f64 / elapsed, bytes))
}
