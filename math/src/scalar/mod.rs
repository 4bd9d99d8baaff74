//! Scalar special functions on `f64`, following Stan's math library.
//!
//! Naming: a function `f` with one argument has its derivative rule `f_d`;
//! functions of several arguments return all partials as a tuple from
//! `f_grad`. Integer-valued helpers live in [`integer`].

mod bessel;
pub mod branchless;
mod clib;
mod exp_log;
mod gamma;
mod incomplete;
pub mod integer;
mod normal;

pub use bessel::*;
pub use exp_log::*;
pub use gamma::*;
pub use incomplete::*;
pub use normal::*;

/// log(2π)/2.
pub const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;
/// log(√π).
pub const LOG_SQRT_PI: f64 = 0.572_364_942_924_700_1;
/// √(2π).
pub const SQRT_TWO_PI: f64 = 2.506_628_274_631_000_7;
/// log(machine epsilon), Stan's `LOG_EPSILON`.
pub const LOG_EPSILON: f64 = -36.043_653_389_117_15;
