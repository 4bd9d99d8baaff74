//! The batched executors: ALL chains run the sampler program as the lanes
//! of one batch (sub-batches per thread) on `backend-cpu`'s local static or
//! program-counter executor. Chains meet the host at the program's
//! external calls: every lane waiting at `model_log_density_gradient` is
//! answered by ONE batched evaluation of the model's gradient program;
//! `emit_draw` and `emit_adaptation` of all waiting lanes are answered
//! together by the [`Emitter`] (no chain's host locked), their events
//! sent as ONE [`Event::Many`], in lane order: each chain's events are the
//! interpreter executor's, in its order.
//!
//! Lane `i` is chain `chains[i]` with the interpreter executor's arguments
//! and random stream, so its draws are the interpreter executor's
//! (bit for bit, shared-matrix products included) whatever the number of chains, the
//! executor or the split over threads.

use super::executor::{chain_error, chain_start, emitter};
use super::gradients::CpuGradients;
use super::host::{ChainHost, DrawCall, Emitter, INTERRUPTED};
use super::program::{CHAIN_FUNCTION, nuts_program};
use super::{BatchTotals, ChainJob, ChainTotals, Control, DrawValues, Event, SamplerExecutor};
use backend_cpu::exec::{BatchAnswer, BatchHost, BatchedModel, Batching, ExecConfig, LaneResult};
use backend_cpu::lanes::{Dense, Lanes, Slot};
use language::data::DataFile;
use language::data::Shape;
use language::value::Value;
use runtime::gradient::GradientBatch;
use runtime::{Model, RuntimeError};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

/// A draw's values by name, in declaration order.
type NamedValues = Vec<(String, Value)>;
/// A kept draw's values and the lines printed computing them.
type KeptDraw = (NamedValues, Vec<String>);

/// Runs all chains as lanes of one batch.
pub struct BatchedExecutor {
    pub batching: Batching,
    /// Worker threads, each running a sub-batch of the chains (0: one per
    /// core).
    pub threads: usize,
    /// Shared-matrix × per-chain-vector products as one GEMM.
    pub gemm: bool,
    /// Lanes of the batch (all sub-batches together); 0, or more than the
    /// chains: one lane per chain. With fewer lanes than chains (and `pc`
    /// batching) the chains wait in a queue and a lane whose chain is done
    /// starts the next one at once, so the batch stays full while chains
    /// of different lengths finish at different times (local batching
    /// always runs one lane per chain).
    pub lanes: usize,
}

/// The gradient's name in the sampler program.
const GRADIENT: &str = "model_log_density_gradient";

impl SamplerExecutor for BatchedExecutor {
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, control: &Control) {
        self.run_with(job, chains, events, control, None);
    }
}

impl BatchedExecutor {
    /// [`SamplerExecutor::run`] with every batched gradient evaluation
    /// answered by `gradients` (lane `i` is chain `chains[i]`), or by
    /// backend-cpu's gradient program when `None`.
    pub fn run_with(
        &self,
        job: &ChainJob<'_>,
        chains: &[usize],
        events: &Sender<Event>,
        control: &Control,
        gradients: Option<&dyn GradientBatch>,
    ) {
        let mut hosts: Vec<Mutex<ChainHost>> = Vec::with_capacity(chains.len());
        let mut starts = Vec::with_capacity(chains.len());
        for &chain in chains {
            let (host, args, rng) = chain_start(job, chain, events.clone(), control);
            hosts.push(Mutex::new(host));
            starts.push((args, rng));
        }
        let counters = BatchCounters::default();
        let emits = Emits {
            emitter: emitter(job, control),
            chains,
            events,
            draws: self.draws_model(job),
        };
        let results = self.run_lanes(job, &hosts, starts, &emits, &counters, gradients);
        let _ = events.send(Event::Batches(counters.totals()));
        for (i, &chain) in chains.iter().enumerate() {
            let mut host = hosts[i].lock().unwrap_or_else(|e| e.into_inner());
            let result = match &results {
                Ok(lanes) => match &lanes[i] {
                    Ok(_) => Ok(ChainTotals {
                        gradient_evaluations: host.gradient_evaluations,
                    }),
                    Err(error) => Err(chain_error(chain, error.clone(), host.last_error.take())),
                },
                Err(message) => Err(chain_error(
                    chain,
                    RuntimeError::fatal(message.clone()),
                    None,
                )),
            };
            let _ = events.send(Event::Finished { chain, result });
        }
    }

    /// The executor `--backend cpu` runs by default, whose gradient
    /// program's [`BatchedExecutor::config`] other executors evaluate
    /// gradients with for the same values.
    pub(super) fn for_gradients() -> BatchedExecutor {
        BatchedExecutor {
            batching: Batching::ProgramCounter,
            threads: 1,
            gemm: true,
            lanes: 0,
        }
    }

    pub(super) fn config(&self, threads: usize) -> ExecConfig {
        ExecConfig {
            batching: self.batching,
            threads,
            gemm: self.gemm,
            // Masked blocks: gathering only the variables a block uses was
            // measured no faster for the sampler (eight schools, 128 and
            // 1024 chains) and slower for local batching.
            gather_below: 0.0,
            // Every chain that is going to ask for a gradient next gets
            // there before the gradient runs: one batched evaluation
            // serves them all.
            synchronize_at: vec![GRADIENT.to_string()],
            // No block runs while lanes that may still reach it before the
            // next gradient wait upstream (chains returning from different
            // depths of the tree meet at the call site first), so each
            // stretch of the sampler between two gradients runs its blocks
            // with as many chains at once as possible.
            choice: std::sync::Arc::new(backend_cpu::exec::UpstreamFirst),
            ..ExecConfig::default()
        }
    }

    /// The model's transformed parameters and generated quantities as a
    /// batched program, run for all kept draws of an `emit_draw` call at
    /// once (one thread: each sub-batch's host runs it for its own lanes).
    /// `None` if they do not lower to the batching IR; the interpreter
    /// then computes each draw, with the same values (a slower path, not
    /// a different result: both give the interpreter's bits).
    fn draws_model(&self, job: &ChainJob<'_>) -> Option<BatchedModel> {
        let cfg = language::batch::lower_generated_quantities(job.model.program()).ok()?;
        let config = ExecConfig {
            batching: self.batching,
            threads: 1,
            gemm: self.gemm,
            ..ExecConfig::default()
        };
        BatchedModel::new(cfg, job.model.clone(), config).ok()
    }

    /// Every chain's outcome (lane by lane), or why the batch could not run.
    fn run_lanes(
        &self,
        job: &ChainJob<'_>,
        hosts: &[Mutex<ChainHost>],
        starts: Vec<(Vec<Value>, runtime::Rng)>,
        emits: &Emits<'_>,
        counters: &BatchCounters,
        gradients: Option<&dyn GradientBatch>,
    ) -> Result<Vec<LaneResult<Option<Value>>>, String> {
        let program = nuts_program()?;
        let cfg = language::batch::lower(program, &[], 0)
            .map_err(|d| format!("internal error: the sampler program does not batch: {d:?}"))?;
        let sampler_model = Model::new(program, &DataFile::empty()).map_err(|e| e.message)?;
        let threads = match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            t => t,
        };
        let sampler = BatchedModel::new(cfg, sampler_model, self.config(threads))
            .map_err(|e| format!("internal error: the sampler program: {e}"))?;
        let cpu;
        let gradient: &dyn GradientBatch = match gradients {
            Some(g) => g,
            None => {
                // Each sub-batch evaluates its own lanes' gradients on its thread.
                cpu = CpuGradients::new(job, self.config(1))?;
                &cpu
            }
        };
        let lanes = match (self.batching, self.lanes) {
            (Batching::ProgramCounter, l) if l > 0 => l.min(hosts.len()),
            _ => hosts.len(),
        };
        let queue = ChainQueue {
            starts,
            next: AtomicUsize::new(0),
            results: Mutex::new(vec![None; hosts.len()]),
            stop: &emits.emitter.control.stop,
        };
        let n = job.model.num_unconstrained();
        sampler
            .run_invocations(CHAIN_FUNCTION, lanes, |range| SamplerHost {
                lane_chain: vec![None; range.len()],
                hosts,
                emits,
                events: emits.events.clone(),
                queue: &queue,
                gradient,
                n,
                counters,
            })
            .map_err(|e| format!("internal error: the batched sampler: {e}"))?;
        let results = queue
            .results
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        Ok(results
            .into_iter()
            // A chain still waiting when the run stopped never started.
            .map(|r| r.unwrap_or_else(|| Err(RuntimeError::fatal(INTERRUPTED))))
            .collect())
    }
}

/// The chains waiting for a lane, shared by all sub-batches: chain `i`
/// (index into the executor's chains) starts with `starts[i]`; each
/// finished chain's outcome goes to `results[i]`.
struct ChainQueue<'s> {
    starts: Vec<(Vec<Value>, runtime::Rng)>,
    next: AtomicUsize,
    results: Mutex<Vec<Option<LaneResult<Option<Value>>>>>,
    /// Set when the run is stopped: no chain starts after that.
    stop: &'s AtomicBool,
}

/// Counts of the batched gradient evaluations of all sub-batches.
#[derive(Default)]
struct BatchCounters {
    calls: AtomicU64,
    lanes: AtomicU64,
    slots: AtomicU64,
    block_slots: AtomicU64,
    block_useful: AtomicU64,
}

impl BatchCounters {
    fn totals(&self) -> BatchTotals {
        BatchTotals {
            calls: self.calls.load(Ordering::Relaxed),
            lanes: self.lanes.load(Ordering::Relaxed),
            slots: self.slots.load(Ordering::Relaxed),
            gradient_blocks: super::LaneWork {
                slots: self.block_slots.load(Ordering::Relaxed),
                useful: self.block_useful.load(Ordering::Relaxed),
            },
        }
    }
}

/// What answers the emits of every sub-batch: chain `chains[i]` is
/// `hosts[i]`'s.
struct Emits<'a> {
    emitter: Emitter<'a>,
    chains: &'a [usize],
    events: &'a Sender<Event>,
    /// Transformed parameters and generated quantities, batched (see
    /// [`BatchedExecutor::draws_model`]).
    draws: Option<BatchedModel>,
}

/// The host of one sub-batch: lane `i` runs chain `lane_chain[i]` (an
/// index into the executor's chains and `hosts`), taken from `queue`.
struct SamplerHost<'a, 'm> {
    lane_chain: Vec<Option<usize>>,
    hosts: &'a [Mutex<ChainHost<'m>>],
    emits: &'a Emits<'a>,
    /// This sub-batch's sender (one per thread).
    events: Sender<Event>,
    queue: &'a ChainQueue<'a>,
    gradient: &'a dyn GradientBatch,
    /// Unconstrained coordinates of the model.
    n: usize,
    counters: &'a BatchCounters,
}

impl<'m> SamplerHost<'_, 'm> {
    /// The chain lane `lane` runs.
    fn chain(&self, lane: usize) -> usize {
        self.lane_chain[lane].expect("an external call comes from a lane running a chain")
    }

    fn host(&self, lane: usize) -> std::sync::MutexGuard<'_, ChainHost<'m>> {
        self.hosts[self.chain(lane)]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `emit_draw` or `emit_adaptation` (`name`) for all `lanes`: their
    /// events, in lane order, as one message.
    fn emit(
        &self,
        name: &str,
        lanes: &Lanes,
        args: &[Arc<Slot>],
    ) -> Vec<LaneResult<Option<Value>>> {
        let mut batch = Vec::with_capacity(lanes.len());
        let results = if name == "emit_draw" {
            self.emit_draws(lanes, args, &mut batch)
        } else {
            lanes
                .iter()
                .map(|l| {
                    let values = args.iter().map(|a| a.lane_value(l)).collect();
                    let chain = self.emits.chains[self.chain(l)];
                    batch.push(self.emits.emitter.event(name, chain, values)?);
                    Ok(None)
                })
                .collect()
        };
        // A closed channel means the driver has stopped listening.
        let _ = match batch.len() {
            0 => Ok(()),
            1 => self.events.send(batch.pop().expect("one event")),
            _ => self.events.send(Event::Many(batch)),
        };
        results
    }

    /// `emit_draw` for all `lanes`: each lane's event pushed to `batch`
    /// in lane order, the values of all kept draws computed together by
    /// the batched draws program (lane by lane the interpreter's, as
    /// [`Emitter::draw`] would compute them).
    fn emit_draws(
        &self,
        lanes: &Lanes,
        args: &[Arc<Slot>],
        batch: &mut Vec<Event>,
    ) -> Vec<LaneResult<Option<Value>>> {
        let emitter = &self.emits.emitter;
        let mut calls: Vec<(usize, LaneResult<DrawCall>)> = lanes
            .iter()
            .map(|l| {
                let values = args.iter().map(|a| a.lane_value(l)).collect();
                let chain = self.emits.chains[self.chain(l)];
                (chain, emitter.read_draw(values))
            })
            .collect();
        // The kept draws: their calls' indices, streams and points (moved
        // out of the calls, whose events do not need them).
        let (mut kept, mut rngs, mut thetas) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (chain, call)) in calls.iter_mut().enumerate() {
            if let Ok(call) = call
                && call.kept
            {
                kept.push(i);
                rngs.push(emitter.draw_rng(*chain, call));
                thetas.push(std::mem::take(&mut call.theta));
            }
        }
        let mut values: Vec<Option<LaneResult<KeptDraw>>> = vec![None; calls.len()];
        match &self.emits.draws {
            Some(model) if !kept.is_empty() => match model.generated_quantities(&thetas, &rngs) {
                Ok(draws) => {
                    for (&i, draw) in kept.iter().zip(draws) {
                        values[i] = Some(draw.map(|d| (d.values, d.output)));
                    }
                }
                Err(e) => {
                    let error = RuntimeError::fatal(format!(
                        "internal error: the batched generated quantities: {e}"
                    ));
                    for &i in &kept {
                        values[i] = Some(Err(error.clone()));
                    }
                }
            },
            _ => {
                for ((&i, rng), theta) in kept.iter().zip(rngs).zip(&thetas) {
                    let draw = emitter.model.generated_quantities(theta, rng);
                    values[i] = Some(draw.map(|d| (d.values, d.output)));
                }
            }
        }
        calls
            .into_iter()
            .zip(values)
            .map(|((chain, call), values)| {
                let call = call?;
                let (values, printed) = match values.transpose()? {
                    Some((values, printed)) => (Some(DrawValues::Named(values)), printed),
                    None => (None, Vec::new()),
                };
                batch.push(call.event(chain, values, printed));
                Ok(None)
            })
            .collect()
    }

    /// One batched evaluation for all `lanes`, each answered as its
    /// chain's host answers a scalar evaluation
    /// ([`ChainHost::gradient_outcome`]), in batch layout: the tuple
    /// `(lp, gradient)` as two dense slots over the sub-batch.
    fn gradients(&self, lanes: &Lanes, theta: &Slot) -> BatchAnswer {
        let z = self.lane_chain.len();
        let n = self.n;
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        self.counters
            .lanes
            .fetch_add(lanes.len() as u64, Ordering::Relaxed);
        self.counters.slots.fetch_add(z as u64, Ordering::Relaxed);
        let lanes: Vec<usize> = lanes.iter().collect();
        let m = lanes.len();
        // θ as [coordinate][lane of the call].
        let mut thetas = vec![0.0; n * m];
        match theta {
            Slot::Real(d) if d.elements() >= n => {
                for k in 0..n {
                    let column = d.element(k);
                    for (i, &l) in lanes.iter().enumerate() {
                        thetas[k * m + i] = column[l];
                    }
                }
            }
            other => {
                for (i, &l) in lanes.iter().enumerate() {
                    if let Value::Vector(v) = other.lane_value(l) {
                        for (k, x) in v.into_iter().take(n).enumerate() {
                            thetas[k * m + i] = x;
                        }
                    }
                }
            }
        }
        let mut lp = vec![f64::NEG_INFINITY; z];
        let mut grad = vec![0.0; n * z];
        let mut failed = Vec::new();
        let batch: Vec<usize> = lanes.iter().map(|&l| self.chain(l)).collect();
        match self.gradient.log_density_gradient(&batch, &thetas) {
            Ok(values) => {
                self.counters
                    .block_slots
                    .fetch_add(values.work.slots, Ordering::Relaxed);
                self.counters
                    .block_useful
                    .fetch_add(values.work.useful, Ordering::Relaxed);
                for (i, &l) in lanes.iter().enumerate() {
                    let evaluated = match &values.errors[i] {
                        Some(e) => Err(e.clone()),
                        None => Ok(values.lp[i]),
                    };
                    match self.host(l).gradient_outcome(evaluated) {
                        Ok(x) => {
                            lp[l] = x;
                            // A failed evaluation's gradient stays zero.
                            if values.errors[i].is_none() {
                                for k in 0..n {
                                    grad[k * z + l] = values.gradient[k * m + i];
                                }
                            }
                        }
                        Err(e) => failed.push((l, e)),
                    }
                }
            }
            Err(e) => {
                let err = RuntimeError::fatal(format!("batched gradient: {e}"));
                failed.extend(lanes.iter().map(|&l| (l, err.clone())));
            }
        }
        BatchAnswer {
            value: Slot::Tuple(vec![
                Arc::new(Slot::Real(Dense::new(Shape::Real, z, lp))),
                Arc::new(Slot::Real(Dense::new(Shape::Vector(n), z, grad))),
            ]),
            failed,
        }
    }
}

impl BatchHost for SamplerHost<'_, '_> {
    fn call_external(
        &mut self,
        name: &str,
        lanes: &Lanes,
        args: &[Arc<Slot>],
    ) -> Vec<LaneResult<Option<Value>>> {
        if Emitter::answers(name) {
            return self.emit(name, lanes, args);
        }
        lanes
            .iter()
            .map(|l| {
                let values = args.iter().map(|a| a.lane_value(l)).collect();
                runtime::Host::call_external(&mut *self.host(l), name, values)
            })
            .collect()
    }

    fn call_external_batch(
        &mut self,
        name: &str,
        lanes: &Lanes,
        args: &[Arc<Slot>],
    ) -> Option<BatchAnswer> {
        match args {
            [theta] if name == GRADIENT => Some(self.gradients(lanes, theta)),
            _ => None,
        }
    }

    fn next_invocation(&mut self, lane: usize) -> Option<(Vec<Value>, Option<runtime::Rng>)> {
        self.lane_chain[lane] = None;
        if self.queue.stop.load(Ordering::Relaxed) {
            return None;
        }
        let i = self.queue.next.fetch_add(1, Ordering::Relaxed);
        let (args, rng) = self.queue.starts.get(i)?;
        self.lane_chain[lane] = Some(i);
        Some((args.clone(), Some(rng.clone())))
    }

    fn compact(&mut self, keep: &[usize]) -> bool {
        self.lane_chain = keep.iter().map(|&l| self.lane_chain[l]).collect();
        true
    }

    fn invocation_finished(&mut self, lane: usize, result: LaneResult<Option<Value>>) {
        if let Some(i) = self.lane_chain[lane] {
            let mut results = self.queue.results.lock().unwrap_or_else(|e| e.into_inner());
            results[i] = Some(result);
        }
    }
}
