//! Executors run the sampler program for a set of chains. The driver only
//! sees the [`SamplerExecutor`] trait, so a batched executor can replace
//! the reference one without touching it.

use super::host::{ChainHost, Emitter, INTERRUPTED};
use super::program::{CHAIN_FUNCTION, nuts_program};
use super::{
    Algorithm, ChainError, ChainJob, ChainTotals, Control, Event, Init, InvMetric, MAX_INIT_TRIES,
    PARTIAL_INIT_RADIUS,
};
use language::value::Value;
use rayon::prelude::*;
use runtime::{Rng, RuntimeError, run_function};
use std::sync::mpsc::Sender;

/// Runs the sampler program for chains, reporting through `events`.
pub trait SamplerExecutor: Sync {
    /// Run every chain in `chains`; each sends its iterations, its
    /// adaptation and finally [`Event::Finished`]. Returns when all are done.
    /// Chains stop early (as interrupted) once `stop` is set.
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, control: &Control);
}

/// The reference executor: the scalar interpreter, one chain per rayon task.
pub struct InterpreterExecutor {
    /// Worker threads (0: one per core).
    pub threads: usize,
}

/// Interpreted recursion (build_tree, nested calls) needs a deeper stack
/// than rayon's default.
const CHAIN_STACK_BYTES: usize = 64 * 1024 * 1024;

impl SamplerExecutor for InterpreterExecutor {
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, control: &Control) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .stack_size(CHAIN_STACK_BYTES)
            .build();
        let work = || {
            chains
                .par_iter()
                .for_each_with(events.clone(), |events, &chain| {
                    let result = run_chain(job, chain, events.clone(), control);
                    let _ = events.send(Event::Finished { chain, result });
                })
        };
        match pool {
            Ok(pool) => pool.install(work),
            Err(_) => work(),
        }
    }
}

/// Runs one chain of the sampler program with the scalar interpreter.
pub fn run_chain(
    job: &ChainJob<'_>,
    chain: usize,
    events: Sender<Event>,
    control: &Control,
) -> Result<ChainTotals, ChainError> {
    let program =
        nuts_program().map_err(|message| chain_error(chain, RuntimeError::fatal(message), None))?;
    let (mut host, args, rng) = chain_start(job, chain, events, control);
    match run_function(program, CHAIN_FUNCTION, args, rng, &mut host) {
        Ok(_) => Ok(ChainTotals {
            gradient_evaluations: host.gradient_evaluations,
        }),
        Err(error) => Err(chain_error(chain, error, host.last_error.take())),
    }
}

/// What every executor gives chain `chain`: its host, the arguments of
/// the chain function, and its sampler random stream (stream 0 of
/// (seed, chain)).
pub(super) fn chain_start<'a>(
    job: &ChainJob<'a>,
    chain: usize,
    events: Sender<Event>,
    control: &'a Control,
) -> (ChainHost<'a>, Vec<Value>, Rng) {
    let host = ChainHost {
        emitter: emitter(job, control),
        grad: job.grad,
        chain,
        events,
        last_error: None,
        gradient_evaluations: 0,
    };
    let rng = Rng::new(job.settings.seed, chain as u32, 0);
    (host, chain_args(job, chain), rng)
}

/// The arguments of chain `chain`'s function: the same for every chain
/// (each draws what it must from its own stream) but the start point of
/// [`Init::PerChain`].
pub(super) fn chain_args(job: &ChainJob<'_>, chain: usize) -> Vec<Value> {
    let settings = job.settings;
    let n = job.model.num_unconstrained();
    // The sampler program draws the NaN coordinates of `init` uniformly
    // in (−radius, radius).
    let (init, radius, tries) = match &settings.init {
        Init::Radius(r) if *r > 0.0 => (vec![f64::NAN; n], *r, MAX_INIT_TRIES),
        Init::Radius(_) => (vec![0.0; n], 0.0, 1),
        Init::Values(values) if values.iter().any(|x| x.is_nan()) => {
            (values.clone(), PARTIAL_INIT_RADIUS, MAX_INIT_TRIES)
        }
        Init::Values(values) => (values.clone(), 0.0, 1),
        Init::PerChain(points) => (points[chain].clone(), 0.0, 1),
    };
    let (step_size, inv_metric) = match &settings.kernel {
        Some(kernel) => (kernel.step_size, kernel.inv_metric.clone()),
        None => (0.0, InvMetric::unit(settings.metric, n)),
    };
    // A dense metric is its Cholesky factor with a unit diagonal; a
    // diagonal one has a factor of no rows.
    let (diagonal, factor) = match inv_metric {
        InvMetric::Diag(diagonal) => (diagonal.to_vec(), (0, Vec::new())),
        InvMetric::Dense { factor, .. } => (vec![1.0; n], (n, column_major(&factor, n))),
    };
    // Jittered HMC's full trajectory in leapfrog steps (0: NUTS); one step
    // until a trajectory length is known.
    let hmc_steps = match (settings.algorithm, &settings.kernel) {
        (Algorithm::Nuts, _) => 0.0,
        (Algorithm::Chees, Some(kernel)) => kernel
            .trajectory_length
            .map_or(1.0, |length| length / kernel.step_size),
        (Algorithm::Chees, None) => 1.0,
    };
    vec![
        Value::Vector(init),
        Value::Real(radius),
        Value::Int(tries),
        Value::Int(settings.num_warmup as i64),
        Value::Int(settings.num_samples as i64),
        Value::Int(settings.max_depth as i64),
        Value::Real(settings.adapt_delta),
        Value::Real(step_size),
        Value::Vector(diagonal),
        Value::Matrix {
            rows: factor.0,
            cols: factor.0,
            data: factor.1,
        },
        Value::Real(hmc_steps),
        Value::Int(settings.jitter_start as i64),
        Value::Int(i64::from(
            settings.report_points && settings.algorithm == Algorithm::Chees,
        )),
    ]
}

/// A row-major n×n matrix in column-major order (a [`Value::Matrix`]'s).
fn column_major(row_major: &[f64], n: usize) -> Vec<f64> {
    (0..n * n).map(|k| row_major[(k % n) * n + k / n]).collect()
}

/// What answers every chain's `emit_draw` and `emit_adaptation` in `job`.
pub(super) fn emitter<'a>(job: &ChainJob<'a>, control: &'a Control) -> Emitter<'a> {
    let settings = job.settings;
    Emitter {
        model: job.model,
        seed: settings.seed,
        num_warmup: settings.num_warmup,
        thin: settings.thin.max(1),
        save_warmup: settings.save_warmup,
        report_points: settings.report_points,
        control,
    }
}

/// Chain `chain`'s failure (interrupted when the host stopped it).
pub(super) fn chain_error(
    chain: usize,
    error: RuntimeError,
    last_log_density_error: Option<RuntimeError>,
) -> ChainError {
    ChainError {
        chain,
        interrupted: error.message == INTERRUPTED,
        error,
        last_log_density_error,
    }
}
