//! bat's CUDA backend.
//!
//! - [`codegen`]: CUDA C for the blocks of a gradient program (PC IR), one
//!   thread per lane, structure-of-arrays lane state.
//! - [`probe`]: is there a CUDA driver and device? Never panics; a machine
//!   without CUDA gets "no CUDA driver found; use --backend cpu".
//! - [`nvrtc`]: compile generated CUDA C to PTX or cubin with NVRTC.
//! - [`gradient`]: the device executor of gradient programs
//!   ([`gradient::GradientDevice`]): lane state resident on the device, a
//!   host loop over blocks that reads back only counts per block.
//! - [`sampler`]: the device executor of a whole program run from one
//!   entry for every lane — bat's sampler program, NUTS itself
//!   ([`sampler::SamplerDevice`]) — with the model's gradient device
//!   answering its gradient calls on the device.
//! - [`device`]: host orchestration through cudarc (context, buffers,
//!   module load, launches over the active lanes).
//! - [`shim`]: build generated kernels with g++ against the CUDA-on-CPU
//!   shim header (`shim/cuda_on_cpu.h`) and a stub `libcuda` that runs them,
//!   so that kernels and host code are verified on machines without a GPU.
//!
//! cudarc loads libcuda and libnvrtc dynamically, so bat builds and runs
//! without a CUDA toolkit.

pub mod codegen;
pub mod device;
pub mod gradient;
pub mod nvrtc;
pub mod probe;
pub mod sampler;
pub mod shim;

pub use probe::{DeviceInfo, Unavailable, probe};
