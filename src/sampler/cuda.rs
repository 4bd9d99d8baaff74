//! `--backend cuda`: the sampler program runs on the host (the batched
//! executor over all chains, [`super::BatchedExecutor`]) and every batched
//! gradient evaluation the waiting chains ask for is answered by the CUDA
//! device ([`backend_cuda::gradient::GradientDevice`]), each chain one
//! lane of device-resident state. Chain `i`'s draws are the CPU backend's
//! to floating-point tolerance (the device sums in the interpreter's order
//! with IEEE arithmetic; a GPU's `exp`/`log` may differ in the last bits).

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;

use backend_cuda::gradient::{GradientDevice, GradientDeviceError};

use super::gradients::{GradientBatch, GradientValues};
use super::{BatchedExecutor, ChainJob, Event, SamplerExecutor};

/// The model's gradient program on the device, one lane per chain.
pub struct CudaGradients {
    device: Mutex<GradientDevice>,
}

impl CudaGradients {
    /// Generate, compile and load the gradient program of `job`'s model for
    /// `chains` lanes. A model with an op the device cannot run yet is
    /// refused (the error names the ops).
    pub fn new(job: &ChainJob<'_>, chains: usize) -> Result<CudaGradients, GradientDeviceError> {
        let grad_cfg = language::batch::lower_gradient(job.grad).map_err(|d| {
            let messages: Vec<String> = d.iter().map(|d| d.message.clone()).collect();
            GradientDeviceError::Setup(format!(
                "the model cannot run batched: {}",
                messages.join("; ")
            ))
        })?;
        let device = GradientDevice::new(&grad_cfg, job.model.clone(), chains)?;
        Ok(CudaGradients {
            device: Mutex::new(device),
        })
    }
}

impl GradientBatch for CudaGradients {
    fn log_density_gradient(
        &self,
        lanes: &[usize],
        theta: &[f64],
    ) -> Result<GradientValues, String> {
        let mut device = self
            .device
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let n = device.model().num_unconstrained();
        let evaluated = device
            .evaluate(lanes, theta, true)
            .map_err(|e| e.to_string())?;
        let mut out = GradientValues::new(lanes.len(), n);
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
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, stop: &AtomicBool) {
        self.sampler
            .run_with(job, chains, events, stop, Some(&self.gradients));
    }
}
