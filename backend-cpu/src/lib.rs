//! Batched CPU executor for bat's batching IRs (issue: batching IRs). Not
//! implemented yet.
