//! The `bat` library: the sampler driver, posterior summaries and HDF5
//! InferenceData output, and the CUDA device benchmark.

pub mod cuda_bench;
pub mod output;
pub mod sampler;
pub mod summary;

pub use output::OutputError;
pub use summary::{Format, summarize_file};
