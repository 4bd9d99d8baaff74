//! The native executor of a whole program run for every lane from one
//! entry function — bat's sampler program (`nuts.stan`) for every chain —
//! with the model's gradient program compiled likewise
//! ([`NativeSampler`]): the device sampler's generated code
//! ([`codegen::entry`]) built with g++ for the host
//! ([`crate::gradient`]), lane-major state in this process's memory.
//!
//! The host loop differs from the device's: there, each step runs one
//! block for all lanes waiting at it (launches are costly, lanes many);
//! here a call costs nanoseconds and a lane's state is contiguous, so each
//! lane runs its blocks one after another (in a compiled dispatcher,
//! [`advance_source`]), its gradients evaluated where it asks for them:
//! the dispatcher calls the compiled gradient program's one-lane function
//! ([`crate::gradient::LANE_GRADIENT`]) in place of returning to the host,
//! packing the waiting lanes and launching every kernel through the shim
//! for them (an eighth of the sampler's instructions on eight schools went
//! to that round trip, more than to the gradient itself). Lanes of one CPU
//! thread gain nothing from meeting at a gradient — the compiled code runs
//! them one by one either way. An evaluation that fails (a rejection,
//! a domain error, an AD stack to regrow) goes back to the host, which
//! evaluates it again for the lanes of its group ([`LANES_PER_GROUP`])
//! waiting so (keeping the lane's error, regrowing the stacks).
//! Bit for bit the same answers: the same kernels run for the lane.
//! A lane's results do not depend on the order lanes run in (each has its
//! own state and random stream), so every chain gets the draws the other
//! backends give it.
//!
//! The lanes of a group waiting at gradient calls are answered one call
//! site at a time, the lowest (block, step) first, each with all of the
//! group's lanes waiting there: the CPU backend's scheduler's rule
//! (earliest block first) where it applies to a host loop that never runs
//! blocks itself; the order changes no lane's draws.
//!
//! Calls without a result (`emit_draw`, `emit_adaptation`) are handed to
//! the [`RecordHost`] as soon as the lane makes them.
//!
//! A model whose gradient program has no compiled code (an op the
//! generator lacks, or g++ failing on it) runs with the gradient on the
//! host ([`SamplerGradient::Host`]): every gradient call goes back to the
//! host, which evaluates the group's lanes waiting at it together, as it
//! does a failed evaluation.

use language::batch::cfg;
use language::value::Value;
use runtime::gradient::{GradientBatch, GradientValues};
use runtime::{ErrorKind, RuntimeError};

use crate::gradient::{
    GeneratedGradient, LaneGradientFn, LibrarySource, NativeGradient, NativeLibrary, NativeProgram,
    ONE_LANE_LAUNCH, Optimization, PendingLibrary, arg, call, data_values, lane_major_state,
    one_lane_call,
};
use codegen::entry::EntryProgram;
use codegen::gradient::GeneratedCodeError;
use codegen::lane_body_call;
use codegen::program::{External, GATHERED_HEADER, Launch, RECORD_COUNT, START_KERNEL};
use codegen::sampler::{LaneOutcome, RecordHost, lane_outcomes, pack_entry_args, runnable_program};
use codegen::shape::Shape;
use codegen::shim::LaunchFn;
use codegen::{FATAL_STATUS, REJECTED_STATUS, STATUS_SLOT};
use std::sync::{Arc, Mutex, OnceLock};

/// Records a lane's buffer holds (each is handed over at once).
const RECORD_CAPACITY: usize = 2;

/// Lanes run together: their failed gradient evaluations are evaluated
/// again in one batch, and their records handed over together. Each
/// lane's state is tens of kB (stacks sized for 100 nested calls): a group
/// this small stays in cache while it runs (when every gradient went to
/// the host, 1,000 eight-schools chains × (300 + 300) on 2 threads took
/// 4.9 s with 16 lanes, 5.3 with 8, 6.2 with 64, 10.4 with all 500).
/// Lanes are independent, so the grouping changes no lane's draws.
pub const LANES_PER_GROUP: usize = 16;

/// [`LANES_PER_GROUP`] where the host answers the gradient calls
/// ([`SamplerGradient::Host`]): its batched evaluation costs per call as
/// well as per lane, so more lanes per call pay (posteriordb's
/// kronecker_gp on synthetic data, 256 chains on two threads: 36.5 s of
/// sampling in groups of 16, 16.9 s in groups of 128, 21–23 s on
/// `--backend cpu`, whose calls take up to 128 chains).
pub const HOST_LANES_PER_GROUP: usize = 128;

/// Where [`NativeSampler::advance`] left a lane.
enum Reached {
    /// At the gradient call at this place, for the host to answer.
    Gradient((usize, usize)),
    /// Just past a record handed over: the lane's group takes its turn
    /// before it goes on, so that the chains of a group advance together,
    /// draw by draw — run to its end at once, a lane's draws (millions in
    /// a long run) waited in the host's memory, unwritten and unseen by
    /// the progress bar, and an interrupted run kept the first chain's
    /// draws only.
    Record,
    /// Finished (or stopped).
    End,
}

/// The sampler program generated as C, not compiled yet
/// ([`NativeSampler::generate`]).
pub struct GeneratedSampler {
    program: EntryProgram,
    source: LibrarySource,
}

/// How [`NativeSampler::compile`] builds the two programs. g++ takes
/// seconds at `-O3` (the sampler program ~5 s on an idle core) where a
/// quick build at a lower level takes about one, and runs at least a
/// fifth as fast (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Full builds, compiled now (from the cache when they are there).
    Full,
    /// Where a full build is not in the cache: a quick build now, and the
    /// full one compiling in the background into the cache, ready for
    /// [`NativeSampler::upgrade`] when the compiler is done.
    Background,
    /// Quick builds, and the full ones compiled now too: ready for
    /// [`NativeSampler::upgrade`] whenever its caller chooses.
    Upgraded,
}

/// Full builds replacing the quick builds an executor started on
/// ([`NativeSampler::upgrade`]), set as they become ready.
pub struct Upgrades {
    sampler: Option<Upgrade<Compiled>>,
    gradient: Option<Upgrade<NativeProgram>>,
    /// Why a full build failed (the run goes on with the quick build).
    pub failures: Mutex<Vec<String>>,
}

struct Upgrade<T> {
    quick: Arc<T>,
    full: OnceLock<Arc<T>>,
}

impl<T> Upgrade<T> {
    fn of(quick: &Arc<T>) -> Upgrade<T> {
        Upgrade {
            quick: quick.clone(),
            full: OnceLock::new(),
        }
    }
}

/// The sampler program compiled for the host (shared by siblings).
struct Compiled {
    program: EntryProgram,
    _library: NativeLibrary,
    /// Runs one lane's blocks up to its next external call ([`advance_source`]).
    advance: AdvanceFn,
    start: LaunchFn,
    /// Per block: its launches, compiled.
    blocks: Vec<Vec<Step>>,
    /// `program.record_width()`, read at every record.
    record_width: usize,
    /// The program's data, read only, shared by its executors.
    data: Arc<[f64]>,
}

impl Compiled {
    /// `program` run by its compiled `library`.
    fn new(program: EntryProgram, library: NativeLibrary) -> Result<Compiled, GeneratedCodeError> {
        // SAFETY: `advance_source` defines the function with this signature.
        let advance: AdvanceFn = unsafe { std::mem::transmute(library.function(ADVANCE)?) };
        let mut blocks = Vec::with_capacity(program.blocks.len());
        for launches in &program.blocks {
            let mut steps = Vec::with_capacity(launches.len());
            for launch in launches {
                steps.push(match launch {
                    Launch::Lanes { .. } | Launch::Gemm { .. } => Step::Lanes,
                    Launch::External(e) => match &e.answer {
                        None => Step::Record {
                            pack: library.launcher(&e.pack)?,
                            call: e.id,
                        },
                        Some(answer) => Step::Gradient {
                            pack: library.launcher(&e.pack)?,
                            answer: library.launcher(answer)?,
                        },
                    },
                });
            }
            blocks.push(steps);
        }
        Ok(Compiled {
            data: data_values(&program.layout),
            record_width: program.record_width(),
            advance,
            start: library.launcher(&program.helper(START_KERNEL))?,
            blocks,
            _library: library,
            program,
        })
    }
}

// SAFETY: see `NativeProgram` (plain functions of a loaded library).
unsafe impl Send for Compiled {}
unsafe impl Sync for Compiled {}

enum Step {
    /// Run by the dispatcher.
    Lanes,
    Record {
        pack: LaunchFn,
        call: usize,
    },
    Gradient {
        pack: LaunchFn,
        answer: LaunchFn,
    },
}

/// A program resident in host memory for `lanes` lanes, with the model's
/// compiled gradient program.
pub struct NativeSampler {
    compiled: Arc<Compiled>,
    gradient: Gradient,
    n_lanes: usize,
    n_slots: usize,
    state: crate::lane_state::LaneState,
    data: Arc<[f64]>,
    records: Vec<f64>,
    packed: Vec<f64>,
    /// One lane's point and gathered answer for gradients the dispatcher
    /// evaluates itself ([`DirectGradient`]).
    direct_theta: Vec<f64>,
    direct_gathered: Vec<f64>,
    /// The error of each lane's last failed gradient evaluation.
    last_errors: Vec<Option<RuntimeError>>,
    /// Gradient evaluations of the last run: batches, lanes over all
    /// batches, and lanes of the groups the batches were for.
    pub gradient_calls: u64,
    pub gradient_lanes: u64,
    pub gradient_slots: u64,
    /// The run started and not ended yet ([`NativeSampler::start`]).
    started: Option<Started>,
}

/// Where the lanes of a started run are.
struct Started {
    failed: Vec<Option<RuntimeError>>,
    cursor: Vec<(usize, usize)>,
    /// Per group of [`LANES_PER_GROUP`] lanes, those that have not ended.
    running: Vec<Vec<usize>>,
}

impl NativeSampler {
    /// Generate `program_cfg` run from `entry` with arguments of
    /// `params`' shapes (a program with an op the generator lacks is
    /// refused), to compile with a gradient program
    /// ([`NativeSampler::compile`]).
    pub fn generate(
        program_cfg: &cfg::Program,
        entry: &str,
        params: &[Shape],
    ) -> Result<GeneratedSampler, GeneratedCodeError> {
        let program = runnable_program(program_cfg, entry, params)?;
        let source = LibrarySource::new(
            format!("{}{}", program.source, advance_source(&program)),
            program.layout.n_slots(),
            program.kernel_names(),
        );
        Ok(GeneratedSampler { program, source })
    }

    /// An executor of `sampler` whose gradient calls `gradient` answers
    /// (one lane), the two compiled as `start` says, and the full builds
    /// that replace its quick ones as they become ready
    /// ([`NativeSampler::upgrade`]). A [`SamplerGradient::Host`] gradient
    /// compiles nothing: only the sampler program is built.
    pub fn compile(
        sampler: &GeneratedSampler,
        gradient: SamplerGradient,
        start: Start,
    ) -> Result<(NativeSampler, Arc<Upgrades>), GeneratedCodeError> {
        let gradient = match gradient {
            SamplerGradient::Generated(gradient) => *gradient,
            SamplerGradient::Host(host) => {
                let (compiled, upgrades) = compile_sampler(sampler, start)?;
                let gradient = Gradient::Host(HostLanes::new(host, 1));
                return Ok((NativeSampler::with_compiled(compiled, gradient), upgrades));
            }
        };
        let gradient_source = gradient.library_source();
        let quick = |source: &LibrarySource, level: Optimization| match start {
            Start::Full => None,
            Start::Upgraded => Some(level),
            // A build already in the cache costs nothing to load.
            Start::Background if source.is_cached(Optimization::FULL) => None,
            Start::Background => Some(level),
        };
        let sampler_level = quick(&sampler.source, Optimization::QUICK_SAMPLER);
        let gradient_level = quick(&gradient_source, Optimization::QUICK_GRADIENT);
        // The two compile at once, each with its own compiler process.
        let sampler_source = &sampler.source;
        let (sampler_library, gradient_library) = std::thread::scope(|scope| {
            let first =
                scope.spawn(|| sampler_source.compile(sampler_level.unwrap_or(Optimization::FULL)));
            let gradient_library =
                gradient_source.compile(gradient_level.unwrap_or(Optimization::FULL));
            let sampler_library = first
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (sampler_library, gradient_library)
        });
        let compiled_sampler = Arc::new(Compiled::new(sampler.program.clone(), sampler_library?)?);
        let compiled_gradient = Arc::new(NativeProgram::from_library(
            gradient.program.clone(),
            gradient_library?,
        )?);
        let upgrades = Arc::new(Upgrades {
            sampler: sampler_level.map(|_| Upgrade::of(&compiled_sampler)),
            gradient: gradient_level.map(|_| Upgrade::of(&compiled_gradient)),
            failures: Mutex::new(Vec::new()),
        });
        match start {
            Start::Full => {}
            Start::Upgraded => {
                if let Some(upgrade) = &upgrades.sampler {
                    let library = sampler.source.compile(Optimization::FULL)?;
                    let _ = (upgrade.full)
                        .set(Arc::new(Compiled::new(sampler.program.clone(), library)?));
                }
                if let Some(upgrade) = &upgrades.gradient {
                    let library = gradient_source.compile(Optimization::FULL)?;
                    let full = NativeProgram::from_library(gradient.program.clone(), library)?;
                    let _ = upgrade.full.set(Arc::new(full));
                }
            }
            Start::Background => {
                // Both compilers start now: a build still running when
                // the process exits still lands in the cache. Without a
                // writable cache, this process compiles them itself.
                let spawn = |source: &LibrarySource, upgrade: bool| {
                    upgrade.then(|| (source.spawn(Optimization::FULL), source.clone()))
                };
                let pending_gradient = spawn(&gradient_source, upgrades.gradient.is_some());
                let pending_sampler = spawn(&sampler.source, upgrades.sampler.is_some());
                let filled = upgrades.clone();
                let programs = (sampler.program.clone(), gradient.program.clone());
                std::thread::spawn(move || {
                    let fail = |e: GeneratedCodeError| {
                        (filled.failures.lock().unwrap_or_else(|p| p.into_inner()))
                            .push(e.to_string())
                    };
                    let library = |(pending, source): (Option<PendingLibrary>, LibrarySource)| {
                        match pending {
                            Some(pending) => pending.wait(),
                            None => source.compile(Optimization::FULL),
                        }
                    };
                    if let (Some(upgrade), Some(pending)) = (&filled.gradient, pending_gradient) {
                        match library(pending)
                            .and_then(|l| NativeProgram::from_library(programs.1, l))
                        {
                            Ok(full) => drop(upgrade.full.set(Arc::new(full))),
                            Err(e) => fail(e),
                        }
                    }
                    if let (Some(upgrade), Some(pending)) = (&filled.sampler, pending_sampler) {
                        match library(pending).and_then(|l| Compiled::new(programs.0, l)) {
                            Ok(full) => drop(upgrade.full.set(Arc::new(full))),
                            Err(e) => fail(e),
                        }
                    }
                });
            }
        }
        let gradient = Gradient::Compiled(gradient.into_gradient(compiled_gradient, 1));
        Ok((
            NativeSampler::with_compiled(compiled_sampler, gradient),
            upgrades,
        ))
    }

    /// Run the full builds of `upgrades` in place of the quick ones this
    /// executor runs, those that are ready. Call it between turns: the
    /// builds share their source, so the lanes' state means the same to
    /// both, and every value is computed the same.
    pub fn upgrade(&mut self, upgrades: &Upgrades) {
        if let Some(upgrade) = &upgrades.sampler
            && let Some(full) = upgrade.full.get()
            && Arc::ptr_eq(&self.compiled, &upgrade.quick)
        {
            self.compiled = full.clone();
        }
        if let Some(upgrade) = &upgrades.gradient
            && let Some(full) = upgrade.full.get()
            && let Gradient::Compiled(gradient) = &mut self.gradient
        {
            gradient.upgrade(&upgrade.quick, full);
        }
    }

    /// Whether this executor runs a quick build of `upgrades`.
    pub fn runs_quick(&self, upgrades: &Upgrades) -> bool {
        let sampler =
            (upgrades.sampler.as_ref()).is_some_and(|u| Arc::ptr_eq(&self.compiled, &u.quick));
        let gradient = (upgrades.gradient.as_ref())
            .is_some_and(|u| matches!(&self.gradient, Gradient::Compiled(g) if g.runs(&u.quick)));
        sampler || gradient
    }

    /// Another executor of the same compiled programs for `lanes` lanes
    /// (no compilation): one per thread.
    pub fn sibling(&self, lanes: usize) -> NativeSampler {
        NativeSampler::with_compiled(self.compiled.clone(), self.gradient.sibling(lanes))
    }

    fn with_compiled(compiled: Arc<Compiled>, gradient: Gradient) -> NativeSampler {
        let n_lanes = gradient.lanes();
        let program = &compiled.program;
        let n_slots = program.layout.n_slots();
        let state = lane_major_state(&program.layout, n_lanes);
        let data = compiled.data.clone();
        let packed_width = program
            .externals
            .iter()
            .map(|e| e.width())
            .max()
            .unwrap_or(0);
        NativeSampler {
            records: vec![0.0; (n_lanes * RECORD_CAPACITY * program.record_width()).max(1)],
            packed: vec![0.0; (packed_width * n_lanes).max(1)],
            direct_theta: vec![0.0; packed_width.max(1)],
            direct_gathered: vec![0.0; GATHERED_HEADER + gradient.n_params()],
            last_errors: vec![None; n_lanes],
            gradient_calls: 0,
            gradient_lanes: 0,
            gradient_slots: 0,
            started: None,
            compiled,
            gradient,
            n_lanes,
            n_slots,
            state,
            data,
        }
    }

    pub fn lanes(&self) -> usize {
        self.n_lanes
    }

    /// Bytes of one lane's sampler state (its slots and stacks).
    pub fn lane_bytes(&self) -> usize {
        self.n_slots * std::mem::size_of::<f64>()
    }

    /// Lanes whose gradients are evaluated together at most
    /// ([`LANES_PER_GROUP`], or [`HOST_LANES_PER_GROUP`] where the host
    /// answers them).
    pub fn lanes_per_group(&self) -> usize {
        match self.gradient {
            Gradient::Compiled(_) => LANES_PER_GROUP,
            Gradient::Host(_) => HOST_LANES_PER_GROUP,
        }
    }

    /// Lanes run in blocks of the compiled gradient program over all its
    /// evaluations (none when the host answers the gradients).
    pub fn gradient_block_lanes(&self) -> u64 {
        match &self.gradient {
            Gradient::Compiled(gradient) => gradient.block_lanes,
            Gradient::Host(_) => 0,
        }
    }

    fn slot(&self, lane: usize, slot: usize) -> f64 {
        self.state[lane * self.n_slots + slot]
    }

    /// Run every lane from the entry with arguments `args[lane]`; lane
    /// `lane` draws from the CPU's stream 0 of chain `chains[lane]` under
    /// `seed`. Records go to `host` lane by lane in order.
    pub fn run(
        &mut self,
        args: &[Vec<Value>],
        chains: &[u32],
        seed: u64,
        host: &mut dyn RecordHost,
    ) -> Result<Vec<LaneOutcome>, GeneratedCodeError> {
        self.start(args, chains, seed)?;
        loop {
            if let Some(outcomes) = self.resume(host, usize::MAX)? {
                return Ok(outcomes);
            }
        }
    }

    /// Start every lane at the entry, as [`NativeSampler::run`] does, and
    /// run none yet: [`NativeSampler::resume`] runs them, a turn at a time.
    pub fn start(
        &mut self,
        args: &[Vec<Value>],
        chains: &[u32],
        seed: u64,
    ) -> Result<(), GeneratedCodeError> {
        let n_lanes = self.n_lanes;
        let compiled = self.compiled.clone();
        let program = &compiled.program;
        let packed_args = pack_entry_args(program, args, chains, n_lanes)?;
        let chain_ids: Vec<i32> = chains.iter().map(|&c| c as i32).collect();
        let per_group = self.lanes_per_group();
        {
            let state = self.state.as_mut_ptr();
            let (a, c) = (packed_args.as_ptr(), chain_ids.as_ptr());
            let (lanes, entry) = (n_lanes as i32, program.entry as i32);
            let mut argv = [
                arg(&state),
                arg(&a),
                arg(&c),
                arg(&lanes),
                arg(&seed),
                arg(&entry),
            ];
            // SAFETY: start kernel ABI (codegen::entry): `state` holds
            // n_slots × n_lanes, `packed_args` every lane's arguments,
            // `chain_ids` n_lanes chains.
            unsafe { call(compiled.start, n_lanes, 1, &mut argv) };
        }
        self.gradient_calls = 0;
        self.gradient_lanes = 0;
        self.gradient_slots = 0;
        self.last_errors.fill(None);
        self.started = Some(Started {
            failed: vec![None; n_lanes],
            // Each lane's place: (block, next launch); a lane between
            // blocks reads its program counter.
            cursor: vec![(usize::MAX, 0); n_lanes],
            running: (0..n_lanes)
                .step_by(per_group)
                .map(|first| (first..(first + per_group).min(n_lanes)).collect())
                .collect(),
        });
        Ok(())
    }

    /// Run the started lanes ([`NativeSampler::start`]) for one turn: each
    /// group of lanes until it has handed over about `records` records
    /// per lane, or to its end; every record is with `host` when it
    /// returns. The lanes' outcomes once all have ended, else None (call
    /// again to go on). Turns let one thread take many groups of chains
    /// forward together rather than one group to its end after another
    /// (a run stopped once every chain has enough draws stops sooner).
    pub fn resume(
        &mut self,
        host: &mut dyn RecordHost,
        records: usize,
    ) -> Result<Option<Vec<LaneOutcome>>, GeneratedCodeError> {
        let compiled = self.compiled.clone();
        let mut started = self
            .started
            .take()
            .ok_or_else(|| GeneratedCodeError::Setup("resumed a run not started".into()))?;
        let mut waiting: Vec<((usize, usize), usize)> = Vec::with_capacity(self.n_lanes);
        let mut group: Vec<i32> = Vec::with_capacity(self.n_lanes);
        for running in started.running.iter_mut() {
            if running.is_empty() {
                continue;
            }
            self.run_group(
                &compiled,
                running,
                records,
                &mut started.cursor,
                host,
                &mut started.failed,
                &mut waiting,
                &mut group,
            )?;
        }
        self.stop_failed(host.flush(true), &mut started.failed);
        if started.running.iter().all(Vec::is_empty) {
            Ok(Some(self.outcomes(started.failed)))
        } else {
            self.started = Some(started);
            Ok(None)
        }
    }

    /// Run the lanes of one group (`running`) until they have handed over
    /// `records` records per lane, or to their ends, their gradients
    /// evaluated together; `running` keeps the lanes that have not ended.
    #[allow(clippy::too_many_arguments)]
    fn run_group(
        &mut self,
        compiled: &Compiled,
        running: &mut Vec<usize>,
        records: usize,
        cursor: &mut [(usize, usize)],
        host: &mut dyn RecordHost,
        failed: &mut [Option<RuntimeError>],
        waiting: &mut Vec<((usize, usize), usize)>,
        group: &mut Vec<i32>,
    ) -> Result<(), GeneratedCodeError> {
        let slots = running.len() as u64;
        let limit = records.saturating_mul(running.len());
        let mut handed_over = 0;
        let mut recorded: Vec<usize> = Vec::new();
        while !running.is_empty() && handed_over < limit {
            waiting.clear();
            recorded.clear();
            for &lane in running.iter() {
                match self.advance(compiled, lane, &mut cursor[lane], host, failed) {
                    Reached::Gradient(at) => waiting.push((at, lane)),
                    Reached::Record => recorded.push(lane),
                    Reached::End => {}
                }
            }
            handed_over += recorded.len();
            running.clear();
            running.extend_from_slice(&recorded);
            self.stop_failed(host.flush(false), failed);
            waiting.sort_unstable();
            let mut i = 0;
            while i < waiting.len() {
                let at = waiting[i].0;
                group.clear();
                while i < waiting.len() && waiting[i].0 == at {
                    group.push(waiting[i].1 as i32);
                    i += 1;
                }
                self.answer_gradients(compiled, at, group)?;
                self.gradient_slots += slots;
                for &lane in group.iter() {
                    cursor[lane as usize] = (at.0, at.1 + 1);
                    running.push(lane as usize);
                }
            }
            running.sort_unstable();
        }
        Ok(())
    }

    /// Run lane `lane` from `at` until it asks for a gradient the
    /// dispatcher does not answer itself, hands over a record, or ends.
    /// The blocks run in the compiled dispatcher; records are handed over
    /// here.
    fn advance(
        &mut self,
        compiled: &Compiled,
        lane: usize,
        at: &mut (usize, usize),
        host: &mut dyn RecordHost,
        failed: &mut [Option<RuntimeError>],
    ) -> Reached {
        let from = if at.0 == usize::MAX {
            -1
        } else {
            ((at.0 as i64) << 16) | at.1 as i64
        };
        let (evaluate, gradient_state, gradient_data) = self.gradient.lane_call();
        let mut direct = DirectGradient {
            evaluate,
            state: gradient_state,
            data: gradient_data,
            theta: self.direct_theta.as_mut_ptr(),
            gathered: self.direct_gathered.as_mut_ptr(),
            evaluations: 0,
            blocks: 0,
        };
        // SAFETY: the dispatcher's ABI (`advance_source`): `state` holds
        // n_slots × n_lanes and `lane` < n_lanes; `direct` the gradient
        // program's function, one lane's state and its data (no other
        // evaluation runs until this call returns), buffers for the
        // widest gradient call's point and for the gather kernel's row
        // of one lane.
        let reached = unsafe {
            (compiled.advance)(
                self.state.as_mut_ptr(),
                self.data.as_ptr(),
                lane as i32,
                self.n_lanes as i32,
                from,
                &mut direct,
            )
        };
        self.gradient.add_lane_blocks(direct.blocks as u64);
        let direct = direct.evaluations as u64;
        self.gradient_calls += direct;
        self.gradient_lanes += direct;
        self.gradient_slots += direct;
        if reached < 0 {
            return Reached::End;
        }
        *at = ((reached >> 16) as usize, (reached & 0xffff) as usize);
        match &compiled.blocks[at.0][at.1] {
            Step::Record { pack, call: id } => {
                let (state, data) = (self.state.as_mut_ptr(), self.data.as_ptr());
                let records = self.records.as_mut_ptr();
                let active = lane as i32;
                let active_ptr: *const i32 = &active;
                let (one, n_lanes) = (1i32, self.n_lanes as i32);
                let (width, cap) = (compiled.record_width as i32, RECORD_CAPACITY as i32);
                let mut argv = [
                    arg(&state),
                    arg(&data),
                    arg(&active_ptr),
                    arg(&one),
                    arg(&n_lanes),
                    arg(&records),
                    arg(&width),
                    arg(&cap),
                ];
                // SAFETY: pack kernel ABI; `records` holds `cap`
                // records of `width` per lane.
                unsafe { call(*pack, 1, 1, &mut argv) };
                self.hand_over_record(compiled, lane, *id, host, failed);
                at.1 += 1;
                Reached::Record
            }
            Step::Gradient { .. } => Reached::Gradient(*at),
            Step::Lanes => unreachable!("the dispatcher runs lane kernels itself"),
        }
    }

    /// Stop the lanes whose records the host refused after all.
    fn stop_failed(
        &mut self,
        refused: Vec<(usize, RuntimeError)>,
        failed: &mut [Option<RuntimeError>],
    ) {
        for (lane, error) in refused {
            if failed[lane].is_none() {
                failed[lane] = Some(error);
            }
            self.state[lane * self.n_slots + STATUS_SLOT] = FATAL_STATUS;
        }
    }

    /// Hand lane `lane`'s record (of call `id`) to `host` and empty its
    /// buffer; a refused record stops the lane.
    fn hand_over_record(
        &mut self,
        compiled: &Compiled,
        lane: usize,
        id: usize,
        host: &mut dyn RecordHost,
        failed: &mut [Option<RuntimeError>],
    ) {
        let program = &compiled.program;
        let base = lane * self.n_slots;
        let count_slot = base + program.layout.reserved + RECORD_COUNT;
        let count = self.state[count_slot] as usize;
        let width = compiled.record_width;
        for c in 0..count {
            if failed[lane].is_some() {
                break;
            }
            let rec = &self.records[(lane * RECORD_CAPACITY + c) * width..][..width];
            let call = program
                .externals
                .get(rec[0] as usize)
                .filter(|e| e.id == id);
            let result = match call {
                Some(call) => {
                    // Records are as wide as the widest call's: this
                    // call's numbers come first.
                    let len: usize = call.args.iter().map(|shape| shape.len()).sum();
                    host.record_numbers(lane, &call.function, &call.args, &rec[1..][..len])
                }
                None => Err(RuntimeError::fatal(format!(
                    "the native sampler wrote a record of an unknown call {}",
                    rec[0]
                ))),
            };
            if let Err(e) = result {
                failed[lane] = Some(e);
                self.state[base + STATUS_SLOT] = FATAL_STATUS;
            }
        }
        self.state[count_slot] = 0.0;
    }

    /// The gradient call at `at` for `lanes`: pack their points, evaluate
    /// them in one batch, write each lane's answer.
    fn answer_gradients(
        &mut self,
        compiled: &Compiled,
        at: (usize, usize),
        lanes: &[i32],
    ) -> Result<(), GeneratedCodeError> {
        let Step::Gradient { pack, answer } = &compiled.blocks[at.0][at.1] else {
            unreachable!("lanes wait only at gradient calls");
        };
        let k = lanes.len();
        let n = self.gradient.n_params();
        let n_lanes = self.n_lanes as i32;
        let n_active = k as i32;
        let state = self.state.as_mut_ptr();
        let data = self.data.as_ptr();
        let active = lanes.as_ptr();
        {
            let out = self.packed.as_mut_ptr();
            let (width, cap) = (0i32, 0i32);
            let mut argv = [
                arg(&state),
                arg(&data),
                arg(&active),
                arg(&n_active),
                arg(&n_lanes),
                arg(&out),
                arg(&width),
                arg(&cap),
            ];
            // SAFETY: pack kernel ABI; `packed` holds the widest call's
            // values for every lane.
            unsafe { call(*pack, k, 1, &mut argv) };
        }
        self.gradient_calls += 1;
        self.gradient_lanes += k as u64;
        let (g, failures) = self.gradient.evaluate(lanes, &self.packed[..n * k])?;
        for (i, e) in failures {
            self.last_errors[lanes[i] as usize] = Some(e);
        }
        let mut argv = [
            arg(&state),
            arg(&data),
            arg(&active),
            arg(&n_active),
            arg(&n_lanes),
            arg(&g),
        ];
        // SAFETY: answer kernel ABI; `g` holds the gather kernel's rows for
        // the same `k` lanes in the same order (in `self.gradient`, not
        // touched again until its next evaluation).
        unsafe { call(*answer, k, 1, &mut argv) };
        Ok(())
    }

    /// Every lane's outcome after the run.
    fn outcomes(&self, failed: Vec<Option<RuntimeError>>) -> Vec<LaneOutcome> {
        lane_outcomes(
            &self.compiled.program,
            failed,
            |lane, slot| self.slot(lane, slot),
            // The error of the lane's last failed evaluation, kept when it
            // was evaluated (the gradient's lanes are the batch's, not the
            // sampler's).
            |lane, _| self.last_errors[lane].clone(),
        )
    }
}

/// The dispatcher's name and signature: `(state, data, lane, n_lanes,
/// from, grad)` → the place `(block << 16) | launch` of the external call
/// the lane reached, or −1 when it ended (finished or failed).
const ADVANCE: &str = "bat_native_advance";
type AdvanceFn =
    unsafe extern "C" fn(*mut f64, *const f64, i32, i32, i64, *mut DirectGradient) -> i64;

/// The dispatcher's `BatDirectGradient`: the gradient program's
/// [`crate::gradient::LANE_GRADIENT`] with its state and data, buffers for
/// one lane's point and gathered answer, and the evaluations it made.
#[repr(C)]
struct DirectGradient {
    evaluate: LaneGradientFn,
    state: *mut f64,
    data: *const f64,
    theta: *mut f64,
    gathered: *mut f64,
    evaluations: i64,
    /// Blocks the gradient program ran for those evaluations.
    blocks: i64,
}

/// The C++ of the dispatcher: runs one lane's blocks from `from` (a place
/// `(block << 16) | launch` to resume at, or −1: at the block its program
/// counter names), calling their lane kernels directly (one active lane;
/// the shim's launch indices set once), until the lane reaches an
/// external call (returned) or ends. One call replaces a host round trip
/// per block.
fn advance_source(program: &EntryProgram) -> String {
    let mut cases = String::new();
    for (b, launches) in program.blocks.iter().enumerate() {
        if launches.is_empty() {
            continue;
        }
        cases += &format!("        case {b}:\n");
        for (j, launch) in launches.iter().enumerate() {
            if let Some(call) = one_lane_call(launch, "n_lanes") {
                cases += &format!(
                    "            if (j <= {j}) {{ {call} if (S(0) != 0.0) return -1; }}\n"
                );
                continue;
            }
            match launch {
                // A gradient: evaluated here, directly, when the lane's
                // evaluation finishes; else (a failure: its error, or a
                // stack to regrow) the host evaluates it.
                Launch::External(External {
                    pack,
                    answer: Some(answer),
                    ..
                }) => {
                    let pack_call = lane_body_call(pack, "n_lanes", ", grad->theta, 0, 0");
                    let answer_call = lane_body_call(answer, "n_lanes", ", grad->gathered");
                    cases += &format!(
                        "            if (j <= {j}) {{\n\
                         \x20               {pack_call}\n\
                         \x20               if (grad->evaluate(grad->state, grad->data, grad->theta, 1.0, grad->gathered, &grad->blocks) != 0) return ({b}LL << 16) | {j};\n\
                         \x20               grad->evaluations += 1;\n\
                         \x20               {answer_call}\n\
                         \x20               if (S(0) != 0.0) return -1;\n\
                         \x20           }}\n"
                    );
                }
                _ => {
                    cases += &format!("            if (j <= {j}) return ({b}LL << 16) | {j};\n");
                }
            }
        }
        cases += "            j = -1;\n            break;\n";
    }
    format!(
        r#"
// ---- native dispatcher (backend-native/src/sampler.rs)
struct BatDirectGradient {{
    int (*evaluate)(double*, const double*, const double*, double, double*, long long*);
    double* state;
    const double* data;
    double* theta;
    double* gathered;
    long long evaluations;
    long long blocks;
}};
extern "C" long long {ADVANCE}(double* __restrict__ state, const double* __restrict__ data,
    int lane, int n_lanes, long long from, BatDirectGradient* grad) {{
{ONE_LANE_LAUNCH}
    const int active[1] = {{lane}};
    long long b = from < 0 ? -1 : (from >> 16);
    long long j = from < 0 ? -1 : (from & 0xffff);
    for (;;) {{
        if (S(0) != 0.0) return -1;
        if (j < 0) {{
            const double pc = S(3);
            if (pc < 0.0) return -1;
            b = (long long)pc;
            j = 0;
        }}
        switch (b) {{
{cases}        default:
            S(0) = 3.0;
            return -1;
        }}
    }}
}}
"#
    )
}

/// What answers the sampler program's gradient calls
/// ([`NativeSampler::compile`]).
pub enum SamplerGradient {
    /// The model's gradient program, compiled with the sampler program.
    Generated(Box<GeneratedGradient>),
    /// The host, in Rust: for a model whose gradient program has ops the
    /// generator lacks, or whose generated code failed to compile. The
    /// sampler program still runs compiled; each lane's gradient call
    /// returns to the host, which evaluates the lanes of a group waiting
    /// at the same call together (their indices in the group are the
    /// call's lanes).
    Host(Arc<dyn GradientBatch>),
}

/// The gradient a [`NativeSampler`] calls (one per executor: boxing the
/// compiled one would add a load to every gradient call).
#[allow(clippy::large_enum_variant)]
enum Gradient {
    Compiled(NativeGradient),
    Host(HostLanes),
}

/// A host [`GradientBatch`] for `lanes` lanes, with the gather kernel's
/// rows of its last evaluation (the answer kernels read them).
struct HostLanes {
    host: Arc<dyn GradientBatch>,
    lanes: usize,
    /// The lanes of the last call, as the interface takes them.
    called: Vec<usize>,
    gathered: Vec<f64>,
}

impl HostLanes {
    fn new(host: Arc<dyn GradientBatch>, lanes: usize) -> HostLanes {
        HostLanes {
            host,
            lanes: lanes.max(1),
            called: Vec::new(),
            gathered: Vec::new(),
        }
    }
}

impl Gradient {
    fn lanes(&self) -> usize {
        match self {
            Gradient::Compiled(g) => g.lanes(),
            Gradient::Host(h) => h.lanes,
        }
    }

    fn n_params(&self) -> usize {
        match self {
            Gradient::Compiled(g) => g.program().n_params,
            Gradient::Host(h) => h.host.n_params(),
        }
    }

    fn sibling(&self, lanes: usize) -> Gradient {
        match self {
            Gradient::Compiled(g) => Gradient::Compiled(g.sibling(lanes)),
            Gradient::Host(h) => Gradient::Host(HostLanes::new(h.host.clone(), lanes)),
        }
    }

    /// The dispatcher's one-lane gradient: the compiled program's, or
    /// where the host answers, a function sending every call back to it.
    fn lane_call(&mut self) -> (LaneGradientFn, *mut f64, *const f64) {
        match self {
            Gradient::Compiled(g) => g.lane_call(),
            Gradient::Host(_) => (to_the_host, std::ptr::null_mut(), std::ptr::null()),
        }
    }

    fn add_lane_blocks(&mut self, blocks: u64) {
        if let Gradient::Compiled(g) = self {
            g.add_lane_blocks(blocks);
        }
    }

    /// Evaluate the group's lanes `lanes` at `theta` (`[c][i]`: lane
    /// `lanes[i]`): the gather kernel's rows (valid until the next
    /// evaluation) and the lanes that failed, by their index in `lanes`.
    fn evaluate(&mut self, lanes: &[i32], theta: &[f64]) -> Result<Evaluation, GeneratedCodeError> {
        let k = lanes.len();
        let h = match self {
            Gradient::Compiled(g) => {
                let evaluated = g.evaluate_columns(theta, k, true)?;
                return Ok((evaluated.gathered().as_ptr(), evaluated.failures));
            }
            Gradient::Host(h) => h,
        };
        let n = h.host.n_params();
        h.called.clear();
        h.called.extend(lanes.iter().map(|&l| l as usize));
        let values = (h.host.log_density_gradient(&h.called, theta)).unwrap_or_else(|e| {
            let error = RuntimeError::fatal(format!("batched gradient: {e}"));
            GradientValues::all_failed(k, n, error)
        });
        if values.lp.len() != k || values.gradient.len() != n * k || values.errors.len() != k {
            return Err(GeneratedCodeError::Setup(format!(
                "the host's gradient answered {} points for {k}",
                values.lp.len()
            )));
        }
        // The gather kernel's rows: status, site, lp, gradient. A failed
        // lane's site (0) sends the sampler to its error in `last_errors`.
        let g = &mut h.gathered;
        g.clear();
        g.extend(values.errors.iter().map(|e| match e {
            None => 0.0,
            Some(e) if matches!(e.kind, ErrorKind::Fatal | ErrorKind::Unsupported) => FATAL_STATUS,
            Some(_) => REJECTED_STATUS,
        }));
        g.extend(std::iter::repeat_n(0.0, k));
        g.extend_from_slice(&values.lp);
        g.extend_from_slice(&values.gradient);
        let failures = (values.errors.into_iter().enumerate())
            .filter_map(|(i, e)| Some((i, e?)))
            .collect();
        Ok((g.as_ptr(), failures))
    }
}

/// The gather kernel's rows of an evaluation (valid until the next) and
/// the lanes that failed, with their errors.
type Evaluation = (*const f64, Vec<(usize, RuntimeError)>);

/// The dispatcher's gradient function where the host answers: every
/// evaluation goes back to the host (a nonzero status).
unsafe extern "C" fn to_the_host(
    _state: *mut f64,
    _data: *const f64,
    _theta: *const f64,
    _jacobian: f64,
    _gathered: *mut f64,
    _blocks: *mut i64,
) -> i32 {
    1
}

/// The sampler program alone compiled as `start` says (its gradient
/// answered by the host), and its full build where it starts on a quick one.
fn compile_sampler(
    sampler: &GeneratedSampler,
    start: Start,
) -> Result<(Arc<Compiled>, Arc<Upgrades>), GeneratedCodeError> {
    let source = &sampler.source;
    let quick = match start {
        Start::Full => None,
        Start::Background if source.is_cached(Optimization::FULL) => None,
        Start::Background | Start::Upgraded => Some(Optimization::QUICK_SAMPLER),
    };
    let library = source.compile(quick.unwrap_or(Optimization::FULL))?;
    let compiled = Arc::new(Compiled::new(sampler.program.clone(), library)?);
    let upgrades = Arc::new(Upgrades {
        sampler: quick.map(|_| Upgrade::of(&compiled)),
        gradient: None,
        failures: Mutex::new(Vec::new()),
    });
    if upgrades.sampler.is_none() {
        return Ok((compiled, upgrades));
    }
    if start == Start::Upgraded {
        let full = Compiled::new(sampler.program.clone(), source.compile(Optimization::FULL)?)?;
        if let Some(upgrade) = &upgrades.sampler {
            let _ = upgrade.full.set(Arc::new(full));
        }
        return Ok((compiled, upgrades));
    }
    let pending = source.spawn(Optimization::FULL);
    let (filled, program, source) = (upgrades.clone(), sampler.program.clone(), source.clone());
    std::thread::spawn(move || {
        let library = match pending {
            Some(pending) => pending.wait(),
            None => source.compile(Optimization::FULL),
        };
        match library.and_then(|l| Compiled::new(program, l)) {
            Ok(full) => {
                if let Some(upgrade) = &filled.sampler {
                    let _ = upgrade.full.set(Arc::new(full));
                }
            }
            Err(e) => {
                (filled.failures.lock().unwrap_or_else(|p| p.into_inner())).push(e.to_string())
            }
        }
    });
    Ok((compiled, upgrades))
}
