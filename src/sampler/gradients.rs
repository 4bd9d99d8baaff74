//! The model's gradient evaluated on the host for a batch of chains: the
//! CPU backend's batched gradient program ([`CpuGradients`]) and, for a
//! model that does not batch, the interpreter lane by lane
//! ([`InterpretedGradients`]). Both implement the one gradient interface,
//! [`runtime::gradient::GradientBatch`]; the CUDA device (`super::cuda`)
//! is the other implementation.

use backend_cpu::exec::{BatchedModel, ExecConfig};
use language::mir::GradProgram;
use runtime::Model;
use runtime::gradient::{GradientBatch, GradientValues};

use super::ChainJob;

/// backend-cpu's batched gradient program.
pub struct CpuGradients {
    model: BatchedModel,
    n_params: usize,
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
        Ok(CpuGradients {
            model,
            n_params: job.model.num_unconstrained(),
        })
    }
}

impl GradientBatch for CpuGradients {
    fn n_params(&self) -> usize {
        self.n_params
    }

    fn log_density_gradient(
        &self,
        lanes: &[usize],
        theta: &[f64],
    ) -> Result<GradientValues, String> {
        // θ and the gradient stay columns both ways (no vector per lane).
        (self.model)
            .log_density_gradient_columns(theta, lanes.len(), true)
            .map_err(|e| e.to_string())
    }
}

/// The scalar interpreter's gradient, one lane after another: for a model
/// the CPU backend cannot batch.
pub struct InterpretedGradients {
    pub model: Model,
    pub grad: GradProgram,
}

impl GradientBatch for InterpretedGradients {
    fn n_params(&self) -> usize {
        self.model.num_unconstrained()
    }

    fn log_density_gradient(
        &self,
        lanes: &[usize],
        theta: &[f64],
    ) -> Result<GradientValues, String> {
        let (k, n) = (lanes.len(), self.n_params());
        let mut values = GradientValues::new(k, n);
        for i in 0..k {
            let point: Vec<f64> = (0..n).map(|c| theta[c * k + i]).collect();
            values.set(i, self.model.log_density_gradient(&self.grad, &point, true));
        }
        Ok(values)
    }
}
