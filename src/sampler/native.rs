//! `--backend native`: the sampler program and the model's gradient
//! program compiled to machine code (the CUDA backend's generated code
//! built with g++ for the host: [`backend_native::sampler`]), each
//! chain one lane of host-resident state. `--threads` workers (one per
//! core by default) take groups of chains from one queue ([`GroupQueue`]),
//! each running a group's lanes with its own executor of the one compiled
//! program. Chain `i`'s draws are the CPU
//! backend's (the same IEEE arithmetic in the same order, the same
//! counter-based streams). A gradient program the compiled backend cannot
//! build is evaluated by the CPU backend's ([`host_gradient`]), the
//! sampler program still compiled.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig, KeptDraws};
use backend_native::gradient::NativeGradient;
use backend_native::sampler::{NativeSampler, SamplerGradient, Start, Upgrades};
use codegen::gradient::GeneratedCodeError;
use codegen::sampler::{RecordHost, values};
use codegen::shape::{Inner, Shape};
use language::value::Value;
use runtime::gradient::GradientBatch;
use runtime::{Rng, RuntimeError};

use super::batched::BatchedExecutor;
use super::cuda::{device_sampler_program, finish_chains, gradient_cfg};
use super::executor::chain_args;
use super::gradients::{CpuGradients, InterpretedGradients};
use super::host::{DrawCall, Emitter};
use super::program::CHAIN_FUNCTION;
use super::{BatchTotals, ChainJob, Control, DrawValues, Event, SamplerExecutor};
use crate::output::VarSpec;

/// The compiled sampler (one executor per worker thread).
pub struct NativeExecutor {
    /// An executor for one lane: the others are its siblings (sized per run).
    template: Mutex<NativeSampler>,
    /// Executors of groups that ended, for the next run's groups (pooled
    /// warmup runs the chains again and again, a few iterations at a time).
    spares: Mutex<Vec<NativeSampler>>,
    threads: usize,
    /// Bytes of sampler state the started groups may hold
    /// ([`state_in_flight_bytes`], read once: pooled warmup runs the
    /// executor again for every segment).
    state_budget: usize,
    /// Full builds taking over from the quick ones the run started on.
    upgrades: Arc<Upgrades>,
    /// Turns begun over all runs; groups upgrade from turn `upgrade_from`.
    turns_begun: AtomicUsize,
    upgrade_from: usize,
    /// Turns run with a quick build, and with full builds only.
    pub quick_turns: AtomicUsize,
    pub full_turns: AtomicUsize,
    /// Why the model's gradient is evaluated by the CPU backend's batched
    /// gradient program while the sampler program runs compiled: the
    /// generator refused it ([`GeneratedCodeError::Refused`], naming the
    /// ops) or its generated code failed to compile. None when compiled.
    pub gradient_fallback: Option<GeneratedCodeError>,
    /// Where the compiler failed on the generated gradient: the model's
    /// statements whose code its log names.
    pub gradient_failed_at: Vec<language::span::Span>,
}

impl NativeExecutor {
    /// Generate and compile the sampler program and `job`'s gradient
    /// program. A gradient program the generator refuses (an op it lacks)
    /// or the compiler fails on is evaluated by the CPU backend instead,
    /// the sampler program still compiled ([`NativeExecutor::gradient_fallback`]
    /// says why); an error only when the sampler program cannot be built.
    /// A program not in the cache starts on a quick build while its full
    /// build compiles in the background ([`Start::Background`]).
    pub fn new(job: &ChainJob<'_>, threads: usize) -> Result<NativeExecutor, GeneratedCodeError> {
        NativeExecutor::starting(job, threads, Start::Background, 0)
    }

    /// [`NativeExecutor::new`] compiled as `start` says, its groups
    /// taking the full builds from the `upgrade_from`-th turn on (a test
    /// chooses where the builds change mid-run with [`Start::Upgraded`]).
    pub fn starting(
        job: &ChainJob<'_>,
        threads: usize,
        start: Start,
        upgrade_from: usize,
    ) -> Result<NativeExecutor, GeneratedCodeError> {
        let generated = gradient_cfg(job)
            .and_then(|grad_cfg| NativeGradient::generate(&grad_cfg, job.model.clone()));
        let (cfg, params) =
            device_sampler_program(job.model.num_unconstrained(), job.settings.metric)
                .map_err(GeneratedCodeError::Setup)?;
        let sampler = NativeSampler::generate(&cfg, CHAIN_FUNCTION, &params)?;
        let (mut gradient_fallback, gradient) = match generated {
            Ok(generated) => (None, SamplerGradient::Generated(Box::new(generated))),
            Err(why) => (Some(why), SamplerGradient::Host(host_gradient(job))),
        };
        let mut gradient_failed_at = Vec::new();
        let (sampler, upgrades) = match NativeSampler::compile(&sampler, gradient, start) {
            Ok(compiled) => compiled,
            // The generated gradient failed to compile (with the sampler
            // program, it compiles alone): the host evaluates it.
            Err(e) if gradient_fallback.is_none() => {
                let host = SamplerGradient::Host(host_gradient(job));
                match NativeSampler::compile(&sampler, host, start) {
                    Ok(compiled) => {
                        if let GeneratedCodeError::Compile(log) = &e {
                            // Generated again (it is deterministic) for
                            // the model's lines of the kernels it names.
                            gradient_failed_at = gradient_cfg(job)
                                .and_then(|cfg| NativeGradient::generate(&cfg, job.model.clone()))
                                .map_or_else(|_| Vec::new(), |g| g.spans_named_in(log));
                        }
                        gradient_fallback = Some(e);
                        compiled
                    }
                    Err(_) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            t => t,
        };
        Ok(NativeExecutor {
            template: Mutex::new(sampler),
            spares: Mutex::new(Vec::new()),
            threads,
            state_budget: state_in_flight_bytes(),
            upgrades,
            turns_begun: AtomicUsize::new(0),
            upgrade_from,
            quick_turns: AtomicUsize::new(0),
            full_turns: AtomicUsize::new(0),
            gradient_fallback,
            gradient_failed_at,
        })
    }

    /// Whether the run starts on a quick build (a full one compiling).
    pub fn starts_quick(&self) -> bool {
        let template = self.template.lock().unwrap_or_else(|p| p.into_inner());
        template.runs_quick(&self.upgrades)
    }

    /// A group's sampler before its turn: on the full builds where they
    /// are ready and its turn may take them.
    fn before_turn(&self, sampler: &mut NativeSampler) {
        if self.turns_begun.fetch_add(1, Ordering::Relaxed) >= self.upgrade_from {
            sampler.upgrade(&self.upgrades);
        }
        let count = match sampler.runs_quick(&self.upgrades) {
            true => &self.quick_turns,
            false => &self.full_turns,
        };
        count.fetch_add(1, Ordering::Relaxed);
    }
}

impl SamplerExecutor for NativeExecutor {
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, control: &Control) {
        if chains.is_empty() {
            return;
        }
        // Fewer chains than threads × the lanes per group are cut in
        // smaller groups so that every thread gets some: 4 chains in one
        // group of 4 ran on one core of two.
        let (template, group) = {
            let template = (self.template.lock()).unwrap_or_else(|p| p.into_inner());
            let group = (chains.len().div_ceil(self.threads)).clamp(1, template.lanes_per_group());
            (template.sibling(group), group)
        };
        let group_bytes = (template.lane_bytes() * group).max(1);
        let turns = Turns {
            fresh: GroupQueue::new(chains, group),
            active: Mutex::new(VecDeque::new()),
            live: AtomicUsize::new(0),
            max_live: (self.state_budget / group_bytes).max(2 * self.threads),
        };
        let workers = self.threads.min(turns.fresh.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let (turns, template) = (&turns, &template);
                scope.spawn(move || run_turns(self, template, job, turns, events, control));
            }
        });
        let failures = std::mem::take(
            &mut *(self.upgrades.failures.lock()).unwrap_or_else(|p| p.into_inner()),
        );
        for failure in failures {
            eprintln!(
                "internal error: the optimized build of the model failed; the run went on with its quick build (the same draws, slower). Please report it:"
            );
            for line in failure.lines().take(20) {
                eprintln!("  {line}");
            }
        }
    }
}

/// The model's gradient on the host, for a compiled sampler whose
/// gradient program did not compile ([`SamplerGradient::Host`]): the CPU
/// backend's batched gradient program, one thread per call (each worker
/// evaluates its own group's lanes), so every chain gets the draws
/// `--backend cpu` gives it; the interpreter, lane by lane, where the
/// model does not batch.
fn host_gradient(job: &ChainJob<'_>) -> Arc<dyn GradientBatch> {
    let config = BatchedExecutor::for_gradients().config(1);
    match CpuGradients::new(job, config) {
        Ok(batched) => Arc::new(batched),
        Err(_) => Arc::new(InterpretedGradients {
            model: job.model.clone(),
            grad: job.grad.clone(),
        }),
    }
}

/// Bytes of sampler state that the started groups hold at most (about):
/// a quarter of the memory available when the executor is made, and at least
/// [`MIN_STATE_IN_FLIGHT_BYTES`]. A group starts only while the others
/// hold less, so a run of millions of chains does not hold them all; but
/// chains that do not all start move forward in two waves (the later ones
/// start only as the earlier ones end), and a run with `--target-ess`,
/// which checks once every chain has the draws, then stops only near the
/// end. The 100-d Gaussian holds 0.58 MB per chain (its sampler's and
/// gradient's state): a fixed 512 MiB started 57 of its 64 groups of 16
/// chains at 1,024 chains, the other 7 only as the first ended, and a run
/// whose target was met at 150 draws ran 915.
fn state_in_flight_bytes() -> usize {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib.saturating_mul(1024))
        });
    available.map_or(MIN_STATE_IN_FLIGHT_BYTES, |bytes| {
        (bytes / 4).max(MIN_STATE_IN_FLIGHT_BYTES)
    })
}

/// Where the available memory is unknown (not Linux), or small.
const MIN_STATE_IN_FLIGHT_BYTES: usize = 512 << 20;

/// Records per lane in one turn of a group (with 16 lanes, one flush of
/// their kept draws' generated quantities).
const RECORDS_PER_TURN: usize = 16;

/// The groups of chains and whose turn it is. A worker takes the next
/// group in line, runs it for a turn ([`RECORDS_PER_TURN`]) and puts it
/// back at the end of the line, so all started groups move forward
/// together, draw by draw: run to its end at once, a group's chains
/// finished before the next group's started, and a run stopped once every
/// chain has enough draws (`--target-ess`) could stop only near its end.
/// New groups start while the started ones hold less than
/// [`state_in_flight_bytes`].
struct Turns<'a> {
    fresh: GroupQueue<'a>,
    /// Started groups waiting for their next turn, in line.
    active: Mutex<VecDeque<Box<Group<'a>>>>,
    /// Groups started and not ended.
    live: AtomicUsize,
    max_live: usize,
}

/// A started group: its chains (lane `i` runs `chains[i]`) and its
/// executor, holding their state between turns.
struct Group<'a> {
    chains: &'a [usize],
    sampler: NativeSampler,
    /// The gradient's block lanes when the group started.
    blocks_before: u64,
}

enum Turn<'a> {
    Start(&'a [usize]),
    Resume(Box<Group<'a>>),
}

impl<'a> Turns<'a> {
    fn next(&self) -> Option<Turn<'a>> {
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        if self.live.load(Ordering::Relaxed) < self.max_live
            && let Some(chains) = self.fresh.take()
        {
            self.live.fetch_add(1, Ordering::Relaxed);
            return Some(Turn::Start(chains));
        }
        if let Some(group) = active.pop_front() {
            return Some(Turn::Resume(group));
        }
        // Every started group is in another worker's hands.
        let chains = self.fresh.take()?;
        self.live.fetch_add(1, Ordering::Relaxed);
        Some(Turn::Start(chains))
    }

    fn put_back(&self, group: Box<Group<'a>>) {
        (self.active.lock().unwrap_or_else(|p| p.into_inner())).push_back(group);
    }

    fn ended(&self) {
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The chains cut in groups of lanes that workers take one at a time, in
/// order, until none is left. Workers used to get equal shares up front:
/// the one sharing its core with the collector (HDF5 writes, ~15% of a
/// core) or given the costlier chains then ran alone at the end — with
/// eight schools, 1,024 chains on two threads, the last ~15% of the run.
/// Now the workers finish within about one group's time of each other.
/// Which worker runs a chain changes none of its draws.
struct GroupQueue<'a> {
    chains: &'a [usize],
    size: usize,
    next: AtomicUsize,
}

impl<'a> GroupQueue<'a> {
    fn new(chains: &'a [usize], size: usize) -> GroupQueue<'a> {
        assert!(size > 0, "groups of at least one chain");
        GroupQueue {
            chains,
            size,
            next: AtomicUsize::new(0),
        }
    }

    /// How many groups there are in all.
    fn len(&self) -> usize {
        self.chains.len().div_ceil(self.size)
    }

    /// The next group no worker has taken; None when all are taken.
    fn take(&self) -> Option<&'a [usize]> {
        let group = self.next.fetch_add(1, Ordering::Relaxed);
        let first = group.checked_mul(self.size)?;
        (first < self.chains.len())
            .then(|| &self.chains[first..(first + self.size).min(self.chains.len())])
    }
}

/// One worker: turns of groups of chains, one lane each, until every
/// group has ended.
fn run_turns<'a>(
    executor: &NativeExecutor,
    template: &NativeSampler,
    job: &ChainJob<'a>,
    turns: &Turns<'a>,
    events: &'a Sender<Event>,
    control: &'a Control,
) {
    let mut hosts = Records {
        emitter: super::executor::emitter(job, control),
        chains: &[],
        events,
        draws: draws_model(job),
        pending: Vec::new(),
        kept: Vec::new(),
        layout: None,
    };
    let spares = &executor.spares;
    // The executor of the last group this worker saw end, for the next.
    let mut spare: Option<NativeSampler> = None;
    while let Some(turn) = turns.next() {
        let mut group = match turn {
            Turn::Resume(group) => group,
            Turn::Start(chains) => {
                let lanes = chains.len();
                let mut sampler = match spare.take() {
                    Some(sampler) if sampler.lanes() == lanes => sampler,
                    other => {
                        let mut spares = spares.lock().unwrap_or_else(|p| p.into_inner());
                        spares.extend(other);
                        match spares.iter().position(|s| s.lanes() == lanes) {
                            Some(i) => spares.swap_remove(i),
                            None => template.sibling(lanes),
                        }
                    }
                };
                let ids: Vec<u32> = chains.iter().map(|&c| c as u32).collect();
                let args: Vec<_> = chains.iter().map(|&chain| chain_args(job, chain)).collect();
                if let Err(e) = sampler.start(&args, &ids, job.settings.seed) {
                    turns.ended();
                    finish_chains(&Err(e), chains, events);
                    continue;
                }
                let blocks_before = sampler.gradient_block_lanes();
                Box::new(Group {
                    chains,
                    sampler,
                    blocks_before,
                })
            }
        };
        hosts.chains = group.chains;
        executor.before_turn(&mut group.sampler);
        let outcome = match group.sampler.resume(&mut hosts, RECORDS_PER_TURN) {
            Ok(None) => {
                turns.put_back(group);
                continue;
            }
            Ok(Some(outcomes)) => Ok(outcomes),
            Err(e) => Err(e),
        };
        turns.ended();
        let sampler = &group.sampler;
        // Each block of the compiled gradient runs exactly the lanes
        // waiting at it.
        let blocks = sampler.gradient_block_lanes() - group.blocks_before;
        let _ = events.send(Event::Batches(BatchTotals {
            calls: sampler.gradient_calls,
            lanes: sampler.gradient_lanes,
            slots: sampler.gradient_slots,
            gradient_blocks: super::LaneWork {
                slots: blocks,
                useful: blocks,
            },
        }));
        finish_chains(&outcome, group.chains, events);
        if let Some(old) = spare.replace(group.sampler) {
            (spares.lock().unwrap_or_else(|p| p.into_inner())).push(old);
        }
    }
    (spares.lock().unwrap_or_else(|p| p.into_inner())).extend(spare);
}

/// Transformed parameters and generated quantities as a batched program
/// (one thread), run for many kept draws at once; None when they do not
/// lower to the batching IR (each draw then runs on the interpreter, with
/// the same values).
fn draws_model(job: &ChainJob<'_>) -> Option<BatchedModel> {
    let cfg = language::batch::lower_generated_quantities(job.model.program()).ok()?;
    let config = ExecConfig {
        batching: Batching::ProgramCounter,
        threads: 1,
        ..ExecConfig::default()
    };
    BatchedModel::new(cfg, job.model.clone(), config).ok()
}

/// θ's length when `function` is `emit_draw` with the sampler program's
/// arguments (int iteration, vector θ, reals and ints as
/// [`super::host::Emitter::read_draw`] takes them), read from the numbers
/// directly; None otherwise (the values path then decides).
fn emit_draw_theta_len(function: &str, shapes: &[Shape]) -> Option<usize> {
    const INT: [bool; 9] = [true, false, false, false, false, true, true, true, false];
    if function != "emit_draw" || shapes.len() != INT.len() {
        return None;
    }
    let plain = |s: &Shape, int: bool| s.arrays.is_empty() && s.tuple.is_empty() && s.int == int;
    let scalars = shapes
        .iter()
        .zip(INT)
        .enumerate()
        .all(|(i, (s, int))| i == 1 || (plain(s, int) && s.inner == Inner::Scalar));
    match shapes[1].inner {
        Inner::Vector(n) if scalars && plain(&shapes[1], false) => Some(n),
        _ => None,
    }
}

/// Draws kept for a batch before their generated quantities are computed
/// and their events sent (one message): per-draw work (a batched program
/// run, a wake-up of the driver) was a third of a 1,000-chain run.
const RECORDS_PER_FLUSH: usize = 256;

/// The records of one worker's lanes (lane `i` runs chain `chains[i]`):
/// events in call order, kept draws' values computed together at a flush.
struct Records<'a> {
    emitter: Emitter<'a>,
    chains: &'a [usize],
    events: &'a Sender<Event>,
    draws: Option<BatchedModel>,
    /// (lane, its event or the draw waiting for its values).
    pending: Vec<(usize, Pending)>,
    /// Indices into `pending` of kept draws.
    kept: Vec<usize>,
    /// The variables of the stored draws sent so far.
    layout: Option<Arc<[VarSpec]>>,
}

enum Pending {
    Event(Event),
    Draw(DrawCall),
}

impl RecordHost for Records<'_> {
    fn record(
        &mut self,
        lane: usize,
        function: &str,
        args: Vec<Value>,
    ) -> Result<(), RuntimeError> {
        if function == "emit_draw" {
            let call = self.emitter.read_draw(args)?;
            self.push_draw(lane, call);
        } else {
            let event = self.emitter.event(function, self.chains[lane], args)?;
            self.pending.push((lane, Pending::Event(event)));
        }
        Ok(())
    }

    fn record_numbers(
        &mut self,
        lane: usize,
        function: &str,
        shapes: &[Shape],
        numbers: &[f64],
    ) -> Result<(), RuntimeError> {
        match emit_draw_theta_len(function, shapes) {
            Some(n) => {
                let call = self.emitter.read_draw_numbers(numbers, n)?;
                self.push_draw(lane, call);
                Ok(())
            }
            None => self.record(lane, function, values(shapes, numbers)),
        }
    }

    fn flush(&mut self, all: bool) -> Vec<(usize, RuntimeError)> {
        if self.pending.is_empty() || (!all && self.pending.len() < RECORDS_PER_FLUSH) {
            return Vec::new();
        }
        let mut values = self.draw_values().into_iter();
        let mut failed: Vec<(usize, RuntimeError)> = Vec::new();
        let mut batch = Vec::with_capacity(self.pending.len());
        for (lane, pending) in std::mem::take(&mut self.pending) {
            // Every kept draw takes its values, in order, even when dropped.
            let event = match pending {
                Pending::Event(event) => Ok(event),
                Pending::Draw(call) => values
                    .next()
                    .expect("a kept draw's values")
                    .map(|(v, printed)| call.event(self.chains[lane], Some(v), printed)),
            };
            // A chain's records after its failed draw are dropped: it stops there.
            if failed.iter().any(|(l, _)| *l == lane) {
                continue;
            }
            match event {
                Ok(event) => batch.push(event),
                Err(e) => failed.push((lane, e)),
            }
        }
        self.kept.clear();
        let _ = match batch.len() {
            0 => Ok(()),
            1 => self.events.send(batch.pop().expect("one event")),
            _ => self.events.send(Event::Many(batch)),
        };
        failed
    }
}

impl Records<'_> {
    /// Lane `lane`'s `emit_draw`: its event now, or its draw kept for the
    /// values of a batch.
    fn push_draw(&mut self, lane: usize, call: DrawCall) {
        if call.kept {
            self.kept.push(self.pending.len());
            self.pending.push((lane, Pending::Draw(call)));
        } else {
            let event = call.event(self.chains[lane], None, Vec::new());
            self.pending.push((lane, Pending::Event(event)));
        }
    }

    /// The values of every kept draw pending, in order, with the lines
    /// printed computing them: as stored numbers when the batched generated
    /// quantities give them, else by name.
    fn draw_values(&mut self) -> Vec<Result<(DrawValues, Vec<String>), RuntimeError>> {
        let mut thetas = Vec::with_capacity(self.kept.len());
        let mut rngs: Vec<Rng> = Vec::with_capacity(self.kept.len());
        for &i in &self.kept {
            let (lane, Pending::Draw(call)) = &self.pending[i] else {
                unreachable!("kept holds draws")
            };
            thetas.push(call.theta.clone());
            rngs.push(self.emitter.draw_rng(self.chains[*lane], call));
        }
        let batched_failed = |e: backend_cpu::exec::ExecError| {
            let error = RuntimeError::fatal(format!(
                "internal error: the batched generated quantities: {e}"
            ));
            vec![Err(error); thetas.len()]
        };
        match &self.draws {
            Some(model) if !thetas.is_empty() => match model.kept_draws(&thetas, &rngs) {
                Ok(KeptDraws::Stored(stored)) => {
                    let specs = (stored.vars.iter()).map(|v| match v.is_int {
                        true => VarSpec::int(&v.name, &v.dims),
                        false => VarSpec::real(&v.name, &v.dims),
                    });
                    // One layout for the run (the collector compares
                    // pointers first).
                    let specs: Vec<VarSpec> = specs.collect();
                    let layout = match &self.layout {
                        Some(layout) if **layout == *specs => layout.clone(),
                        _ => self.layout.insert(specs.into()).clone(),
                    };
                    (stored.lanes.into_iter().zip(stored.printed))
                        .map(|(numbers, printed)| {
                            numbers.map(|numbers| {
                                let layout = layout.clone();
                                (DrawValues::Stored { layout, numbers }, printed)
                            })
                        })
                        .collect()
                }
                Ok(KeptDraws::Named(draws)) => (draws.into_iter())
                    .map(|d| d.map(|d| (DrawValues::Named(d.values), d.output)))
                    .collect(),
                Err(e) => batched_failed(e),
            },
            _ => thetas
                .iter()
                .zip(rngs)
                .map(|(theta, rng)| {
                    self.emitter
                        .model
                        .generated_quantities(theta, rng)
                        .map(|d| (DrawValues::Named(d.values), d.output))
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::host::Emitter;
    use super::{GroupQueue, emit_draw_theta_len};
    use crate::sampler::cuda::device_sampler_program;
    use crate::sampler::program::CHAIN_FUNCTION;
    use codegen::sampler::values;

    /// The sampler program is generated whole for either metric (the
    /// compiled executors and the CUDA device run what the interpreter
    /// runs), and a dense metric's factor is an n×n argument.
    #[test]
    fn the_sampler_is_generated_whole_for_either_metric() {
        use crate::sampler::Metric;
        for (metric, factor) in [(Metric::Diag, 0), (Metric::Dense, 3)] {
            let (cfg, params) = device_sampler_program(3, metric).unwrap();
            assert_eq!(
                params[9],
                codegen::shape::Shape::of(codegen::shape::Inner::Matrix(factor, factor))
            );
            let program = codegen::sampler::generate(&cfg, CHAIN_FUNCTION, &params).unwrap();
            let missing: Vec<String> = (program.not_generated.iter())
                .map(|n| format!("{n:?}"))
                .collect();
            assert!(missing.is_empty(), "{metric:?}: {missing:?}");
        }
    }

    /// The compiled sampler's `emit_draw` records take the numbers path,
    /// which reads each record as the values path does: the iteration's
    /// warmup and kept flags (thinning), θ and the statistics; stopped,
    /// both refuse it alike.
    #[test]
    fn emit_draw_records_read_as_their_values() {
        let (cfg, params) = device_sampler_program(3, crate::sampler::Metric::Diag).unwrap();
        let program = codegen::sampler::generate(&cfg, CHAIN_FUNCTION, &params).unwrap();
        let shapes = &program
            .externals
            .iter()
            .find(|e| e.function == "emit_draw")
            .expect("the sampler records its draws")
            .args;
        assert_eq!(emit_draw_theta_len("emit_draw", shapes), Some(3));
        assert_eq!(emit_draw_theta_len("emit_adaptation", shapes), None);
        assert_eq!(emit_draw_theta_len("emit_draw", &shapes[..8]), None);

        let (source, name) = ("parameters { real x; } model { x ~ normal(0, 1); }", "one");
        let (mir, diagnostics) = language::compile_model(source, name);
        let mir = mir.unwrap_or_else(|| panic!("{diagnostics:?}"));
        let model = runtime::Model::new(&mir, &language::data::DataFile::empty()).unwrap();
        let control = crate::sampler::Control::new();
        let emitter = Emitter {
            model: &model,
            seed: 1,
            num_warmup: 4,
            thin: 3,
            save_warmup: true,
            report_points: false,
            control: &control,
        };
        for iteration in 1..=12 {
            let it = iteration as f64;
            let record = [
                it,
                0.5 * it,
                -1.25,
                2.0,
                -3.5,
                0.7,
                0.125,
                3.0,
                7.0,
                f64::from(iteration % 2),
                -it,
            ];
            let by_numbers = emitter.read_draw_numbers(&record, 3).unwrap();
            let by_values = emitter.read_draw(values(shapes, &record)).unwrap();
            assert_eq!(by_numbers.iteration, by_values.iteration);
            assert_eq!(by_numbers.theta, by_values.theta);
            assert_eq!(by_numbers.warmup, by_values.warmup, "iteration {iteration}");
            assert_eq!(by_numbers.kept, by_values.kept, "iteration {iteration}");
            assert_eq!(by_numbers.stats, by_values.stats);
        }
        assert!(
            emitter.read_draw_numbers(&[1.0; 10], 3).is_err(),
            "a number short"
        );
        control.stop();
        let record = [1.0; 11];
        let by_numbers = emitter.read_draw_numbers(&record, 3).err().unwrap();
        let by_values = emitter.read_draw(values(shapes, &record)).err().unwrap();
        assert_eq!(by_numbers.message, by_values.message);
    }

    /// Workers taking groups at once get every chain exactly once, in
    /// groups of the size asked for (the last one shorter), in order.
    #[test]
    fn workers_take_every_chain_once_in_groups() {
        let chains: Vec<usize> = (100..137).collect();
        let queue = GroupQueue::new(&chains, 16);
        assert_eq!(queue.len(), 3);
        let taken: Vec<Vec<Vec<usize>>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        std::iter::from_fn(|| queue.take())
                            .map(<[usize]>::to_vec)
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut groups: Vec<Vec<usize>> = taken.into_iter().flatten().collect();
        groups.sort();
        assert_eq!(
            groups,
            vec![
                (100..116).collect::<Vec<_>>(),
                (116..132).collect(),
                (132..137).collect()
            ]
        );
        assert_eq!(queue.take(), None, "an empty queue stays empty");
    }
}
