//! The `bat` library: the sampler driver, posterior summaries and HDF5
//! InferenceData output, the CUDA device benchmark and the measured
//! sampling runs the benchmarks share.

pub mod allocator;
pub mod cuda_bench;
pub mod measure;
pub mod output;
pub mod sampler;
pub mod summary;

pub use output::OutputError;
pub use summary::{Format, render, summarize_file};
