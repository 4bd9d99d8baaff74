//! bat's CUDA backend: the CUDA C that [`codegen`] generates for a
//! gradient program or the sampler program (one thread per lane,
//! structure-of-arrays lane state), compiled with NVRTC and run on an
//! NVIDIA GPU. What is not specific to the device — the code generator,
//! the shim that builds its code for the host, the compiled CPU executors
//! (`backend-native`) — lives in other crates.
//!
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
//! - [`device_mode`]: which driver the device tests run against — the
//!   system's driver when it has a real GPU, else the stub libcuda;
//!   `BAT_CUDA_DEVICE=stub` forces the stub, `BAT_CUDA_DEVICE=real` the
//!   GPU (the tests then fail, never fall back to the stub, when there is
//!   none).
//! - [`stub`]: a stub `libcuda` that runs kernels built with g++ against
//!   the CUDA-on-CPU shim header (`codegen::shim`), so that kernels and
//!   host code are verified on machines without a GPU.
//!
//! cudarc loads libcuda and libnvrtc dynamically, so bat builds and runs
//! without a CUDA toolkit.
//!
//! # Tests and benchmark on a real GPU
//!
//! The device tests (`tests/gradient_device.rs`, `tests/sampler_device.rs`,
//! `tests/stub_driver.rs`, `tests/ode_device.rs`, and the root crate's
//! `tests/cuda_cli.rs`) run against the system's driver and GPU when there
//! is one, else against the stub driver ([`device_mode`]);
//! `BAT_CUDA_DEVICE=stub` forces the stub, `BAT_CUDA_DEVICE=real` the
//! GPU: they then fail with the probe's reason when there is none, skip (saying why)
//! what only the stub can do, and compare with the CPU to
//! [`device_mode::REAL_DEVICE_TOLERANCE`] where the stub is exact:
//!
//! ```sh
//! BAT_CUDA_DEVICE=real cargo test -p backend-cuda --test gradient_device \
//!     --test sampler_device --test stub_driver
//! BAT_CUDA_DEVICE=real cargo test --test cuda_cli
//! cargo bench --bench cuda   # grad evals/s, ESS/s, bandwidth %: bat::cuda_bench
//! ```

pub mod device;
pub mod device_mode;
pub mod gradient;
pub mod nvrtc;
pub mod probe;
pub mod sampler;
pub mod stub;

pub use probe::{DeviceInfo, Unavailable, probe};
