//! The `bat` library: posterior summaries and HDF5 InferenceData output.

pub mod summary;
