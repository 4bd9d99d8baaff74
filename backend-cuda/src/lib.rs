//! CUDA backend for bat's batching IRs (issue: CUDA backend). Not
//! implemented yet.
