//! The seam between the sampler program and whatever evaluates the
//! model's gradient: every batched evaluation the waiting chains ask for
//! goes through [`GradientBatch`], with the chains' points as
//! `[coordinate][lane]` values. backend-cpu's gradient program
//! ([`CpuGradients`]) and the CUDA device (`super::cuda`) implement it.

use backend_cpu::exec::{BatchedModel, ExecConfig};
use backend_cpu::lanes::LaneWork;
use runtime::RuntimeError;

use super::ChainJob;

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
    /// Room for `lanes` lanes of `n` coordinates, all failed with `error`
    /// until set.
    pub fn new(lanes: usize, n: usize) -> GradientValues {
        GradientValues {
            lp: vec![f64::NAN; lanes],
            gradient: vec![0.0; n * lanes],
            errors: vec![None; lanes],
            work: LaneWork::default(),
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

/// Evaluates the model's log density (with log |J|) and gradient for a
/// batch of chains.
pub trait GradientBatch: Sync {
    /// `theta[k * lanes.len() + i]` is coordinate k of the point of batch
    /// lane `lanes[i]` (the chain's index among the executor's chains,
    /// distinct within a call). An `Err` fails every lane of the call.
    fn log_density_gradient(
        &self,
        lanes: &[usize],
        theta: &[f64],
    ) -> Result<GradientValues, String>;
}

/// backend-cpu's batched gradient program.
pub struct CpuGradients {
    model: BatchedModel,
}

impl CpuGradients {
    pub fn new(job: &ChainJob<'_>, config: ExecConfig) -> Result<CpuGradients, String> {
        let grad_cfg = language::batch::lower_gradient(job.grad).map_err(|d| {
            let messages: Vec<String> = d.iter().map(|d| d.message.clone()).collect();
            format!(
                "the model cannot run batched: {} (BAT_EXECUTOR=interp runs it with the interpreter)",
                messages.join("; ")
            )
        })?;
        let model = BatchedModel::new(grad_cfg, job.model.clone(), config)
            .map_err(|e| format!("the model's gradient program: {e}"))?;
        Ok(CpuGradients { model })
    }
}

impl GradientBatch for CpuGradients {
    fn log_density_gradient(
        &self,
        lanes: &[usize],
        theta: &[f64],
    ) -> Result<GradientValues, String> {
        // θ and the gradient stay columns both ways (no vector per lane).
        let out = self
            .model
            .log_density_gradient_columns(theta, lanes.len(), true)
            .map_err(|e| e.to_string())?;
        Ok(GradientValues {
            lp: out.lp,
            gradient: out.gradient,
            errors: out.errors,
            work: out.work,
        })
    }
}
