//! External functions (declared without a body, [`FunctionKind::External`])
//! answered by the host for a whole batch: every lane that reaches a call
//! of one in the same block step is served by ONE [`BatchHost`] call. This
//! is where lanes synchronize with the host (e.g. a sampler's chains at
//! gradient granularity).
//!
//! Known difference from the interpreter: an error the host returns has
//! no source span here (the CFG's call terminator carries none); its kind
//! and message are the host's.
//!
//! [`FunctionKind::External`]: language::batch::cfg::FunctionKind::External

use super::LaneResult;
use super::block;
use crate::lanes::{Lanes, Slot, State};
use language::value::Value;
use runtime::{Rng, RuntimeError};
use std::sync::Arc;

/// Answers a batch's external calls.
///
/// One of three ways an executor hands the host an external call, each
/// for its own representation of the arguments (`Host`: the interpreter's
/// values; `BatchHost`: a batch's slots; `RecordHost`: compiled code's
/// record numbers); the `bat` crate's `sampler::host` says why they are
/// not one trait.
pub trait BatchHost {
    /// Answer external function `name` for `lanes` of the batch; `args[k]`
    /// is the k-th argument's slot over all lanes of the batch (read only
    /// `lanes`). Returns one result per lane of `lanes`, in order:
    /// `Ok(Some(v))` the value, `Ok(None)` for a `void` function, `Err`
    /// fails that lane with the error (as the interpreter's host does).
    fn call_external(
        &mut self,
        name: &str,
        lanes: &Lanes,
        args: &[Arc<Slot>],
    ) -> Vec<LaneResult<Option<Value>>>;

    /// As [`BatchHost::call_external`] for a function with a value, the
    /// answer given for the whole batch at once: one slot over all Z lanes
    /// of the batch (read only at the answered lanes) and the lanes that
    /// failed, with their errors. Saves building one [`Value`] per lane
    /// for a host that has its answers in batch layout already (a batched
    /// gradient). `None` (the default): not offered, `call_external` is
    /// used.
    fn call_external_batch(
        &mut self,
        _name: &str,
        _lanes: &Lanes,
        _args: &[Arc<Slot>],
    ) -> Option<BatchAnswer> {
        None
    }

    /// Work for lane `lane` of the batch run by
    /// [`BatchedModel::run_invocations`](super::BatchedModel::run_invocations):
    /// the arguments (and random stream) of the next invocation it runs, or
    /// `None` when there is no more work (the lane stays empty). Asked once
    /// per lane at the start and again each time the lane's invocation
    /// finishes, so a lane whose invocation finished early takes the next
    /// one instead of idling while the others finish theirs.
    fn next_invocation(&mut self, _lane: usize) -> Option<(Vec<Value>, Option<Rng>)> {
        None
    }

    /// Lane `lane`'s invocation (the one its last
    /// [`BatchHost::next_invocation`] gave) finished with `result`: the
    /// function's value (`None` for `void`) or the lane's error.
    fn invocation_finished(&mut self, _lane: usize, _result: LaneResult<Option<Value>>) {}

    /// The program-counter executor is about to shrink the batch to the
    /// lanes still running, `keep` (ascending): lane `keep[i]` becomes lane
    /// `i` of a batch of `keep.len()` lanes, in every later call. Return
    /// `true` once the host has renumbered its own per-lane state the same
    /// way; `false` (the default) keeps the batch as it is.
    fn compact(&mut self, _keep: &[usize]) -> bool {
        false
    }
}

/// An external function's answer for a whole batch
/// ([`BatchHost::call_external_batch`]).
pub struct BatchAnswer {
    /// The value, over all Z lanes of the batch.
    pub value: Slot,
    /// Lanes (of those asked) that failed, with their errors.
    pub failed: Vec<(usize, RuntimeError)>,
}

/// No host: every external call fails its lanes.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHost;

impl BatchHost for NoHost {
    fn call_external(
        &mut self,
        name: &str,
        lanes: &Lanes,
        _args: &[Arc<Slot>],
    ) -> Vec<LaneResult<Option<Value>>> {
        let err = RuntimeError::fatal(format!("external function `{name}` has no host here"));
        lanes.iter().map(|_| Err(err.clone())).collect()
    }
}

/// Call external `name` for the running lanes of `lanes` with `args`
/// through `host`. Lanes it fails are marked failed. With `wants_value`,
/// returns the value slot (over all lanes of the batch; only the lanes
/// still running of `lanes` are meaningful) — a lane answered without a
/// value fails.
pub(super) fn serve(
    host: &mut dyn BatchHost,
    name: &str,
    args: &[Arc<Slot>],
    wants_value: bool,
    st: &mut State,
    lanes: &Lanes,
) -> Option<Arc<Slot>> {
    let lanes = st.running(lanes);
    if lanes.is_empty() {
        return None;
    }
    if wants_value && let Some(answer) = host.call_external_batch(name, &lanes, args) {
        if answer.value.z().is_some_and(|z| z != st.z) {
            let err = RuntimeError::fatal(format!(
                "the host answered `{name}` for {} lanes, the batch has {}",
                answer.value.z().unwrap_or(0),
                st.z
            ));
            block::fail(st, &lanes, &err);
            return None;
        }
        for (l, e) in answer.failed {
            st.fail(l, e);
        }
        return Some(Arc::new(answer.value));
    }
    let results = host.call_external(name, &lanes, args);
    if results.len() != lanes.len() {
        let err = RuntimeError::fatal(format!(
            "the host answered `{name}` for {} lanes, asked for {}",
            results.len(),
            lanes.len()
        ));
        block::fail(st, &lanes, &err);
        return None;
    }
    let mut values: Vec<(usize, Value)> = Vec::with_capacity(lanes.len());
    for (l, result) in lanes.iter().zip(results) {
        match result {
            Ok(Some(v)) => values.push((l, v)),
            Ok(None) if wants_value => {
                st.fail(
                    l,
                    RuntimeError::fatal(format!("`{name}` returned no value")),
                );
            }
            Ok(None) => {}
            Err(e) => st.fail(l, e),
        }
    }
    if !wants_value {
        return None;
    }
    let filler = values.first()?.1.clone();
    // One value per lane of the batch: the answered lanes' own, the
    // filler (never read through the mask) elsewhere.
    let mut all = vec![filler; st.z];
    for (l, v) in values {
        all[l] = v;
    }
    Some(Arc::new(Slot::from_lane_values(all)))
}
