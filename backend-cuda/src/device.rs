//! Host orchestration through cudarc: context, lane-state buffers on the
//! device, module load, kernel launches over the active lanes.
//!
//! Every generated kernel has the same signature ([`codegen`]'s
//! kernel ABI):
//! `(double* state, const double* data, const int* active, int n_active, int n_lanes)`
//! — `state` is the structure-of-arrays lane state (`state[slot * n_lanes +
//! lane]`), `data` the values shared by all lanes, `active` the lanes to run.
//! One thread runs one active lane.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use crate::nvrtc::Compiled;
use crate::probe::{Unavailable, probe};

/// Threads per block of every lane kernel.
pub const THREADS_PER_BLOCK: u32 = 128;

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error("CUDA driver call failed: {0}")]
    Driver(String),
    #[error("lane state has {got} values, expected {slots} slots x {lanes} lanes")]
    StateShape {
        got: usize,
        slots: usize,
        lanes: usize,
    },
    #[error("active lane {lane} is out of range for {lanes} lanes")]
    ActiveLane { lane: i32, lanes: usize },
}

pub(crate) fn driver(e: cudarc::driver::DriverError) -> DeviceError {
    DeviceError::Driver(format!("{:?}", e.0))
}

/// Device 0 with its default stream.
pub struct Device {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

/// A loaded module's kernels, by name.
pub struct Module {
    kernels: Vec<(String, CudaFunction)>,
}

impl Module {
    pub fn kernel(&self, name: &str) -> Option<&CudaFunction> {
        self.kernels.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
}

/// The lane state of a batch on the device.
pub struct LaneState {
    pub n_lanes: usize,
    pub n_slots: usize,
    state: CudaSlice<f64>,
    data: CudaSlice<f64>,
    active: CudaSlice<i32>,
    n_active: usize,
}

impl Device {
    /// Probe for a driver and device first, so that a machine without CUDA
    /// gets [`Unavailable`] rather than a panic inside cudarc.
    pub fn open() -> Result<Device, DeviceError> {
        probe()?;
        let context = CudaContext::new(0).map_err(driver)?;
        let stream = context.default_stream();
        Ok(Device { context, stream })
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Load a compiled module and look up `kernel_names` in it.
    pub fn load(&self, image: Compiled, kernel_names: &[&str]) -> Result<Module, DeviceError> {
        let ptx = match image {
            Compiled::Ptx(text) => Ptx::from_src(text),
            Compiled::Cubin(bytes) => Ptx::from_binary(bytes),
        };
        let module = self.context.load_module(ptx).map_err(driver)?;
        let kernels = kernel_names
            .iter()
            .map(|&name| {
                Ok((
                    name.to_string(),
                    module.load_function(name).map_err(driver)?,
                ))
            })
            .collect::<Result<_, DeviceError>>()?;
        Ok(Module { kernels })
    }

    /// Copy a batch's lane state (`[slot][lane]`), shared data and active
    /// lanes to the device.
    pub fn upload(
        &self,
        state: &[f64],
        n_lanes: usize,
        data: &[f64],
        active: &[i32],
    ) -> Result<LaneState, DeviceError> {
        if n_lanes == 0 || !state.len().is_multiple_of(n_lanes) {
            return Err(DeviceError::StateShape {
                got: state.len(),
                slots: state.len() / n_lanes.max(1),
                lanes: n_lanes,
            });
        }
        if let Some(&lane) = active.iter().find(|&&l| l < 0 || l as usize >= n_lanes) {
            return Err(DeviceError::ActiveLane {
                lane,
                lanes: n_lanes,
            });
        }
        // Zero-length device buffers are not allocatable; pad with one value.
        let padded = |values: &[f64]| {
            if values.is_empty() {
                vec![0.0]
            } else {
                values.to_vec()
            }
        };
        let active_padded = if active.is_empty() {
            vec![0]
        } else {
            active.to_vec()
        };
        Ok(LaneState {
            n_lanes,
            n_slots: state.len() / n_lanes,
            state: self.stream.clone_htod(state).map_err(driver)?,
            data: self.stream.clone_htod(&padded(data)).map_err(driver)?,
            active: self.stream.clone_htod(&active_padded).map_err(driver)?,
            n_active: active.len(),
        })
    }

    /// Run `kernel` over the active lanes of `lanes`.
    pub fn launch(&self, kernel: &CudaFunction, lanes: &mut LaneState) -> Result<(), DeviceError> {
        if lanes.n_active == 0 {
            return Ok(());
        }
        let n_active = lanes.n_active as i32;
        let n_lanes = lanes.n_lanes as i32;
        let blocks = (lanes.n_active as u32).div_ceil(THREADS_PER_BLOCK);
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (THREADS_PER_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream.launch_builder(kernel);
        launch
            .arg(&mut lanes.state)
            .arg(&lanes.data)
            .arg(&lanes.active)
            .arg(&n_active)
            .arg(&n_lanes);
        // SAFETY: the arguments match the kernel ABI above, and every
        // thread indexes `state` only at lanes listed in `active`, which
        // were checked against `n_lanes` at upload.
        unsafe { launch.launch(config) }.map_err(driver)?;
        Ok(())
    }

    /// Copy the lane state back (`[slot][lane]`), after the stream's work.
    pub fn download(&self, lanes: &LaneState) -> Result<Vec<f64>, DeviceError> {
        let values = self.stream.clone_dtoh(&lanes.state).map_err(driver)?;
        self.stream.synchronize().map_err(driver)?;
        Ok(values)
    }
}
