//! Draws files: netCDF-4-compatible HDF5 in ArviZ's InferenceData layout, written
//! incrementally while sampling and read back by `bat summary`.

mod dimscale;
mod error;
mod reader;
pub mod room;
mod spec;
mod writer;

pub use dimscale::attached_dimension_names;
pub use error::OutputError;
pub use reader::{
    DrawFile, DrawReader, StoredVariable, VariableInfo, open_hdf5, read_draws, stan_element_name,
};
pub use spec::{
    Column, Dtype, GroupKind, RunMetadata, SampleStatsBlock, VarSpec, sample_stats_specs,
};
pub use writer::{
    Attribute, DrawWriter, RunStatus, WriterOptions, estimate_file_bytes, record_stuck_chains,
};
