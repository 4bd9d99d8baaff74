//! A sampling run measured for the benchmarks (`benches/sampler.rs`,
//! [`crate::cuda_bench`]): the chains run on an executor into a draws
//! file, which is read back for the smallest ESS_bulk.

use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

use crate::output::RunMetadata;
use crate::sampler::collect::OutputSpec;
use crate::sampler::{
    ChainJob, Control, Progress, ProgressState, RunReport, SamplerExecutor, collect,
};

/// What one measured run gave.
pub struct Measured {
    /// Seconds from the first chain's start to the last draw written.
    pub wall: f64,
    pub report: RunReport,
    /// Smallest ESS_bulk over the posterior quantities (not `lp__`).
    pub min_ess_bulk: f64,
}

/// Run chains `0..chains` of `job` on `executor`, writing the draws to
/// `output` (left there for the caller to remove). A chain that fails
/// fails the run.
pub fn sample(
    job: &ChainJob<'_>,
    executor: &dyn SamplerExecutor,
    chains: usize,
    output: &Path,
) -> Result<Measured, String> {
    let spec = OutputSpec {
        path: output,
        meta: RunMetadata {
            model_name: job.model.program().name.clone(),
            model_source: String::new(),
            data_path: None,
            seed: job.settings.seed,
            settings_json: "{}".into(),
        },
        n_chains: chains,
        dim: job.model.num_unconstrained(),
        settings: job.settings,
        control: None,
        target: None,
    };
    let ids: Vec<usize> = (0..chains).collect();
    let control = Control::new();
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    let report = std::thread::scope(|scope| {
        let (ids, control) = (&ids, &control);
        scope.spawn(move || executor.run(job, ids, &tx, control));
        collect(rx, &spec, &mut Quiet)
    })
    .map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64();
    if let Some(error) = report.chain_errors.first() {
        return Err(format!(
            "{} chains failed, e.g. chain {}: {}",
            report.chain_errors.len(),
            error.chain,
            error.error.message
        ));
    }
    let summary = crate::summary::report_for_file(output).map_err(|e| e.to_string())?;
    let min_ess_bulk = summary
        .quantities
        .iter()
        .filter(|q| q.name != "lp__")
        .map(|q| q.ess_bulk)
        .fold(f64::INFINITY, f64::min);
    Ok(Measured {
        wall,
        report,
        min_ess_bulk,
    })
}

/// No progress display; what a model prints is not shown either (a
/// benchmark times sampling, not a terminal).
struct Quiet;

impl Progress for Quiet {
    fn update(&mut self, _: &ProgressState) {}
    fn printed(&mut self, _: usize, _: &[String]) {}
}
