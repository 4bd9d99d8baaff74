//! The one interface between a sampler and whatever evaluates a model's
//! log density (with log |J|) and gradient for a batch of chains
//! ([`GradientBatch`]): the chains' points go in as `[coordinate][lane]`
//! columns, the answers come back the same way ([`GradientValues`]).
//! Every executor that hands gradients to another implements or calls it:
//! the CPU backend's batched gradient program and the interpreter (the
//! root crate's `sampler::gradients`), the CUDA device (`sampler::cuda`),
//! and a compiled native sampler whose gradient the host answers
//! (`backend_native::sampler::SamplerGradient::Host`).

use crate::RuntimeError;

/// Evaluates the model's log density (with log |J|) and gradient for a
/// batch of chains. `Send + Sync`: the native sampler's worker threads
/// share one.
pub trait GradientBatch: Send + Sync {
    /// Coordinates of a point (the model's unconstrained parameters).
    fn n_params(&self) -> usize;

    /// `theta[k * lanes.len() + i]` is coordinate k of the point of batch
    /// lane `lanes[i]` (the caller's index of the chain, distinct within a
    /// call: a device keeps per-lane state by it). An `Err` fails every
    /// lane of the call.
    fn log_density_gradient(
        &self,
        lanes: &[usize],
        theta: &[f64],
    ) -> Result<GradientValues, String>;
}

/// One batched evaluation's results, lane `i` of the call at index `i`.
#[derive(Clone, Debug, PartialEq)]
pub struct GradientValues {
    /// Log density per lane (NaN for failed lanes).
    pub lp: Vec<f64>,
    /// `gradient[k * lanes + i]`: coordinate k of lane i.
    pub gradient: Vec<f64>,
    /// Why a lane failed (its lp and gradient are then meaningless).
    pub errors: Vec<Option<RuntimeError>>,
    /// Lane slots the gradient program's statements ran over and how many
    /// were lanes of the call still running (zero where not counted).
    pub work: LaneWork,
}

impl GradientValues {
    /// Room for `lanes` lanes of `n` coordinates, all failed (NaN lp)
    /// until set.
    pub fn new(lanes: usize, n: usize) -> GradientValues {
        GradientValues {
            lp: vec![f64::NAN; lanes],
            gradient: vec![0.0; n * lanes],
            errors: vec![None; lanes],
            work: LaneWork::default(),
        }
    }

    /// Every one of `lanes` lanes of `n` coordinates failed with `error`.
    pub fn all_failed(lanes: usize, n: usize, error: RuntimeError) -> GradientValues {
        GradientValues {
            errors: vec![Some(error); lanes],
            ..GradientValues::new(lanes, n)
        }
    }

    /// Number of lanes.
    pub fn lanes(&self) -> usize {
        self.lp.len()
    }

    /// Lane `i`'s outcome.
    pub fn lane(&self, i: usize) -> Result<(f64, Vec<f64>), RuntimeError> {
        if let Some(e) = &self.errors[i] {
            return Err(e.clone());
        }
        let z = self.lanes();
        let n = self.gradient.len() / z.max(1);
        Ok((
            self.lp[i],
            (0..n).map(|k| self.gradient[k * z + i]).collect(),
        ))
    }

    /// Set lane `i`'s outcome.
    pub fn set(&mut self, i: usize, outcome: Result<(f64, Vec<f64>), RuntimeError>) {
        let z = self.lanes();
        match outcome {
            Ok((lp, grad)) => {
                self.lp[i] = lp;
                for (k, g) in grad.into_iter().enumerate() {
                    self.gradient[k * z + i] = g;
                }
                self.errors[i] = None;
            }
            Err(e) => self.errors[i] = Some(e),
        }
    }
}

/// Statement ops × lanes an executor computed (`slots`: the width it ran
/// them at — the whole batch for a masked block, the gathered lanes for a
/// gathered one) and how many of those were lanes running the block
/// (`useful`). `useful ÷ slots` is the utilization of the blocks run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneWork {
    pub slots: u64,
    pub useful: u64,
}

impl LaneWork {
    pub fn add(&mut self, other: LaneWork) {
        self.slots += other.slots;
        self.useful += other.useful;
    }

    /// `ops` statements run `width` lanes wide for `running` lanes.
    pub fn record(&mut self, ops: usize, width: usize, running: usize) {
        self.slots += (ops * width) as u64;
        self.useful += (ops * running) as u64;
    }

    /// Useful lane slots per lane slot run (`None` before any ran).
    pub fn utilization(&self) -> Option<f64> {
        (self.slots > 0).then(|| self.useful as f64 / self.slots as f64)
    }
}
