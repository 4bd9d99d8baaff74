//! Fuzz targets' shared code: see [`entries`].
pub mod entries;
