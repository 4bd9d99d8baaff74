//! What the native executor's tests share.

pub mod lanes;
