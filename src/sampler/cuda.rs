//! `--backend cuda`: the sampler program runs on the device
//! ([`CudaSamplerExecutor`], [`backend_cuda::sampler::SamplerDevice`]) with
//! the model's gradients, each chain one lane of device-resident state:
//! the host only schedules blocks and receives each chain's draws in
//! chunks. With `--host-sampler` the sampler program runs on the host (the
//! batched executor over all chains, [`super::BatchedExecutor`]) and every
//! batched gradient evaluation the waiting chains ask for is answered by
//! the CUDA device ([`backend_cuda::gradient::GradientDevice`]). Chain `i`'s draws are the CPU backend's
//! to floating-point tolerance (the device sums in the interpreter's order
//! with IEEE arithmetic; a GPU's `exp`/`log` may differ in the last bits).

use std::sync::Mutex;
use std::sync::mpsc::Sender;

use backend_cuda::gradient::GradientDevice;
use backend_cuda::sampler::SamplerDevice;
use codegen::gradient::GeneratedCodeError;
use codegen::sampler::{LaneOutcome, RecordHost};
use codegen::shape::{Inner, Shape};
use language::value::Value;
use runtime::gradient::{GradientBatch, GradientValues};
use runtime::{Host, RuntimeError};

use super::executor::{chain_error, chain_start};
use super::host::ChainHost;
use super::program::{CHAIN_FUNCTION, nuts_program};
use super::{
    BatchTotals, BatchedExecutor, ChainJob, ChainTotals, Control, Event, Metric, SamplerExecutor,
};

/// The model's gradient program on the device, one lane per chain.
pub struct CudaGradients {
    device: Mutex<GradientDevice>,
    n_params: usize,
}

impl CudaGradients {
    /// Generate, compile and load the gradient program of `job`'s model for
    /// `chains` lanes. A model with an op the device cannot run yet is
    /// refused (the error names the ops).
    pub fn new(job: &ChainJob<'_>, chains: usize) -> Result<CudaGradients, GeneratedCodeError> {
        Ok(CudaGradients {
            device: Mutex::new(gradient_device(job, chains)?),
            n_params: job.model.num_unconstrained(),
        })
    }
}

/// Generate, compile and load the gradient program of `job`'s model on
/// the device for `lanes` lanes. A model with an op the device cannot run
/// yet is refused (the error names the ops).
pub fn gradient_device(
    job: &ChainJob<'_>,
    lanes: usize,
) -> Result<GradientDevice, GeneratedCodeError> {
    GradientDevice::new(&gradient_cfg(job)?, job.model.clone(), lanes)
}

/// `job`'s gradient program as a CFG, for the generated-code backends.
pub(super) fn gradient_cfg(
    job: &ChainJob<'_>,
) -> Result<language::batch::cfg::Program, GeneratedCodeError> {
    language::batch::lower_gradient(job.grad).map_err(|d| {
        let messages: Vec<String> = d.iter().map(|d| d.message.clone()).collect();
        GeneratedCodeError::Setup(format!(
            "the model cannot run batched: {}",
            messages.join("; ")
        ))
    })
}

impl GradientBatch for CudaGradients {
    fn n_params(&self) -> usize {
        self.n_params
    }

    fn log_density_gradient(
        &self,
        lanes: &[usize],
        theta: &[f64],
    ) -> Result<GradientValues, String> {
        let mut device = self
            .device
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let evaluated = device
            .evaluate(lanes, theta, true)
            .map_err(|e| e.to_string())?;
        let mut out = GradientValues::new(lanes.len(), self.n_params);
        for (i, e) in evaluated.into_iter().enumerate() {
            out.set(i, e);
        }
        Ok(out)
    }
}

/// The batched executor with the device answering gradients.
pub struct CudaExecutor {
    pub sampler: BatchedExecutor,
    pub gradients: CudaGradients,
}

impl SamplerExecutor for CudaExecutor {
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, control: &Control) {
        self.sampler
            .run_with(job, chains, events, control, Some(&self.gradients));
    }
}

/// Iterations (calls of `emit_draw` or `emit_adaptation`) between two
/// copies of the chains' records from the device.
pub const RECORD_CHUNK: usize = 64;

/// The sampler program and the model's gradient program both on the
/// device, one lane per chain.
pub struct CudaSamplerExecutor {
    device: Mutex<SamplerDevice>,
}

impl CudaSamplerExecutor {
    /// Generate, compile and load the sampler program and `job`'s
    /// gradient program for `chains` lanes.
    pub fn new(
        job: &ChainJob<'_>,
        chains: usize,
    ) -> Result<CudaSamplerExecutor, GeneratedCodeError> {
        CudaSamplerExecutor::with_gradients(gradient_device(job, chains)?, job.settings.metric)
    }

    /// The sampler program for a `metric` on the device, one lane per
    /// lane of `gradient` (the model's gradient program, loaded), which
    /// answers its gradient calls.
    pub fn with_gradients(
        gradient: GradientDevice,
        metric: Metric,
    ) -> Result<CudaSamplerExecutor, GeneratedCodeError> {
        let (cfg, params) = device_sampler_program(gradient.model().num_unconstrained(), metric)
            .map_err(GeneratedCodeError::Setup)?;
        let device = SamplerDevice::new(&cfg, CHAIN_FUNCTION, &params, gradient, RECORD_CHUNK)?;
        Ok(CudaSamplerExecutor {
            device: Mutex::new(device),
        })
    }
}

/// The sampler program's CFG and the shapes of its chain function's
/// arguments for a model of `n` unconstrained coordinates and a `metric`.
pub fn device_sampler_program(
    n: usize,
    metric: Metric,
) -> Result<(language::batch::cfg::Program, Vec<Shape>), String> {
    let program = nuts_program()?;
    let cfg = language::batch::lower(program, &[], 0)
        .map_err(|d| format!("internal error: the sampler program does not batch: {d:?}"))?;
    // sample_chain_rng(init, init_radius, max_init_tries, num_warmup,
    // num_samples, max_depth, delta, step_size, metric, metric_factor,
    // hmc_steps, jitter_start, report_trajectories)
    let factor_rows = match metric {
        Metric::Diag => 0,
        Metric::Dense => n,
    };
    let params = vec![
        Shape::of(Inner::Vector(n)),
        Shape::REAL,
        Shape::INT,
        Shape::INT,
        Shape::INT,
        Shape::INT,
        Shape::REAL,
        Shape::REAL,
        Shape::of(Inner::Vector(n)),
        Shape::of(Inner::Matrix(factor_rows, factor_rows)),
        Shape::REAL,
        Shape::INT,
        Shape::INT,
    ];
    Ok((cfg, params))
}

/// Each lane's records go to its chain's host.
struct Hosts<'a>(Vec<ChainHost<'a>>);

impl RecordHost for Hosts<'_> {
    fn record(
        &mut self,
        lane: usize,
        function: &str,
        args: Vec<Value>,
    ) -> Result<(), RuntimeError> {
        self.0[lane].call_external(function, args).map(|_| ())
    }
}

impl SamplerExecutor for CudaSamplerExecutor {
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, control: &Control) {
        let mut hosts = Vec::with_capacity(chains.len());
        let mut args = Vec::with_capacity(chains.len());
        for &chain in chains {
            let (host, a, _) = chain_start(job, chain, events.clone(), control);
            hosts.push(host);
            args.push(a);
        }
        let mut hosts = Hosts(hosts);
        let ids: Vec<u32> = chains.iter().map(|&c| c as u32).collect();
        let mut device = self
            .device
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let outcome = device.run(&args, &ids, job.settings.seed, &mut hosts);
        let _ = events.send(Event::Batches(BatchTotals {
            calls: device.gradient_calls,
            lanes: device.gradient_lanes,
            slots: device.gradient_calls * chains.len() as u64,
            gradient_blocks: super::LaneWork::default(),
        }));
        finish_chains(&outcome, chains, events);
    }
}

/// Every chain's `Finished` event from its lane's outcome (lane `i` ran
/// chain `chains[i]`), or the run's error for all of them.
pub(super) fn finish_chains(
    outcome: &Result<Vec<LaneOutcome>, GeneratedCodeError>,
    chains: &[usize],
    events: &Sender<Event>,
) {
    for (i, &chain) in chains.iter().enumerate() {
        let result = match outcome {
            Ok(lanes) => match &lanes[i] {
                Ok(evaluations) => Ok(ChainTotals {
                    gradient_evaluations: *evaluations,
                }),
                Err((error, last)) => Err(chain_error(chain, error.clone(), last.clone())),
            },
            Err(e) => Err(chain_error(chain, RuntimeError::fatal(e.to_string()), None)),
        };
        let _ = events.send(Event::Finished { chain, result });
    }
}
