//! bat's compiled CPU executors (`--backend native`, the default of
//! `bat run` where g++ is installed): the CUDA C that [`codegen`]
//! generates, compiled for the host CPU with g++ against the CUDA-on-CPU
//! shim header and run in this process, one loop iteration per lane where
//! the device runs one thread per lane. Same code generator, same lane
//! model, so it runs exactly the models `--backend cuda` runs and gives
//! backend-cpu's results bit for bit.
//!
//! - [`gradient`]: [`gradient::NativeGradient`], a model's gradient
//!   program compiled for the host and evaluated lane by lane
//!   (`bat bench --backend native`); compiled libraries cached by a hash
//!   of their source and flags, quick builds first while the `-O3` builds
//!   compile ([`gradient::Optimization`]).
//! - [`sampler`]: [`sampler::NativeSampler`], bat's sampler program
//!   (NUTS itself) compiled so too, its gradient calls answered by the
//!   compiled gradient program in place (`bat run --backend native`).
//! - `lane_state`: the lane-major state both run on.

pub mod gradient;
mod lane_state;
pub mod sampler;
