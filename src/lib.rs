//! The `bat` library: the sampler driver, posterior summaries and HDF5
//! InferenceData output.

pub mod output;
pub mod sampler;
pub mod summary;

pub use output::OutputError;
pub use summary::{Format, summarize_file};
