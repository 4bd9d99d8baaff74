//! Draws files: netCDF-4-compatible HDF5 in ArviZ's InferenceData layout, written
//! incrementally while sampling and read back by `bat summary`.

mod dimscale;
mod error;
mod reader;
mod spec;
mod writer;

pub use dimscale::attached_dimension_names;
pub use error::OutputError;
pub use reader::{DrawFile, StoredVariable, open_hdf5, read_draws};
pub use spec::{Column, Dtype, GroupKind, RunMetadata, VarSpec, sample_stats_specs};
pub use writer::{DrawWriter, WriterOptions};
