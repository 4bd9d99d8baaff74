//! Sampling: Stan's NUTS as a program in bat's own language, and the driver
//! that runs it for many chains and writes the draws.
//!
//! The sampler is not host code: `nuts.stan` ([`program`]) holds NUTS,
//! the initial step-size search, dual averaging and windowed metric
//! adaptation, and loops over the iterations of one chain. It talks to the
//! host only through external functions (the model's log density gradient,
//! `emit_draw`, `emit_adaptation`), answered per chain by [`host`]
//! (a batched executor answers the emits of all its waiting chains at once
//! and sends their events as one [`Event::Many`]).
//!
//! A [`SamplerExecutor`] runs the program for a set of chains: the
//! [`BatchedExecutor`] runs all chains as the lanes of one batch on the
//! program-counter or local static executor of `backend-cpu`; the
//! [`InterpreterExecutor`] (the reference) runs one chain per task with the
//! scalar interpreter. [`cuda::CudaExecutor`] is the batched executor with
//! every gradient evaluation answered by the CUDA device (the seam is
//! [`runtime::gradient::GradientBatch`]). The driver ([`collect`]) is
//! independent of the executor: it receives [`Event`]s, buffers per chain
//! and writes blocks with [`crate::output::DrawWriter`].
//!
//! Chain `i` draws all its random numbers from the counter-based streams
//! keyed by (seed, i): stream 0 for the sampler, stream `k` for the
//! generated quantities of iteration `k`. Its draws therefore never depend
//! on the number of chains, threads or the executor.

mod batched;
mod blocks;
pub mod collect;
mod control;
pub mod cuda;
mod executor;
mod flushes;
pub mod gradients;
pub mod host;
pub mod native;
pub mod pooled;
pub mod program;
pub mod target;
pub mod wire;

pub use batched::BatchedExecutor;
pub use collect::{CollectError, Progress, ProgressState, RunReport, TargetOutcome, collect};
pub use control::Control;
pub use executor::{InterpreterExecutor, SamplerExecutor, run_chain};
pub use target::EssTarget;

use crate::output::VarSpec;
use language::mir::GradProgram;
use language::value::Value;
use runtime::{Model, RuntimeError};
use std::sync::Arc;

pub use runtime::gradient::LaneWork;

/// Initial values on the unconstrained scale.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    /// Uniform(−R, R) per coordinate, up to 100 attempts (R = 0: zeros, once).
    Radius(f64),
    /// These unconstrained values (one attempt); NaN coordinates (the
    /// parameters an init file leaves out) are drawn uniformly in
    /// (−[`PARTIAL_INIT_RADIUS`], [`PARTIAL_INIT_RADIUS`]), up to
    /// [`MAX_INIT_TRIES`] attempts, as Stan does.
    Values(Vec<f64>),
    /// Chain `i` starts at the `i`-th point (unconstrained, finite): where
    /// a window of pooled warmup left it.
    PerChain(Arc<[Vec<f64>]>),
}

/// A kernel given to every chain instead of the one it would find alone:
/// the step size and inverse metric that pooled warmup adapted (and for
/// [`Algorithm::Chees`] the trajectory length).
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub step_size: f64,
    pub inv_metric: InvMetric,
    /// Jittered HMC's (untruncated) trajectory length in time units; None
    /// for NUTS, and for ChEES before it is known (one step of the step
    /// size).
    pub trajectory_length: Option<f64>,
}

/// An inverse metric M⁻¹ of the unconstrained coordinates.
#[derive(Clone, Debug, PartialEq)]
pub enum InvMetric {
    /// Its diagonal.
    Diag(Arc<[f64]>),
    /// The d×d matrix and its lower Cholesky factor L (M⁻¹ = L Lᵀ), both
    /// row-major: the sampler program takes L.
    Dense {
        matrix: Arc<[f64]>,
        factor: Arc<[f64]>,
    },
}

impl InvMetric {
    /// The unit metric of `dim` coordinates in the form `metric` says.
    pub fn unit(metric: Metric, dim: usize) -> InvMetric {
        match metric {
            Metric::Diag => InvMetric::Diag(Arc::from(vec![1.0; dim])),
            Metric::Dense => {
                let identity: Arc<[f64]> = (0..dim * dim)
                    .map(|k| if k % (dim + 1) == 0 { 1.0 } else { 0.0 })
                    .collect();
                InvMetric::Dense {
                    matrix: identity.clone(),
                    factor: identity,
                }
            }
        }
    }

    /// Its diagonal.
    pub fn diagonal(&self) -> Vec<f64> {
        match self {
            InvMetric::Diag(diagonal) => diagonal.to_vec(),
            InvMetric::Dense { matrix, .. } => {
                let dim = matrix.len().isqrt();
                (0..dim).map(|i| matrix[i * dim + i]).collect()
            }
        }
    }
}

/// The form of the inverse metric (`bat run --metric`): CmdStan's
/// `diag_e` or `dense_e`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metric {
    #[default]
    Diag,
    Dense,
}

/// The transition every iteration runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Stan's NUTS.
    Nuts,
    /// Jittered HMC (trajectory length T·u, u a Halton point in (0, 1)),
    /// whose trajectory length pooled warmup adapts by the ChEES criterion
    /// across chains (Hoffman, Radul & Sountsov 2021).
    Chees,
}

/// The radius of the random init of parameters an init file leaves out
/// (Stan's default).
pub const PARTIAL_INIT_RADIUS: f64 = 2.0;

/// Attempts at a random initial point before a chain gives up (as Stan).
pub const MAX_INIT_TRIES: i64 = 100;

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub num_warmup: usize,
    pub num_samples: usize,
    pub thin: usize,
    pub max_depth: usize,
    pub adapt_delta: f64,
    pub save_warmup: bool,
    pub seed: u64,
    pub init: Init,
    /// The kernel every chain starts from (None: Stan's start, step size
    /// by the heuristic and a unit metric).
    pub kernel: Option<Kernel>,
    /// A run of pooled warmup: every iteration's event carries the
    /// chain's unconstrained point ([`DrawRecord::point`]) and no draw is
    /// kept (no generated quantities run); with [`Algorithm::Chees`] every
    /// iteration also sends its [`Event::Trajectory`].
    pub report_points: bool,
    pub algorithm: Algorithm,
    /// The index of the run's first iteration in the sequence of jitters
    /// of [`Algorithm::Chees`] (pooled warmup's segments and the sampling
    /// run after them continue one sequence).
    pub jitter_start: usize,
    /// The inverse metric's form. A dense one is adapted only by pooled
    /// warmup; the sampler program of a run is built for one form (the
    /// compiled executors fix the shapes of its arguments).
    pub metric: Metric,
}

impl Settings {
    /// Stan's defaults (thin 1, max depth 10, adapt delta 0.8, no warmup
    /// draws kept, inits uniform(−2, 2)) for these iterations and seed.
    pub fn stan_defaults(num_warmup: usize, num_samples: usize, seed: u64) -> Settings {
        Settings {
            num_warmup,
            num_samples,
            thin: 1,
            max_depth: 10,
            adapt_delta: 0.8,
            save_warmup: false,
            seed,
            init: Init::Radius(2.0),
            kernel: None,
            report_points: false,
            algorithm: Algorithm::Nuts,
            jitter_start: 0,
            metric: Metric::Diag,
        }
    }

    /// Kept draws per chain: (warmup, sampling).
    pub fn kept_draws(&self) -> (usize, usize) {
        let warmup = if self.save_warmup {
            self.num_warmup.div_ceil(self.thin)
        } else {
            0
        };
        (warmup, self.num_samples.div_ceil(self.thin))
    }
}

/// What one chain needs besides its id.
pub struct ChainJob<'a> {
    pub model: &'a Model,
    pub grad: &'a GradProgram,
    pub settings: &'a Settings,
}

/// Stan's per-iteration NUTS statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleStats {
    pub lp: f64,
    pub accept_stat: f64,
    pub step_size: f64,
    pub tree_depth: i64,
    pub n_leapfrog: i64,
    pub divergent: bool,
    pub energy: f64,
}

/// One iteration of one chain.
#[derive(Clone, Debug, PartialEq)]
pub struct DrawRecord {
    pub warmup: bool,
    pub stats: SampleStats,
    /// Parameters, transformed parameters and generated quantities
    /// (constrained, in declaration order); `None` when the iteration is
    /// not kept (thinning, warmup not saved).
    pub values: Option<DrawValues>,
    /// The lines the model printed computing a kept draw's values (`print`
    /// in transformed parameters and generated quantities, as Stan runs
    /// them once per saved draw); `bat run` shows them on stdout.
    pub printed: Vec<String>,
    /// The chain's unconstrained point after the iteration, in runs of
    /// pooled warmup ([`Settings::report_points`]); None otherwise.
    pub point: Option<Vec<f64>>,
}

/// What ChEES adaptation needs of one jittered-HMC iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    /// Where the trajectory started (the chain's point before the iteration).
    pub start: Vec<f64>,
    /// Where it ended (the proposal, accepted or not).
    pub end: Vec<f64>,
    /// The velocity M⁻¹p at its end.
    pub velocity: Vec<f64>,
    /// Its length in time: leapfrog steps × step size (⌈u·T/ε⌉·ε).
    pub time: f64,
}

/// A kept draw's values.
#[derive(Clone, Debug, PartialEq)]
pub enum DrawValues {
    /// By name, as the interpreter gives them.
    Named(Vec<(String, Value)>),
    /// As the draws file stores them: every variable's elements in stored
    /// order ([`Value::flatten_row_major`]), concatenated in `layout`'s
    /// order. What the batched generated quantities of `--backend native`
    /// give: no value built per variable and draw, and nothing for the
    /// collector to take apart.
    Stored {
        layout: Arc<[VarSpec]>,
        numbers: Vec<f64>,
    },
}

/// How a chain failed.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainError {
    pub chain: usize,
    pub error: RuntimeError,
    /// The last failed log density evaluation of the chain, which explains
    /// a failed initialization.
    pub last_log_density_error: Option<RuntimeError>,
    /// Stopped by Ctrl-C rather than by an error.
    pub interrupted: bool,
}

/// What executors report to the driver, in order per chain.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Iteration {
        chain: usize,
        record: DrawRecord,
    },
    Adaptation {
        chain: usize,
        step_size: f64,
        inv_metric: Vec<f64>,
    },
    /// A jittered-HMC iteration's trajectory (sent before its
    /// `Iteration`, in runs of pooled warmup).
    Trajectory {
        chain: usize,
        trajectory: Trajectory,
    },
    Finished {
        chain: usize,
        result: Result<ChainTotals, ChainError>,
    },
    /// How a batched executor evaluated gradients (once per sub-batch).
    Batches(BatchTotals),
    /// Iterations and adaptations of several chains, in order, sent at
    /// once by a batched executor (one message per batched host call
    /// rather than one per chain); never nested, never `Finished`.
    Many(Vec<Event>),
}

impl Event {
    /// The events this one stands for, in order: those of
    /// [`Event::Many`], or the event itself.
    pub fn flatten(self) -> Vec<Event> {
        match self {
            Event::Many(events) => events,
            event => vec![event],
        }
    }
}

/// Batched gradient evaluations of one batch of chains: how full they were.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchTotals {
    /// Batched gradient evaluations (calls of the model's gradient).
    pub calls: u64,
    /// Lanes evaluated over all calls (useful gradient evaluations).
    pub lanes: u64,
    /// Lane slots offered: calls × lanes in the batch. `lanes / slots` is
    /// how full the calls were.
    pub slots: u64,
    /// Statement ops × lanes the gradient program ran (its blocks' width:
    /// the lanes of the call, or the gathered ones) and how many of those
    /// were lanes of the call still running: `useful / executed` is the
    /// utilization of the gradient blocks (zero where not counted: the
    /// CUDA device).
    pub gradient_blocks: LaneWork,
}

impl BatchTotals {
    pub fn add(&mut self, other: BatchTotals) {
        self.calls += other.calls;
        self.lanes += other.lanes;
        self.slots += other.slots;
        self.gradient_blocks.add(other.gradient_blocks);
    }

    /// Useful gradient evaluations per lane slot of the batched calls: how
    /// full the calls were, as a share of the chains of the sub-batch
    /// (chains that finished or wait elsewhere leave slots empty).
    pub fn fullness(&self) -> Option<f64> {
        (self.slots > 0).then(|| self.lanes as f64 / self.slots as f64)
    }

    /// Useful lane slots per lane slot executed in the gradient program's
    /// blocks (their utilization). A call runs the gradient for
    /// exactly the chains that asked, so only lanes that fail part-way or
    /// leave a loop of the model early are wasted.
    pub fn utilization(&self) -> Option<f64> {
        self.gradient_blocks.utilization()
    }
}

/// Work done by a finished chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainTotals {
    pub gradient_evaluations: u64,
}

#[cfg(test)]
mod tests;
