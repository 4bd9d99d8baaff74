//! bat's batched CPU backend: a batch of Z lanes (chains) stored
//! structure-of-arrays ([`lanes`]), the batched semantics of MIR
//! expressions ([`eval`]) and straight-line statements ([`ops`]), on
//! which the executors of the batching IRs run.
//!
//! The contract of every batched operation: for each active lane, the
//! result (value, error, printed output, target, gradient, stacks,
//! random stream) is exactly what the scalar reference interpreter
//! (`runtime`) gives for that lane alone; inactive lanes are
//! untouched. Shared-matrix × per-lane-vector products run as one
//! lane-parallel matrix product that sums in the interpreter's order, so
//! they are bit-identical too.

pub mod eval;
pub mod exec;
pub mod lanes;
pub mod ops;
pub mod structured;
