//! `bat bench`: how many log-density gradient evaluations per second the
//! batched CPU executor (or, with `--backend native`, the gradient program
//! compiled to machine code: [`backend_native::gradient`]) does on a user's
//! model, per number of chains (lanes of one batch), at random inits
//! (uniform(−2, 2) unconstrained, as Stan's).

use super::model::{self, Reported};
use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use backend_native::gradient::NativeGradient;
use rayon::prelude::*;
use runtime::Rng;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub struct Options<'a> {
    pub file: &'a Path,
    pub data: Option<&'a Path>,
    pub chains: &'a [usize],
    pub batching: &'a [Batching],
    pub threads: usize,
    pub backend: Backend,
    /// Time spent measuring each chain count, at least one evaluation.
    pub seconds: f64,
    pub json: bool,
    pub color: bool,
}

/// The inits the batches cycle through: uniform(−2, 2) per coordinate, each
/// lane of each set from its own stream, as `[coordinate][lane]` columns
/// (the layout the sampler hands its gradient batches in). Repeating one
/// point would time ODE solves remembered from the previous batch (see
/// [`runtime::ODE_MEMO_CAPACITY`]) instead of real ones, so the
/// cycle holds more points per thread than a thread remembers.
fn init_sets(n: usize, chains: usize, threads: usize) -> Vec<Vec<f64>> {
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let per_thread = chains.div_ceil(threads).max(1);
    let count = (2 * runtime::ODE_MEMO_CAPACITY / per_thread + 1).max(2);
    (0..count)
        .map(|set| {
            let mut columns = vec![0.0; n * chains];
            for lane in 0..chains {
                let mut rng = Rng::new(20261122, lane as u32, set as u64);
                for k in 0..n {
                    columns[k * chains + lane] = 4.0 * rng.uniform() - 2.0;
                }
            }
            columns
        })
        .collect()
}

/// What evaluates the gradients.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// As `bat run`: `native` where g++ is present and has code for every
    /// op of the model, else `cpu` (said once, with the reason).
    Auto,
    /// backend-cpu's batched executors.
    Cpu,
    /// The generated code compiled with g++, lane by lane.
    Native,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Cpu => "cpu",
            Backend::Native => "native",
        }
    }
}

/// One measurement.
struct Row {
    chains: usize,
    backend: Backend,
    batching: Batching,
    threads: usize,
    batches: usize,
    seconds: f64,
    /// Lanes whose evaluation failed at the first set of inits (e.g. a
    /// domain error).
    failed_lanes: usize,
}

impl Row {
    fn grad_evals_per_s(&self) -> f64 {
        (self.chains * self.batches) as f64 / self.seconds
    }
}

pub fn run(opts: &Options) -> ExitCode {
    let measured = measure(opts);
    super::run::print_op_profile();
    match measured {
        Ok(rows) => {
            if opts.json {
                println!("{}", json(&rows));
            } else {
                print!("{}", table(opts.file, &rows));
            }
            ExitCode::SUCCESS
        }
        Err(Reported) => ExitCode::FAILURE,
    }
}

fn measure(opts: &Options) -> Result<Vec<Row>, Reported> {
    let compiled = model::compile(opts.file, opts.color)?;
    let grad = model::gradient(&compiled, opts.color)?;
    let cfg = language::batch::lower_gradient(&grad).map_err(|ds| {
        super::check::report(&compiled.file, &ds, super::MessageFormat::Human, opts.color);
        Reported
    })?;
    let data = model::data_path(opts.file, opts.data);
    let name = &compiled.file.name;
    // `auto` measures what `bat run` would run: the compiled gradient,
    // unless a batching is asked for (only the CPU backend has them), no
    // compiler is there, or the generator lacks an op of the model (then
    // `native` too measures the CPU backend, which runs that gradient).
    let native = match opts.backend {
        Backend::Native => true,
        Backend::Cpu => false,
        Backend::Auto => {
            opts.batching == [Batching::ProgramCounter]
                && codegen::shim::compiler_available()
                    .map_err(|why| eprintln!("note: {why}: measuring the CPU backend"))
                    .is_ok()
        }
    };
    if native {
        let m = model::instantiate(&compiled, data.as_deref())?;
        match NativeGradient::new(&cfg, m, 1) {
            Ok(first) => return measure_native(opts, first),
            // As `bat run` (every backend but cuda): this gradient runs on
            // the CPU backend, so that is what is measured.
            Err(e) => eprintln!(
                "note: {name}: the gradient is not compiled ({e}); `bat run` evaluates it on the CPU backend, which is measured here"
            ),
        }
    }
    let mut rows = Vec::new();
    for &batching in opts.batching {
        let config = ExecConfig {
            batching,
            threads: opts.threads,
            ..ExecConfig::default()
        };
        let m = model::instantiate(&compiled, data.as_deref())?;
        let batched = BatchedModel::new(cfg.clone(), m, config).map_err(|e| {
            eprintln!("error: {}: {e}", compiled.file.name);
            Reported
        })?;
        let n = batched.model().num_unconstrained();
        for &chains in opts.chains {
            let sets = init_sets(n, chains, opts.threads);
            let mut next = 0;
            let mut evaluate = || {
                let columns = &sets[next];
                next = (next + 1) % sets.len();
                batched
                    .log_density_gradient_columns(columns, chains, true)
                    .map_err(|e| {
                        eprintln!("error: {}: {e}", compiled.file.name);
                        Reported
                    })
            };
            // One untimed evaluation (allocations, thread start-up); its
            // failures are the ones reported.
            let first = evaluate()?;
            let failed_lanes = first.errors.iter().filter(|e| e.is_some()).count();
            let budget = Duration::from_secs_f64(opts.seconds.max(0.0));
            let start = Instant::now();
            let mut batches = 0;
            loop {
                std::hint::black_box(evaluate()?);
                batches += 1;
                if start.elapsed() >= budget {
                    break;
                }
            }
            rows.push(Row {
                chains,
                backend: Backend::Cpu,
                batching,
                threads: opts.threads,
                batches,
                seconds: start.elapsed().as_secs_f64(),
                failed_lanes,
            });
        }
    }
    Ok(rows)
}

/// Time `evaluate` (one batch per call, results kept opaque) for
/// `opts.seconds` after one untimed call: (batches, seconds).
fn time_batches<E>(
    opts: &Options,
    mut evaluate: impl FnMut() -> Result<(), E>,
) -> Result<(usize, f64), E> {
    evaluate()?;
    let budget = Duration::from_secs_f64(opts.seconds.max(0.0));
    let start = Instant::now();
    let mut batches = 0;
    loop {
        evaluate()?;
        batches += 1;
        // The clock read every 16 batches: a batch of one compiled
        // gradient takes a few hundred ns, a clock read ~30.
        if batches % 16 == 0 && start.elapsed() >= budget {
            return Ok((batches, start.elapsed().as_secs_f64()));
        }
    }
}

/// `bat bench --backend native`: the compiled gradient, each thread
/// evaluating its share of the lanes with its own executor (one compile).
fn measure_native(opts: &Options, first: NativeGradient) -> Result<Vec<Row>, Reported> {
    let name = opts.file.display();
    let report = |e: &dyn std::fmt::Display| {
        eprintln!("error: {name}: {e}");
        Reported
    };
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    };
    let n = first.model().num_unconstrained();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| report(&e))?;
    let mut rows = Vec::new();
    for &chains in opts.chains {
        let sets = init_sets(n, chains, opts.threads);
        // Each thread's lanes: a contiguous share, its points as compact
        // `[coordinate][lane]` columns.
        let share = chains.div_ceil(threads);
        let shares: Vec<(usize, usize)> = (0..chains)
            .step_by(share)
            .map(|a| (a, (a + share).min(chains)))
            .collect();
        let columns: Vec<Vec<Vec<f64>>> = sets
            .iter()
            .map(|set| {
                shares
                    .iter()
                    .map(|&(a, b)| {
                        (0..n)
                            .flat_map(|c| set[c * chains + a..c * chains + b].iter().copied())
                            .collect()
                    })
                    .collect()
            })
            .collect();
        // Executors sized for their share (the host loop lists all of an
        // executor's lanes at every step).
        let mut executors: Vec<NativeGradient> =
            shares.iter().map(|&(a, b)| first.sibling(b - a)).collect();
        let active = &mut executors[..];
        let mut next = 0;
        let mut failed_lanes = None;
        let (batches, seconds) = time_batches(opts, || {
            let set = &columns[next];
            next = (next + 1) % columns.len();
            let failed = if active.len() == 1 {
                let k = shares[0].1 - shares[0].0;
                active[0]
                    .evaluate_columns(&set[0], k, true)
                    .map(|r| r.failures.len())
            } else {
                pool.install(|| {
                    active
                        .par_iter_mut()
                        .zip(set.par_iter().zip(&shares))
                        .map(|(e, (x, &(a, b)))| {
                            e.evaluate_columns(x, b - a, true).map(|r| r.failures.len())
                        })
                        .sum()
                })
            };
            let failed: usize = failed.map_err(|e| report(&e))?;
            failed_lanes.get_or_insert(failed);
            Ok::<(), Reported>(())
        })?;
        rows.push(Row {
            chains,
            backend: Backend::Native,
            batching: Batching::ProgramCounter,
            threads: opts.threads,
            batches,
            seconds,
            failed_lanes: failed_lanes.unwrap_or(0),
        });
    }
    Ok(rows)
}

fn json(rows: &[Row]) -> String {
    let items: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "chains": r.chains,
                "backend": r.backend.name(),
                "batching": r.batching.name(),
                "threads": r.threads,
                "grad_evals_per_s": r.grad_evals_per_s(),
                "seconds_per_batch": r.seconds / r.batches as f64,
                "batches": r.batches,
                "failed_lanes": r.failed_lanes,
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}

fn table(file: &Path, rows: &[Row]) -> String {
    let mut out = format!(
        "{}: log density + gradient evaluations at random inits\n",
        file.display()
    );
    out += &format!(
        "{:>8}  {:>8}  {:>8}  {:>16}  {:>14}  {:>8}\n",
        "chains", "backend", "batching", "grad evals/s", "µs per batch", "failed"
    );
    for r in rows {
        out += &format!(
            "{:>8}  {:>8}  {:>8}  {:>16.0}  {:>14.1}  {:>8}\n",
            r.chains,
            r.backend.name(),
            r.batching.name(),
            r.grad_evals_per_s(),
            1e6 * r.seconds / r.batches as f64,
            r.failed_lanes
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::init_sets;

    /// Every lane of every set is its own point, and each thread meets more
    /// points per cycle than it remembers ODE solutions: no timed batch can
    /// be answered from the memo.
    #[test]
    fn init_sets_cycle_through_more_points_than_a_thread_remembers() {
        let capacity = runtime::ODE_MEMO_CAPACITY;
        for (chains, threads) in [(1, 1), (4, 1), (4, 2), (16, 2), (17, 2), (1024, 1), (3, 0)] {
            let n = 3;
            let sets = init_sets(n, chains, threads);
            assert!(sets.len() >= 2);
            let threads = if threads == 0 { 1 } else { threads };
            let per_thread = chains / threads;
            assert!(
                sets.len() * per_thread.max(1) > capacity,
                "{chains} chains on {threads} threads: {} sets",
                sets.len()
            );
            let mut points: Vec<Vec<u64>> = Vec::new();
            for columns in &sets {
                assert_eq!(columns.len(), n * chains);
                for lane in 0..chains {
                    let point: Vec<u64> = (0..n)
                        .map(|k| columns[k * chains + lane].to_bits())
                        .collect();
                    assert!(
                        point
                            .iter()
                            .all(|&b| (-2.0..=2.0).contains(&f64::from_bits(b))),
                        "{point:?}"
                    );
                    points.push(point);
                }
            }
            let total = points.len();
            points.sort();
            points.dedup();
            assert_eq!(points.len(), total, "repeated points");
        }
    }
}
