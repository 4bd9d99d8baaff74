//! Errors of reading and writing draws files.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("file not found: {}", .0.display())]
    FileMissing(PathBuf),
    #[error("{} is not an HDF5 file", .0.display())]
    NotHdf5(PathBuf),
    #[error("{} has no `{group}` group; is it a bat draws file?", .path.display())]
    MissingGroup { path: PathBuf, group: String },
    #[error("{} has no draws in `{group}`", .path.display())]
    NoDraws { path: PathBuf, group: String },
    #[error("invalid draws layout in {}: {message}", .path.display())]
    Layout { path: PathBuf, message: String },
    #[error(
        "cannot group the {chains} chains of {} into {superchains} superchains: --superchains needs at least 2 and at most one superchain per chain",
        .path.display()
    )]
    Superchains {
        path: PathBuf,
        superchains: usize,
        chains: usize,
    },
    #[error("invalid write: {0}")]
    InvalidWrite(String),
    #[error("I/O error on {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} cannot be read as HDF5 (truncated or damaged?): {source}", .path.display())]
    Unreadable { path: PathBuf, source: hdf5::Error },
    /// The disk refused the room a write needs (checked before writing).
    #[error("cannot write {}: {} bytes more do not fit: {source}", .path.display(), .needed)]
    Refused {
        path: PathBuf,
        needed: u64,
        source: std::io::Error,
    },
    #[error("HDF5 error: {0}")]
    Hdf5(#[from] hdf5::Error),
}
