//! `bat bench`: how many log-density gradient evaluations per second the
//! batched CPU executor does on a user's model, per number of chains
//! (lanes of one batch), at random inits (uniform(−2, 2) unconstrained, as
//! Stan's).

use super::model::{self, Reported};
use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use language::interp::Rng;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub struct Options<'a> {
    pub file: &'a Path,
    pub data: Option<&'a Path>,
    pub chains: &'a [usize],
    pub batching: &'a [Batching],
    pub threads: usize,
    /// Time spent measuring each chain count, at least one evaluation.
    pub seconds: f64,
    pub json: bool,
    pub color: bool,
}

/// One measurement.
struct Row {
    chains: usize,
    batching: Batching,
    threads: usize,
    batches: usize,
    seconds: f64,
    /// Lanes whose evaluation failed at their init (e.g. a domain error).
    failed_lanes: usize,
}

impl Row {
    fn grad_evals_per_s(&self) -> f64 {
        (self.chains * self.batches) as f64 / self.seconds
    }
}

pub fn run(opts: &Options) -> ExitCode {
    match measure(opts) {
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
            let thetas: Vec<Vec<f64>> = (0..chains)
                .map(|l| {
                    let mut rng = Rng::new(20261122, l as u32, 0);
                    (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
                })
                .collect();
            // θ as `[coordinate][lane]` columns, the layout the sampler
            // hands its gradient batches in (no vector per lane).
            let mut columns = vec![0.0; n * chains];
            for (l, t) in thetas.iter().enumerate() {
                for (k, &x) in t.iter().enumerate() {
                    columns[k * chains + l] = x;
                }
            }
            let evaluate = || {
                batched
                    .log_density_gradient_columns(&columns, chains, true)
                    .map_err(|e| {
                        eprintln!("error: {}: {e}", compiled.file.name);
                        Reported
                    })
            };
            // One untimed evaluation (allocations, thread start-up).
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

fn json(rows: &[Row]) -> String {
    let items: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "chains": r.chains,
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
        "{:>8}  {:>8}  {:>16}  {:>14}  {:>8}\n",
        "chains", "batching", "grad evals/s", "µs per batch", "failed"
    );
    for r in rows {
        out += &format!(
            "{:>8}  {:>8}  {:>16.0}  {:>14.1}  {:>8}\n",
            r.chains,
            r.batching.name(),
            r.grad_evals_per_s(),
            1e6 * r.seconds / r.batches as f64,
            r.failed_lanes
        );
    }
    out
}
