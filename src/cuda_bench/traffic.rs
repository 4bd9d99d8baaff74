//! How many bytes of device memory one lane's gradient evaluation moves,
//! for the benchmark's fraction of peak memory bandwidth.
//!
//! A model, not a count: the generated kernels' loads and stores depend on
//! the lane's path through the program (loops, branches, AD stack depth),
//! which no static count sees. The model charges what an evaluation cannot
//! avoid: every slot of the lane's state (variables, AD stacks at their
//! capacity, scratch) read once and written once, and the values shared
//! by all lanes (data) read once per batch, split over its lanes. Caches
//! serve repeated reads and unused stack capacity is never touched, so the
//! real traffic can be larger or smaller; the figure says which way the
//! program leans, not how close to the hardware it runs.

use codegen::Layout;

/// What the benchmark prints about the bandwidth column.
pub const EXPLANATION: &str = "bandwidth % = B/eval x grad evals/s / peak memory bandwidth; \
     B/eval models one lane's evaluation: its lane-state slots read and written once \
     (16 B each) plus the shared data (8 B per value) read once per batch, split over the lanes";

/// Bytes of device memory one lane's evaluation moves in a batch of
/// `lanes` lanes, by the model above.
pub fn bytes_per_lane_evaluation(layout: &Layout, lanes: usize) -> f64 {
    let lane_state = 2.0 * 8.0 * layout.n_slots() as f64;
    let shared_data = 8.0 * layout.data.len() as f64 / lanes.max(1) as f64;
    lane_state + shared_data
}
