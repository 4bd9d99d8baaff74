//! The driver's side of a run: receives [`Event`]s from any executor,
//! buffers each chain's draws and writes them to the draws file in
//! per-chain blocks ([`super::blocks`]: chains whose blocks are complete
//! together in one write), written and flushed as [`super::flushes`] says
//! (a killed run leaves a readable file with every draw but each chain's
//! incomplete block and the blocks completed in the last
//! [`super::flushes::FLUSH_EVERY`]).

use super::Control;
use super::blocks::{self, BLOCK_DRAWS, ChainBuffer};
use super::flushes::Flushes;
use super::target::{EssTarget, Reached, TargetCheck};
use super::{ChainError, DrawValues, Event, InvMetric, Metric, Settings};
use crate::output::{
    Attribute, DrawWriter, GroupKind, OutputError, RunMetadata, RunStatus, VarSpec, WriterOptions,
    room,
};
use language::value::Value;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

/// Where and how to write the draws.
pub struct OutputSpec<'a> {
    pub path: &'a Path,
    pub meta: RunMetadata,
    pub n_chains: usize,
    /// Length of the unconstrained parameter vector (the metric's size).
    pub dim: usize,
    pub settings: &'a Settings,
    /// The executor's [`Control`]: the chains stop when writing fails or
    /// the target is reached, and are held while their draws are checked.
    pub control: Option<&'a Control>,
    /// Stop once the draws reach this (`--target-ess`, `--max-rhat`).
    pub target: Option<EssTarget>,
}

/// What a progress display is told after every iteration of any chain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgressState {
    pub iterations_done: usize,
    pub iterations_total: usize,
    pub warmup_done: usize,
    pub warmup_total: usize,
    /// Divergent transitions after warmup.
    pub divergences: usize,
    /// Mean accept_stat of the iterations after warmup (NaN before).
    pub mean_accept_stat: f64,
    pub chains_finished: usize,
}

pub trait Progress {
    fn update(&mut self, state: &ProgressState);
    /// Chain `chain` printed `lines` computing a kept draw (in the chain's
    /// draw order).
    fn printed(&mut self, chain: usize, lines: &[String]);
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct RunReport {
    pub chain_errors: Vec<ChainError>,
    pub divergences: usize,
    /// Post-warmup iterations whose tree reached the maximum depth.
    pub max_depth_hits: usize,
    pub gradient_evaluations: u64,
    /// How full the batched gradient evaluations were (batched executors).
    pub batches: super::BatchTotals,
    /// Post-warmup draws written over all chains.
    pub draws_written: usize,
    /// The draws file exists (at least one draw was kept).
    pub wrote_file: bool,
    /// Writing the draws failed (a full disk, a read-only file system...);
    /// the file keeps what was written before.
    pub write_failure: Option<WriteFailure>,
    /// With a target: whether and where the draws reached it.
    pub target: Option<TargetOutcome>,
}

/// How a run with a target ([`OutputSpec::target`]) ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TargetOutcome {
    pub target: EssTarget,
    /// The check that found the draws enough; `None`: the run made its
    /// `--samples` (or was stopped) without reaching the target.
    pub reached: Option<Reached>,
    /// Checks made, and the seconds they took in all.
    pub checks: usize,
    pub check_seconds: f64,
}

/// A write the file system refused, and what the file holds after it.
#[derive(Debug)]
pub struct WriteFailure {
    pub error: OutputError,
    /// What the error means, in words (`the disk is full`), when known.
    pub in_words: Option<&'static str>,
    /// Per chain, the post-warmup draws the file holds.
    pub draws_per_chain: Vec<usize>,
    /// Per chain, the warmup draws the file holds (with `--save-warmup`).
    pub warmup_per_chain: Option<Vec<usize>>,
    /// Closing the file failed too: it may not be readable.
    pub close_error: Option<OutputError>,
}

impl WriteFailure {
    fn new(error: OutputError) -> WriteFailure {
        WriteFailure {
            in_words: refusal_of(&error),
            error,
            draws_per_chain: Vec::new(),
            warmup_per_chain: None,
            close_error: None,
        }
    }
}

/// What a write error means in words, when it is a refusal of the disk.
pub fn refusal_of(error: &OutputError) -> Option<&'static str> {
    match error {
        OutputError::Refused { source, .. } | OutputError::Io { source, .. } => {
            source.raw_os_error().and_then(room::refusal_in_words)
        }
        OutputError::Hdf5(e) => {
            room::errno_in_message(&e.to_string()).and_then(room::refusal_in_words)
        }
        _ => None,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("cannot write `{0}`: {1}")]
    Value(String, String),
}

/// Receives events until the executor is done (every sender of `events`
/// is gone), writing kept draws to `output.path`.
pub fn collect(
    events: Receiver<Event>,
    output: &OutputSpec<'_>,
    progress: &mut dyn Progress,
) -> Result<RunReport, CollectError> {
    let settings = output.settings;
    let n_chains = output.n_chains;
    let mut writer: Option<DrawWriter> = None;
    let mut written = Written::new(Arc::new([]));
    // Per phase (warmup, sampling), per chain.
    let mut buffers: [Vec<ChainBuffer>; 2] =
        std::array::from_fn(|_| (0..n_chains).map(|_| ChainBuffer::default()).collect());
    let mut finished = vec![false; n_chains];
    let mut step_sizes = vec![f64::NAN; n_chains];
    // A dense metric is the run's (every chain's: pooled warmup's); its
    // chains report the unit diagonal of their whitened coordinates.
    let dense_metric = dense_inv_metric(settings, output.dim);
    let metric_len = dense_metric.as_ref().map_or(output.dim, |m| m.len());
    let mut inv_metrics = vec![f64::NAN; n_chains * metric_len];
    let dense = dense_metric.is_some();
    let mut state = ProgressState {
        iterations_total: n_chains * (settings.num_warmup + settings.num_samples),
        warmup_total: n_chains * settings.num_warmup,
        mean_accept_stat: f64::NAN,
        ..Default::default()
    };
    let mut accept_sum = 0.0;
    let mut accept_count = 0usize;
    let mut report = RunReport::default();
    let mut target = output.target.map(|t| TargetCheck::new(t, n_chains));
    let mut flushes = Flushes::default();
    // A write failed: nothing more is written, the chains are stopped.
    let mut failure: Option<WriteFailure> = None;
    // The events of the last `Event::Many` not handled yet.
    let mut pending = Vec::new().into_iter();
    loop {
        let event = match pending.next() {
            Some(event) => event,
            None if state.chains_finished < n_chains => {
                // Every event received so far is handled: the complete
                // blocks are written and flushed once due, waiting for
                // more events at most until then.
                let wait = match (writer.as_mut(), flushes.due_in(Instant::now())) {
                    (Some(w), Some(left)) if left.is_zero() => {
                        if failure.is_none() {
                            match write_ready(w, &mut buffers, &finished) {
                                Ok(n) => report.draws_written += n,
                                Err(error) => failure = Some(stop_writing(error, output)),
                            }
                        }
                        flushes.done();
                        None
                    }
                    (Some(_), left) => left,
                    (None, _) => None,
                };
                let received = match wait {
                    Some(left) => events.recv_timeout(left),
                    None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
                };
                match received {
                    Ok(event) => event,
                    // Due now: written above on the next turn.
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            // Every chain has finished: what the executor still sends (its
            // gradient totals may come after its chains' ends) counts too,
            // until it is done and its senders are gone.
            None => match events.recv() {
                Ok(event) => event,
                Err(_) => break,
            },
        };
        match event {
            Event::Many(many) => pending = many.into_iter(),
            Event::Iteration { chain, record } => {
                state.iterations_done += 1;
                if !record.warmup && target.as_ref().is_some_and(|t| !t.wants(chain)) {
                    // Past the draws that reached the target: the chain
                    // is being stopped, and nothing of it is kept.
                    progress.update(&state);
                    continue;
                }
                if record.warmup {
                    state.warmup_done += 1;
                } else {
                    accept_sum += record.stats.accept_stat;
                    accept_count += 1;
                    state.mean_accept_stat = accept_sum / accept_count as f64;
                    state.divergences += usize::from(record.stats.divergent);
                    report.max_depth_hits +=
                        usize::from(record.stats.tree_depth >= settings.max_depth as i64);
                }
                if failure.is_some() {
                    // Nothing more is kept once a write failed.
                } else if let Some(values) = &record.values {
                    if writer.is_none() {
                        let specs: Arc<[VarSpec]> = match values {
                            DrawValues::Named(values) => specs_of(values)?.into(),
                            DrawValues::Stored { layout, .. } => layout.clone(),
                        };
                        let mut w = create_writer(output, &specs)?;
                        w.defer_flushes();
                        // The adapted step sizes and metrics, at the end.
                        let closing = 16 * (output.n_chains as u64 + 1) * (metric_len as u64 + 1);
                        w.keep_for_closing(closing)?;
                        writer = Some(w);
                        written = Written::new(specs);
                    }
                    let buffer = &mut buffers[blocks::phase(&record)][chain];
                    let numbers = match values {
                        DrawValues::Named(values) => {
                            let values = without_tuples(values);
                            buffer.push(&values, record.stats);
                            target.as_ref().map(|_| {
                                let mut numbers = Vec::with_capacity(written.elements);
                                for (_, value) in values.iter() {
                                    value.flatten_row_major(&mut numbers);
                                }
                                std::borrow::Cow::Owned(numbers)
                            })
                        }
                        DrawValues::Stored { layout, numbers } => {
                            written.check(layout, numbers, chain)?;
                            buffer.push_stored(layout, numbers, record.stats);
                            Some(std::borrow::Cow::Borrowed(&numbers[..]))
                        }
                    };
                    let buffered = buffer.len();
                    if let (Some(check), Some(numbers), false) =
                        (target.as_mut(), numbers, record.warmup)
                        && check.add(chain, &numbers, record.stats.lp)
                    {
                        // The chains wait while their draws are checked.
                        let held = output.control.map(Control::hold);
                        if check.check_now().is_some()
                            && let Some(control) = output.control
                        {
                            // Every chain has the draws: the rest are not needed.
                            control.stop();
                        }
                        drop(held);
                    }
                    if buffered.is_multiple_of(BLOCK_DRAWS) {
                        flushes.block_ready(Instant::now());
                    }
                }
                if !record.printed.is_empty() {
                    progress.printed(chain, &record.printed);
                }
                progress.update(&state);
            }
            Event::Adaptation {
                chain,
                step_size,
                inv_metric,
            } => {
                step_sizes[chain] = step_size;
                let metric = dense_metric.as_deref().unwrap_or(&inv_metric);
                if metric.len() == metric_len {
                    inv_metrics[chain * metric_len..(chain + 1) * metric_len]
                        .copy_from_slice(metric);
                }
            }
            // Only pooled warmup's segments use them.
            Event::Trajectory { .. } => {}
            Event::Batches(totals) => report.batches.add(totals),
            Event::Finished { chain, result } => {
                state.chains_finished += 1;
                match result {
                    Ok(totals) => report.gradient_evaluations += totals.gradient_evaluations,
                    Err(error) => report.chain_errors.push(error),
                }
                finished[chain] = true;
                if buffers.iter().any(|phase| phase[chain].len() > 0) {
                    flushes.block_ready(Instant::now());
                }
                progress.update(&state);
            }
        }
    }
    report.divergences = state.divergences;
    report.target = target.as_ref().map(|check| TargetOutcome {
        target: check.target(),
        reached: check.reached(),
        checks: check.checks,
        check_seconds: check.seconds,
    });
    let reached = target.as_ref().and_then(TargetCheck::reached);
    if reached.is_some() {
        // The chains stopped because the target was reached: no errors.
        report.chain_errors.retain(|e| !e.interrupted);
    }
    if let Some(mut w) = writer {
        // Every chain's last draws, also of chains that never finished.
        if failure.is_none() {
            match write_ready(&mut w, &mut buffers, &vec![true; n_chains]) {
                Ok(n) => report.draws_written += n,
                Err(error) => failure = Some(stop_writing(error, output)),
            }
        }
        if let Some(mut failed) = failure {
            // Close with every block written before the failure.
            let kept = w.keep_written();
            let reason = match failed.in_words {
                Some(words) => format!("{words}: {}", failed.error),
                None => failed.error.to_string(),
            };
            let closed = kept
                .and_then(|()| w.set_status(RunStatus::Failed, &reason))
                .and_then(|()| w.write_adaptation(&step_sizes, &inv_metrics, dense));
            failed.draws_per_chain = w
                .draws_per_chain(GroupKind::Posterior)
                .map(<[usize]>::to_vec)
                .unwrap_or_default();
            failed.warmup_per_chain = w
                .draws_per_chain(GroupKind::WarmupPosterior)
                .map(<[usize]>::to_vec);
            report.draws_written = failed.draws_per_chain.iter().sum();
            // Closing is tried even when the steps before it failed.
            failed.close_error = closed.and(w.finish()).err();
            report.write_failure = Some(failed);
            report.wrote_file = true;
            report.chain_errors.sort_by_key(|e| e.chain);
            return Ok(report);
        }
        let interrupted = report.chain_errors.iter().any(|e| e.interrupted);
        if let Some(reached) = reached {
            // Chains ahead when the target was reached have draws past
            // it: every chain keeps exactly the draws that reached it.
            for group in [GroupKind::Posterior, GroupKind::SampleStats] {
                w.truncate_draws(group, reached.draws)?;
            }
            report.draws_written = n_chains * reached.draws;
        } else if interrupted {
            // Keep the draws every chain has, so that no chain is padded.
            for (phase, groups) in [
                [GroupKind::WarmupPosterior, GroupKind::WarmupSampleStats],
                [GroupKind::Posterior, GroupKind::SampleStats],
            ]
            .into_iter()
            .enumerate()
            {
                let common = buffers[phase].iter().map(|b| b.start).min().unwrap_or(0);
                for group in groups {
                    if w.n_draws(group).is_some() {
                        w.truncate_draws(group, common)?;
                    }
                }
            }
            report.draws_written = n_chains * buffers[1].iter().map(|b| b.start).min().unwrap_or(0);
            w.set_status(RunStatus::Interrupted, "stopped before the chains finished")?;
        } else if let Some(error) = report.chain_errors.iter().min_by_key(|e| e.chain) {
            let reason = format!("chain {}: {}", error.chain + 1, error.error.message);
            w.set_status(RunStatus::Failed, &reason)?;
        }
        if let Some(outcome) = &report.target {
            let kept = (w.draws_per_chain(GroupKind::Posterior))
                .and_then(|counts| counts.iter().copied().min())
                .unwrap_or(0);
            w.set_attributes(&stop_attributes(outcome, interrupted, kept))?;
        }
        w.write_adaptation(&step_sizes, &inv_metrics, dense)?;
        w.finish()?;
        report.wrote_file = true;
    }
    report.chain_errors.sort_by_key(|e| e.chain);
    Ok(report)
}

/// The d×d inverse metric (row-major) of every chain of a run with a
/// dense metric: pooled warmup's, or the unit metric without warmup.
fn dense_inv_metric(settings: &Settings, dim: usize) -> Option<Arc<[f64]>> {
    if settings.metric != Metric::Dense {
        return None;
    }
    let metric = match &settings.kernel {
        Some(kernel) => kernel.inv_metric.clone(),
        None => InvMetric::unit(Metric::Dense, dim),
    };
    match metric {
        InvMetric::Dense { matrix, .. } => Some(matrix),
        InvMetric::Diag(_) => None,
    }
}

/// The attributes that say why a run with a target stopped: `stop_reason`
/// (`target_reached`, `num_samples_reached` or `interrupted`), the target
/// (`target_ess_bulk`, `target_max_rhat`), the draws per chain kept
/// (`stop_draws_per_chain`) and, when reached, the smallest ESS_bulk and
/// largest R-hat of those draws (`stop_min_ess_bulk`, `stop_max_rhat`).
fn stop_attributes(
    outcome: &TargetOutcome,
    interrupted: bool,
    kept: usize,
) -> Vec<(&'static str, Attribute<'static>)> {
    let reason = match (outcome.reached, interrupted) {
        (Some(_), _) => "target_reached",
        (None, true) => "interrupted",
        (None, false) => "num_samples_reached",
    };
    let mut attributes = vec![
        ("stop_reason", Attribute::Text(reason)),
        (
            "target_ess_bulk",
            Attribute::Real(outcome.target.min_ess_bulk),
        ),
        ("target_max_rhat", Attribute::Real(outcome.target.max_rhat)),
        ("stop_draws_per_chain", Attribute::Int(kept as i64)),
    ];
    if let Some(reached) = outcome.reached {
        attributes.push(("stop_min_ess_bulk", Attribute::Real(reached.min_ess_bulk)));
        attributes.push(("stop_max_rhat", Attribute::Real(reached.max_rhat)));
    }
    attributes
}

/// After a failed write: stops the chains (nothing more can be kept).
fn stop_writing(error: CollectError, output: &OutputSpec<'_>) -> WriteFailure {
    if let Some(control) = output.control {
        control.stop();
    }
    let error = match error {
        CollectError::Output(e) => e,
        CollectError::Value(what, why) => OutputError::InvalidWrite(format!("{what}: {why}")),
    };
    WriteFailure::new(error)
}

/// Writes the complete blocks of both phases (warmup first), then flushes
/// the file; returns the post-warmup draws written.
fn write_ready(
    writer: &mut DrawWriter,
    buffers: &mut [Vec<ChainBuffer>; 2],
    finished: &[bool],
) -> Result<usize, CollectError> {
    let mut written = 0;
    for (phase, buffers) in buffers.iter_mut().enumerate() {
        written += blocks::write_ready(writer, buffers, finished, phase == 0)?;
    }
    writer.flush()?;
    Ok(written)
}

impl DrawValues {
    /// These values as the draws file stores them: a draw by name taken
    /// apart as the collector takes it apart.
    pub fn into_stored(self) -> Result<DrawValues, CollectError> {
        match self {
            DrawValues::Named(values) => {
                let layout: Arc<[VarSpec]> = specs_of(&values)?.into();
                let mut numbers = Vec::new();
                for (_, value) in without_tuples(&values).iter() {
                    value.flatten_row_major(&mut numbers);
                }
                Ok(DrawValues::Stored { layout, numbers })
            }
            stored => Ok(stored),
        }
    }
}

/// The variables the file was created with, and the layouts of stored
/// draws found equal to them (one per executor thread, typically: compared
/// by pointer after the first draw).
struct Written {
    specs: Arc<[VarSpec]>,
    elements: usize,
    equal: Vec<Arc<[VarSpec]>>,
}

impl Written {
    fn new(specs: Arc<[VarSpec]>) -> Written {
        let elements = specs.iter().map(VarSpec::elements_per_draw).sum();
        Written {
            equal: vec![specs.clone()],
            specs,
            elements,
        }
    }

    /// A draw of `chain` given as stored numbers fits the file.
    fn check(
        &mut self,
        layout: &Arc<[VarSpec]>,
        numbers: &[f64],
        chain: usize,
    ) -> Result<(), CollectError> {
        let mismatch = || stored_mismatch(&self.specs, self.elements, layout, numbers, chain);
        if !self.equal.iter().any(|e| Arc::ptr_eq(e, layout)) {
            if self.specs != *layout {
                return mismatch();
            }
            self.equal.push(layout.clone());
        }
        if numbers.len() != self.elements {
            return mismatch();
        }
        Ok(())
    }
}

/// The error for a stored draw of `chain` that does not fit the file.
fn stored_mismatch(
    written: &[VarSpec],
    elements: usize,
    layout: &[VarSpec],
    numbers: &[f64],
    chain: usize,
) -> Result<(), CollectError> {
    let names = |specs: &[VarSpec]| {
        (specs.iter())
            .map(|v| format!("{}{:?}", v.name, v.dims))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(CollectError::Value(
        format!("chain {chain}'s draw"),
        format!(
            "expected the variables {} ({elements} numbers), found {} ({} numbers)",
            names(written),
            names(layout),
            numbers.len()
        ),
    ))
}

/// The variables the draws file stores for a draw given by name.
pub fn draw_specs(values: &[(String, Value)]) -> Result<Vec<VarSpec>, CollectError> {
    specs_of(values)
}

/// The stored variables of a draw given by name.
fn specs_of(values: &[(String, Value)]) -> Result<Vec<VarSpec>, CollectError> {
    without_tuples(values)
        .iter()
        .map(|(name, value)| var_spec(name, value))
        .collect()
}

fn create_writer(output: &OutputSpec<'_>, specs: &[VarSpec]) -> Result<DrawWriter, CollectError> {
    let (warmup, sampling) = output.settings.kept_draws();
    let options = WriterOptions {
        n_chains: output.n_chains,
        n_draws_planned: sampling.max(1),
        n_warmup_planned: output.settings.save_warmup.then_some(warmup.max(1)),
    };
    Ok(DrawWriter::create_with(
        output.path,
        &output.meta,
        specs,
        &options,
    )?)
}

/// The stored shape of a value ([`Value::stored_dims`]).
fn var_spec(name: &str, value: &Value) -> Result<VarSpec, CollectError> {
    match value.stored_dims() {
        Some((dims, true)) => Ok(VarSpec::int(name, &dims)),
        Some((dims, false)) => Ok(VarSpec::real(name, &dims)),
        // `without_tuples` split every tuple into its components first.
        None => Err(CollectError::Value(
            name.to_string(),
            "internal error: a tuple left unsplit".into(),
        )),
    }
}

/// `values` with every tuple-valued variable replaced by one variable per
/// component, named as Stan names them (`t.1`, `t.2`; nested `t.2.1`); an
/// array of tuples gives arrays of the components (`a.1` holds every
/// element's first component). Borrowed unchanged when there is no tuple.
fn without_tuples(values: &[(String, Value)]) -> std::borrow::Cow<'_, [(String, Value)]> {
    if !values.iter().any(|(_, v)| has_tuple(v)) {
        return std::borrow::Cow::Borrowed(values);
    }
    let mut out = Vec::new();
    for (name, value) in values {
        split_tuple(name.clone(), value.clone(), &mut out);
    }
    std::borrow::Cow::Owned(out)
}

fn has_tuple(value: &Value) -> bool {
    matches!(innermost(value), Value::Tuple(_))
}

fn split_tuple(name: String, value: Value, out: &mut Vec<(String, Value)>) {
    let n_components = match innermost(&value) {
        Value::Tuple(items) => items.len(),
        _ => {
            out.push((name, value));
            return;
        }
    };
    for k in 0..n_components {
        split_tuple(format!("{name}.{}", k + 1), component(&value, k), out);
    }
}

/// Component `k` of a tuple, or of every tuple of an array of tuples.
fn component(value: &Value, k: usize) -> Value {
    match value {
        Value::Tuple(items) => items.get(k).cloned().unwrap_or(Value::Real(f64::NAN)),
        Value::Array(elems) => Value::Array(elems.iter().map(|e| component(e, k)).collect()),
        other => other.clone(),
    }
}

fn innermost(value: &Value) -> &Value {
    match value {
        Value::Array(items) => items.first().map_or(value, innermost),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        BatchTotals, ChainTotals, DrawRecord, DrawValues, Event, SampleStats, Settings,
    };
    use super::{OutputSpec, collect};
    use crate::output::{RunMetadata, VarSpec};
    use std::sync::Arc;

    struct Quiet;
    impl super::Progress for Quiet {
        fn update(&mut self, _: &super::ProgressState) {}
        fn printed(&mut self, _: usize, _: &[String]) {}
    }

    /// An executor's totals sent after its last chain finished still count
    /// (a native run once reported none of its gradient evaluations so).
    #[test]
    fn totals_after_the_last_chain_finished_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.h5");
        let settings = Settings::stan_defaults(1, 1, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        for chain in 0..2 {
            let result = Ok(ChainTotals {
                gradient_evaluations: 3,
            });
            tx.send(Event::Finished { chain, result }).unwrap();
        }
        let totals = BatchTotals {
            calls: 6,
            lanes: 6,
            slots: 6,
            ..BatchTotals::default()
        };
        tx.send(Event::Batches(totals)).unwrap();
        drop(tx);
        let report = collect(rx, &spec(&path, &settings, 2), &mut Quiet).unwrap();
        assert_eq!(report.batches, totals);
        assert_eq!(report.gradient_evaluations, 6);
    }

    /// The output of a run of `n_chains` chains of a one-parameter model.
    fn spec<'a>(
        path: &'a std::path::Path,
        settings: &'a Settings,
        n_chains: usize,
    ) -> OutputSpec<'a> {
        OutputSpec {
            path,
            meta: RunMetadata {
                model_name: "m".into(),
                model_source: String::new(),
                data_path: None,
                seed: 1,
                settings_json: "{}".into(),
            },
            n_chains,
            dim: 1,
            settings,
            control: None,
            target: None,
        }
    }

    /// Chain `chain`'s kept draw of `layout` with `numbers`.
    fn stored(chain: usize, layout: &Arc<[VarSpec]>, numbers: Vec<f64>) -> Event {
        let stats = SampleStats {
            lp: -1.0,
            accept_stat: 0.9,
            step_size: 0.5,
            tree_depth: 2,
            n_leapfrog: 3,
            divergent: false,
            energy: 1.5,
        };
        Event::Iteration {
            chain,
            record: DrawRecord {
                warmup: false,
                stats,
                values: Some(DrawValues::Stored {
                    layout: layout.clone(),
                    numbers,
                }),
                printed: Vec::new(),
                point: None,
            },
        }
    }

    /// Draws given as stored numbers are written as they are, variable by
    /// variable, from layouts equal but not shared;
    /// a draw of other variables, or of too few numbers, is an error naming
    /// its chain and both sets of variables.
    #[test]
    fn stored_draws_are_written_and_checked_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::stan_defaults(1, 1, 1);
        let layout = |name: &str| -> Arc<[VarSpec]> {
            vec![VarSpec::real("mu", &[]), VarSpec::real(name, &[2, 2])].into()
        };
        let path = dir.path().join("ok.h5");
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(stored(0, &layout("m"), vec![1.0, 2.0, 3.0, 4.0, 5.0]))
            .unwrap();
        tx.send(stored(1, &layout("m"), vec![6.0, 7.0, 8.0, 9.0, 10.0]))
            .unwrap();
        for chain in 0..2 {
            let result = Ok(ChainTotals {
                gradient_evaluations: 1,
            });
            tx.send(Event::Finished { chain, result }).unwrap();
        }
        drop(tx);
        collect(rx, &spec(&path, &settings, 2), &mut Quiet).unwrap();
        let file = crate::output::read_draws(&path).unwrap();
        let m = file.posterior.iter().find(|v| v.name == "m").unwrap();
        assert_eq!(m.dims, [2, 2]);
        assert_eq!(m.values, [2.0, 3.0, 4.0, 5.0, 7.0, 8.0, 9.0, 10.0]);

        for (bad, found) in [
            (
                stored(1, &layout("other"), vec![0.0; 5]),
                "mu[], other[2, 2] (5 numbers)",
            ),
            (
                stored(1, &layout("m"), vec![0.0; 4]),
                "mu[], m[2, 2] (4 numbers)",
            ),
        ] {
            let path = dir.path().join("bad.h5");
            let (tx, rx) = std::sync::mpsc::channel();
            tx.send(stored(0, &layout("m"), vec![0.0; 5])).unwrap();
            tx.send(bad).unwrap();
            drop(tx);
            let error = collect(rx, &spec(&path, &settings, 2), &mut Quiet).unwrap_err();
            let text = error.to_string();
            assert!(text.contains("chain 1's draw"), "{text}");
            assert!(
                text.contains("expected the variables mu[], m[2, 2] (5 numbers)"),
                "{text}"
            );
            assert!(text.contains(&format!("found {found}")), "{text}");
        }
    }
}
