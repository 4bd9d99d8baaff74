//! Where a batched run's time goes, op by op: a developer switch
//! (`BAT_PROFILE_OPS=1`, or [`set_enabled`]) that times every op the
//! executors run — each statement, argument, result, variable-stack push
//! and pop, and host call — and [`report`]s the costliest with how often
//! they ran, for how many lanes, and in how wide a batch. Off, it costs
//! one flag test per op.
//!
//! Why: a sampler's run is spread over a few hundred ops between two
//! gradient evaluations, each costing a few microseconds; `perf` shows the
//! kernels (copies, merges, allocation) but not which statements of the
//! program pay for them. This profile is how NUTS's `build_tree` result
//! (an 18-component tuple merged into the function's result variable while
//! other chains still wait to read theirs) showed up as its costliest op.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that turns the profile on.
pub const PROFILE_VAR: &str = "BAT_PROFILE_OPS";

/// 0: not read yet; 1: off; 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);

static ENTRIES: Mutex<Option<HashMap<usize, Entry>>> = Mutex::new(None);

/// The totals of one op.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    /// What the op is (its printed form).
    pub label: String,
    pub runs: u64,
    pub time: Duration,
    /// Running lanes, summed over runs.
    pub lanes: u64,
    /// Batch width (Z), summed over runs.
    pub width: u64,
}

/// Whether ops are being timed.
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os(PROFILE_VAR).is_some_and(|v| !v.is_empty() && v != "0");
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        s => s == 2,
    }
}

/// Turn the profile on or off (whatever the environment says).
pub fn set_enabled(on: bool) {
    STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

thread_local! {
    /// Host calls this thread is inside: the ops a host call runs (a
    /// sampler's gradient program) count as the call, not on their own.
    static NESTED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A started timing of one op, when profiling (and not inside a host
/// call, see [`inside_host_call`]).
pub(crate) fn start() -> Option<Instant> {
    (enabled() && NESTED.with(|n| n.get()) == 0).then(Instant::now)
}

/// Run `f` (a host call) with the ops it runs not timed on their own.
pub(crate) fn inside_host_call<R>(f: impl FnOnce() -> R) -> R {
    if !enabled() {
        return f();
    }
    NESTED.with(|n| n.set(n.get() + 1));
    let r = f();
    NESTED.with(|n| n.set(n.get() - 1));
    r
}

/// Add one run of the op at `key` (its address in the program, the same
/// for every thread) started at `started` (from [`start`]), over `lanes`
/// running lanes of a batch of `width`; `label` names it the first time.
pub(crate) fn record(
    started: Option<Instant>,
    key: *const (),
    label: impl FnOnce() -> String,
    lanes: usize,
    width: usize,
) {
    let Some(started) = started else { return };
    let time = started.elapsed();
    let mut entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
    let entry = entries
        .get_or_insert_with(HashMap::new)
        .entry(key as usize)
        .or_insert_with(|| Entry {
            label: label(),
            ..Entry::default()
        });
    entry.runs += 1;
    entry.time += time;
    entry.lanes += lanes as u64;
    entry.width += width as u64;
}

/// Every op timed so far, costliest first; the totals are cleared.
pub fn take() -> Vec<Entry> {
    let entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut all: Vec<Entry> = entries.into_iter().flat_map(|m| m.into_values()).collect();
    all.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.label.cmp(&b.label)));
    all
}

/// A table of the `top` costliest of `entries` ([`take`]) and their
/// share of the total time.
pub fn report(entries: &[Entry], top: usize) -> String {
    let total: Duration = entries.iter().map(|e| e.time).sum();
    let mut out = format!(
        "op profile ({} ops, {:.3} s in ops; costliest first)\n{:>9} {:>6} {:>10} {:>9} {:>7} {:>7}  op\n",
        entries.len(),
        total.as_secs_f64(),
        "ms",
        "share",
        "runs",
        "µs/run",
        "lanes",
        "width",
    );
    for e in entries.iter().take(top) {
        let runs = e.runs.max(1) as f64;
        let label: String = e.label.split_whitespace().collect::<Vec<_>>().join(" ");
        let label: String = label.chars().take(100).collect();
        out.push_str(&format!(
            "{:>9.1} {:>5.1}% {:>10} {:>9.2} {:>7.0} {:>7.0}  {}\n",
            e.time.as_secs_f64() * 1e3,
            100.0 * e.time.as_secs_f64() / total.as_secs_f64().max(f64::MIN_POSITIVE),
            e.runs,
            e.time.as_secs_f64() * 1e6 / runs,
            e.lanes as f64 / runs,
            e.width as f64 / runs,
            label,
        ));
    }
    out
}
