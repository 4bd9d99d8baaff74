//! `bat run`: sample a model with Stan's NUTS (the sampler program of
//! `bat::sampler`) for many chains, write the draws file and print the
//! summary table.

use super::model::{self, Reported, render_span};
use super::ranks::{ChainQueue, Ranks, Setup, share};
use backend_native::sampler::LANES_PER_GROUP;
use bat::output::{RunMetadata, VarSpec, WriterOptions};
use bat::sampler::collect::{OutputSpec, WriteFailure};
use bat::sampler::cuda::{CudaExecutor, CudaGradients, CudaSamplerExecutor};
use bat::sampler::native::NativeExecutor;
use bat::sampler::pooled;
use bat::sampler::{
    BatchedExecutor, ChainError, ChainJob, Control, Init, InterpreterExecutor, Progress,
    ProgressState, SamplerExecutor, Settings, collect,
};
use codegen::gradient::GeneratedCodeError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Stopped by Ctrl-C (chains stop at their next draw and the file is closed
/// cleanly), by the collector, or held while it checks the draws.
static CONTROL: Control = Control::new();

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The fastest this machine runs the model on: `native` where a C++
    /// compiler (g++) is present, its gradient on the CPU backend where
    /// the compiled backend has no code for an op of the model (said
    /// once, with the ops' lines); else `cpu` (said once, with the
    /// reason). The same draws either way.
    Auto,
    /// The batched executors interpreting the batching IR over all chains.
    Cpu,
    /// The CUDA device (the sampler program and the gradients on the GPU).
    Cuda,
    /// The sampler and gradient programs compiled to machine code (g++),
    /// each chain a lane of host state, chains split over the threads (a
    /// gradient it has no code for runs on `cpu`'s, said once).
    Native,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adapt {
    /// Stan's windowed adaptation, each chain on its own.
    Stan,
    /// One step size and metric for all chains, from all chains' iterations.
    Pooled,
}

/// The inverse metric's form (`bat run --metric`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Diagonal (CmdStan's diag_e).
    Diag,
    /// Dense (CmdStan's dense_e).
    Dense,
}

impl Metric {
    fn sampler(self) -> bat::sampler::Metric {
        match self {
            Metric::Diag => bat::sampler::Metric::Diag,
            Metric::Dense => bat::sampler::Metric::Dense,
        }
    }

    /// CmdStan's name.
    fn name(self) -> &'static str {
        match self {
            Metric::Diag => "diag_e",
            Metric::Dense => "dense_e",
        }
    }
}

/// The transition every iteration runs (`bat run --algorithm`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Stan's NUTS.
    Nuts,
    /// Jittered HMC, its trajectory length adapted across chains by the
    /// ChEES criterion during pooled warmup.
    Chees,
}

impl Algorithm {
    /// Warmup adaptation when `--adapt` is not given.
    pub fn default_adapt(self) -> Adapt {
        match self {
            Algorithm::Nuts => Adapt::Stan,
            Algorithm::Chees => Adapt::Pooled,
        }
    }

    /// Target acceptance when `--adapt-delta` is not given: Stan's for
    /// NUTS; for HMC, the optimal acceptance rate of Beskos et al. (2013),
    /// as BlackJAX's ChEES.
    pub fn default_adapt_delta(self) -> f64 {
        match self {
            Algorithm::Nuts => 0.8,
            Algorithm::Chees => 0.651,
        }
    }

    fn sampler(self) -> bat::sampler::Algorithm {
        match self {
            Algorithm::Nuts => bat::sampler::Algorithm::Nuts,
            Algorithm::Chees => bat::sampler::Algorithm::Chees,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Nuts => "nuts",
            Algorithm::Chees => "chees",
        }
    }
}

impl Adapt {
    /// Warmup iterations when `--warmup` is not given.
    pub fn default_warmup(self) -> usize {
        match self {
            Adapt::Stan => 1000,
            Adapt::Pooled => 200,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batching {
    /// Program-counter autobatching: all chains as lanes of one batch, explicit stacks.
    Pc,
    /// Local static autobatching: all chains as lanes of one batch, host recursion.
    Local,
}

pub struct Options<'a> {
    pub file: &'a Path,
    pub data: Option<&'a Path>,
    pub chains: usize,
    pub warmup: usize,
    pub samples: usize,
    pub thin: usize,
    pub seed: Option<u64>,
    pub algorithm: Algorithm,
    /// `--max-depth` if given (NUTS only).
    pub max_depth: Option<usize>,
    pub adapt_delta: f64,
    pub adapt: Adapt,
    pub metric: Metric,
    pub init: Option<&'a str>,
    pub output: Option<&'a Path>,
    pub save_warmup: bool,
    /// Sample even when the file's estimated size exceeds the free space.
    pub ignore_disk_space: bool,
    /// Stop once `lp__` and every posterior quantity reach this (`--target-ess`,
    /// `--max-rhat`).
    pub target: Option<bat::sampler::EssTarget>,
    pub backend: Backend,
    pub batching: Batching,
    pub threads: usize,
    /// Lanes of the batch (0: one per chain).
    pub lanes: usize,
    /// `--backend cuda`: the sampler program on the host, only the
    /// gradients on the device.
    pub host_sampler: bool,
    /// `--backend cuda`: the sampler program on the device (the default;
    /// the flag is an alias kept for earlier command lines).
    pub device_sampler: bool,
    pub color: bool,
}

/// NUTS's maximum tree depth when `--max-depth` is not given (Stan's).
pub const DEFAULT_MAX_DEPTH: usize = 10;

/// Developer switch: `BAT_EXECUTOR=interp` runs the reference executor
/// (the scalar interpreter, one chain per task) instead of the batched one.
const EXECUTOR_VAR: &str = "BAT_EXECUTOR";

fn interpreter_requested() -> bool {
    std::env::var(EXECUTOR_VAR).is_ok_and(|v| v == "interp")
}

fn executor_name(batching: Batching) -> &'static str {
    match (interpreter_requested(), batching) {
        (true, _) => "interpreter",
        (false, Batching::Pc) => "pc",
        (false, Batching::Local) => "local",
    }
}

fn executor(batching: Batching, threads: usize, lanes: usize) -> Box<dyn SamplerExecutor + Send> {
    if interpreter_requested() {
        return Box::new(InterpreterExecutor { threads });
    }
    let batching = match batching {
        Batching::Pc => backend_cpu::exec::Batching::ProgramCounter,
        Batching::Local => backend_cpu::exec::Batching::Local,
    };
    Box::new(BatchedExecutor {
        batching,
        threads,
        gemm: true,
        lanes,
    })
}

impl Options<'_> {
    /// The sampler program runs on the CUDA device (`--backend cuda`
    /// without `--host-sampler`).
    fn sampler_on_device(&self) -> bool {
        self.backend == Backend::Cuda && !self.host_sampler
    }
}

/// With `--backend cuda`: the sampler program on the device (the default),
/// or with `--host-sampler` on the host (all chains as lanes of one batch)
/// with the model's gradients on the CUDA device. With the default
/// `--threads 0` the host's chains run as one sub-batch, so each gradient
/// evaluation is one device call for all waiting chains.
fn cuda_executor(
    opts: &Options,
    job: &ChainJob<'_>,
    compiled: &model::Compiled,
) -> Result<Box<dyn SamplerExecutor + Send>, Reported> {
    let refused = |e: GeneratedCodeError| {
        eprintln!("error: {e}");
        for line in e.refused_lines(&compiled.file.text) {
            eprintln!("  {}: {line}", compiled.file.name);
        }
        if matches!(e, GeneratedCodeError::Refused(_)) {
            eprintln!("  (use --backend cpu)");
        }
        Reported
    };
    if opts.sampler_on_device() {
        let executor = CudaSamplerExecutor::new(job, opts.chains).map_err(refused)?;
        return Ok(Box::new(executor));
    }
    let gradients = CudaGradients::new(job, opts.chains).map_err(refused)?;
    let batching = match opts.batching {
        Batching::Pc => backend_cpu::exec::Batching::ProgramCounter,
        Batching::Local => backend_cpu::exec::Batching::Local,
    };
    Ok(Box::new(CudaExecutor {
        sampler: BatchedExecutor {
            batching,
            threads: opts.threads.max(1),
            gemm: true,
            lanes: opts.lanes,
        },
        gradients,
    }))
}

/// `--backend auto`: the compiled sampler and gradient programs where this
/// machine can build them for the model (the gradient on the CPU
/// backend's gradient program where the compiled backend cannot build
/// it, said once), else the CPU backend's batched executor, with one note
/// saying why. Returns the backend that runs.
fn auto_executor(
    opts: &Options,
    job: &ChainJob<'_>,
    compiled: &model::Compiled,
) -> (Box<dyn SamplerExecutor + Send>, Backend) {
    let cpu = || executor(opts.batching, opts.threads, opts.lanes);
    // Options that only the CPU backend's executors have choose it.
    if opts.batching != Batching::Pc || opts.lanes > 0 || interpreter_requested() {
        return (cpu(), Backend::Cpu);
    }
    if let Err(why) = codegen::shim::compiler_available() {
        eprintln!(
            "note: {why}: this run uses the interpreting CPU backend (the same draws, \
             several times slower on most models); install g++ to compile models"
        );
        return (cpu(), Backend::Cpu);
    }
    let started = Instant::now();
    match NativeExecutor::new(job, opts.threads) {
        Ok(executor) => {
            compiled_note(&executor, started.elapsed());
            gradient_fallback_note(&executor, compiled);
            (Box::new(executor), Backend::Native)
        }
        Err(e) => {
            eprintln!(
                "internal error: the compiled backend failed on this model; this run uses the \
                 interpreting CPU backend instead (the same draws, slower). Please report it:"
            );
            for line in e.to_string().lines().take(MAX_INTERNAL_ERROR_LINES) {
                eprintln!("  {line}");
            }
            (cpu(), Backend::Cpu)
        }
    }
}

/// What compiling the model cost, when it took time.
fn compiled_note(executor: &NativeExecutor, took: Duration) {
    let took = took.as_secs_f64();
    if executor.starts_quick() {
        eprintln!(
            "note: compiled the model to machine code in {took:.1} s, a quick build; \
             an optimized build compiles meanwhile and takes over when ready (the same \
             draws; cached: later runs start with it)"
        );
    } else if took > 1.0 {
        eprintln!(
            "note: compiled the model to machine code in {took:.1} s (cached: later runs of it start at once)"
        );
    }
}

/// Said once when the compiled sampler's gradient calls are answered by
/// the CPU backend's gradient program: which ops the generator lacks (by
/// the model's lines), or that compiling the generated gradient failed.
fn gradient_fallback_note(executor: &NativeExecutor, compiled: &model::Compiled) {
    let Some(why) = &executor.gradient_fallback else {
        return;
    };
    let runs = "the model's log density and its gradient (the transformed parameters and model \
                blocks) run on the interpreting CPU backend, the sampler compiled (the same draws)";
    if let GeneratedCodeError::Refused(_) = why {
        eprintln!("note: the compiled backend has no code yet for the ops below: {runs}");
        for line in why.refused_lines(&compiled.file.text) {
            eprintln!("  {}: {line}", compiled.file.name);
        }
        return;
    }
    eprintln!(
        "internal error: compiling the model's log density gradient failed: {runs}. Please report it:"
    );
    let source = &compiled.file.text;
    let at = &executor.gradient_failed_at;
    for &span in at.iter().take(MAX_FAILED_STATEMENTS) {
        let (line, column) = codegen::program::position(source, span);
        let text = (source.get(span.start as usize..span.end as usize))
            .and_then(|t| t.lines().next())
            .unwrap_or("");
        eprintln!(
            "  {}: line {line}, column {column}: `{text}`: its generated code failed to compile",
            compiled.file.name
        );
    }
    if at.len() > MAX_FAILED_STATEMENTS {
        eprintln!("  ... and {} more", at.len() - MAX_FAILED_STATEMENTS);
    }
    for line in why.to_string().lines().take(MAX_INTERNAL_ERROR_LINES) {
        eprintln!("  {line}");
    }
}

/// The model's statements named with a compile error in generated code.
const MAX_FAILED_STATEMENTS: usize = 12;

/// Lines of a compiler's log shown with an internal error.
const MAX_INTERNAL_ERROR_LINES: usize = 20;

/// `--backend native`: the compiled sampler and gradient programs.
fn native_executor(
    opts: &Options,
    job: &ChainJob<'_>,
    compiled: &model::Compiled,
) -> Result<Box<dyn SamplerExecutor + Send>, Reported> {
    let started = Instant::now();
    match NativeExecutor::new(job, opts.threads) {
        Ok(executor) => {
            compiled_note(&executor, started.elapsed());
            gradient_fallback_note(&executor, compiled);
            Ok(Box::new(executor))
        }
        // Only the sampler program failing (a model's gradient the
        // backend cannot compile runs on the CPU backend's).
        Err(e) => {
            let message = e.to_string();
            let mut lines = message.lines();
            eprintln!("error: the native backend: {}", lines.next().unwrap_or(""));
            for line in lines.take(MAX_INTERNAL_ERROR_LINES) {
                eprintln!("  {line}");
            }
            Err(Reported)
        }
    }
}

/// Options that do not apply where the sampler runs are refused, never
/// ignored.
fn check_sampler_options(opts: &Options) -> Result<(), Reported> {
    let refuse = |message: &str| {
        eprintln!("error: {message}");
        Err(Reported)
    };
    if opts.backend != Backend::Cuda {
        if opts.device_sampler {
            return refuse(
                "--device-sampler runs the sampler on the CUDA device; it needs --backend cuda",
            );
        }
        if opts.host_sampler {
            return refuse(
                "--host-sampler keeps the sampler on the host while the CUDA device computes gradients; it needs --backend cuda",
            );
        }
    }
    if opts.sampler_on_device() {
        // The device runs every chain as one lane of its own: there are no
        // host worker threads or host batching to choose.
        if opts.threads != 0 {
            return refuse(
                "--threads sets the host's worker threads, but with --backend cuda the sampler runs on the device; drop --threads, or add --host-sampler to run the sampler on the host",
            );
        }
        if opts.batching != Batching::Pc {
            return refuse(
                "--batching local batches the host's sampler, but with --backend cuda the sampler runs on the device; add --host-sampler to run the sampler on the host",
            );
        }
    }
    if opts.backend == Backend::Native && opts.batching != Batching::Pc {
        return refuse(
            "--batching local batches the CPU backend's sampler program; with --backend native the sampler is compiled and each chain runs alone up to its next gradient, so there is no batching to choose (drop --batching, or use --backend cpu)",
        );
    }
    if opts.algorithm == Algorithm::Chees {
        if opts.adapt == Adapt::Stan {
            return refuse(
                "--algorithm chees adapts its trajectory length across all chains, which needs pooled warmup: drop --adapt stan",
            );
        }
        if opts.max_depth.is_some() {
            return refuse(
                "--max-depth bounds NUTS's trees, but --algorithm chees runs jittered HMC (its trajectory length is adapted): drop --max-depth",
            );
        }
    }
    if opts.metric == Metric::Dense && opts.adapt == Adapt::Stan {
        return refuse(
            "--metric dense is adapted only by pooled warmup for now: add --adapt pooled (or drop --metric dense)",
        );
    }
    if opts.adapt == Adapt::Pooled && opts.save_warmup {
        return refuse(
            "--save-warmup with --adapt pooled: pooled warmup runs every chain in short synchronized segments, each with the kernel adapted so far, and does not write them; drop --save-warmup (the adapted step size and metric are in the file's sample_stats and attributes either way)",
        );
    }
    // Nothing would be kept: no file, and the run's adaptation lost.
    if opts.samples == 0 && !opts.save_warmup {
        return refuse(
            "--samples 0 keeps no draws, so nothing would be written; add --save-warmup to keep the warmup draws (and the adapted step sizes and metrics)",
        );
    }
    if opts.target.is_some() {
        if opts.samples == 0 {
            return refuse(
                "--target-ess stops sampling once the draws are enough, but --samples 0 makes none; give --samples the most draws per chain to make",
            );
        }
        // R-hat compares chains: one chain has none.
        if opts.chains < 2 {
            return refuse(
                "--target-ess needs R-hat, which compares chains: run at least 2 chains (--chains)",
            );
        }
    }
    // A pool of chains on fewer lanes needs lanes that start a new chain
    // while the others go on: only the host's program-counter executor.
    if opts.lanes > 0
        && (opts.batching != Batching::Pc
            || opts.sampler_on_device()
            || opts.backend == Backend::Native)
    {
        return refuse(
            "--lanes needs --batching pc with the sampler on the host \
             (local batching, the device sampler and --backend native run one lane per chain; with --backend cuda add --host-sampler)",
        );
    }
    Ok(())
}

pub fn run(opts: &Options, ranks: &Ranks) -> ExitCode {
    let code = match sample(opts, ranks) {
        Ok(code) => code,
        Err(Reported) => ExitCode::FAILURE,
    };
    print_op_profile();
    code
}

/// Developer switch (`BAT_PROFILE_OPS=1`): where the batched executor's
/// time went, op by op, on stderr (`bat run`: the sampler program's ops, a
/// gradient evaluation counting as its call; `bat bench`: the gradient
/// program's statements).
pub(super) fn print_op_profile() {
    if backend_cpu::exec::profile::enabled() {
        let entries = backend_cpu::exec::profile::take();
        eprint!("{}", backend_cpu::exec::profile::report(&entries, 40));
    }
}

/// What every rank sets up before sampling.
struct Prepared {
    compiled: model::Compiled,
    grad: language::mir::GradProgram,
    model: runtime::Model,
    data: Option<PathBuf>,
    settings: Settings,
    output_path: PathBuf,
}

fn prepare(opts: &Options, ranks: &Ranks) -> Result<Prepared, Reported> {
    check_sampler_options(opts)?;
    if opts.backend == Backend::Cuda
        && let Err(why) = backend_cuda::probe()
    {
        eprintln!("error: {why}");
        return Err(Reported);
    }
    let compiled = model::compile(opts.file, opts.color)?;
    if let Some(warning) = language::mir::prints::model_print_warning(&compiled.mir) {
        model::report_more(&compiled, &[warning], opts.color);
    }
    let grad = model::gradient(&compiled, opts.color)?;
    let data = model::data_path(opts.file, opts.data);
    let model = model::instantiate(&compiled, data.as_deref())?;
    let init = parse_init(opts.init, &model)?;
    let seed = opts.seed.unwrap_or_else(random_seed);
    let settings = Settings {
        num_warmup: opts.warmup,
        num_samples: opts.samples,
        thin: opts.thin,
        max_depth: opts.max_depth.unwrap_or(DEFAULT_MAX_DEPTH),
        adapt_delta: opts.adapt_delta,
        save_warmup: opts.save_warmup,
        seed,
        init,
        kernel: None,
        report_points: false,
        algorithm: opts.algorithm.sampler(),
        jitter_start: 0,
        metric: opts.metric.sampler(),
    };
    let output_path = opts
        .output
        .map_or_else(|| default_output(opts.file), Path::to_path_buf);
    // The draws file is created at the first kept draw (its datasets need
    // the draws' shapes): a path that cannot be written would otherwise
    // fail only after the whole warmup. Rank 0 alone writes it.
    if ranks.rank() == 0
        && let Err(why) = check_writable(&output_path)
    {
        eprintln!(
            "error: cannot write the draws file `{}`: {why}",
            output_path.display()
        );
        return Err(Reported);
    }
    // Only rank 0 writes the file.
    if !opts.ignore_disk_space && ranks.rank() == 0 {
        check_disk_space(&output_path, &model, &settings, opts.chains)?;
    }
    Ok(Prepared {
        compiled,
        grad,
        model,
        data,
        settings,
        output_path,
    })
}

fn sample(opts: &Options, ranks: &Ranks) -> Result<ExitCode, Reported> {
    // Under MPI every rank sets up as one process would, and all go on
    // only if all did.
    let mut setup = Setup::start(ranks);
    let prepared = setup.agree(prepare(opts, ranks))?;
    let Prepared {
        compiled,
        grad,
        model,
        data,
        settings,
        output_path,
    } = &prepared;
    // A second Ctrl-C (or one before the handler is set) kills the process as usual.
    let _ = ctrlc::set_handler(|| {
        if CONTROL.stop.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    #[cfg(feature = "mpi")]
    if let Ranks::World(_) = ranks {
        super::ranks::world::stop_on_sigterm(&CONTROL.stop);
    }
    let job = ChainJob {
        model,
        grad,
        settings,
    };
    let chosen = match opts.backend {
        Backend::Auto => Ok(auto_executor(opts, &job, compiled)),
        Backend::Cpu => Ok((
            executor(opts.batching, opts.threads, opts.lanes),
            Backend::Cpu,
        )),
        Backend::Cuda => cuda_executor(opts, &job, compiled).map(|e| (e, Backend::Cuda)),
        Backend::Native => native_executor(opts, &job, compiled).map(|e| (e, Backend::Native)),
    };
    let (executor, backend) = setup.agree(chosen)?;
    setup.finish();
    let seed = settings.seed;
    let mut settings_json = serde_json::json!({
        "algorithm": opts.algorithm.name(),
        "metric": opts.metric.name(),
        "chains": opts.chains,
        "num_warmup": opts.warmup,
        "num_samples": opts.samples,
        "thin": opts.thin,
        "max_depth": settings.max_depth,
        "adapt_delta": opts.adapt_delta,
        "adapt": format!("{:?}", opts.adapt).to_lowercase(),
        "init": opts.init.unwrap_or("2"),
        "save_warmup": opts.save_warmup,
        "backend": format!("{backend:?}").to_lowercase(),
        "batching": format!("{:?}", opts.batching).to_lowercase(),
        "executor": match backend {
            Backend::Auto | Backend::Cpu => executor_name(opts.batching),
            Backend::Cuda if opts.sampler_on_device() => "cuda-sampler",
            Backend::Cuda => "cuda",
            Backend::Native => "native",
        },
        "threads": opts.threads,
    });
    if let Some(target) = opts.target {
        settings_json["target_ess"] = target.min_ess_bulk.into();
        settings_json["max_rhat"] = target.max_rhat.into();
    }
    if ranks.size() > 1 {
        settings_json["mpi_ranks"] = ranks.size().into();
    }
    // This rank's share of the chains (all of them in one process).
    let chains: Vec<usize> = share(opts.chains, ranks.size(), ranks.rank()).collect();
    let pooled_settings;
    let (settings, job) = if opts.adapt == Adapt::Pooled && settings.num_warmup > 0 {
        pooled_settings = pooled_warmup(opts, ranks, compiled, executor.as_ref(), &job, &chains)?;
        if let Some(kernel) = &pooled_settings.kernel {
            settings_json["step_size"] = kernel.step_size.into();
            if let Some(length) = kernel.trajectory_length {
                settings_json["trajectory_length"] = length.into();
            }
        }
        let job = ChainJob {
            settings: &pooled_settings,
            ..job
        };
        (&pooled_settings, job)
    } else {
        (settings, job)
    };
    let spec = OutputSpec {
        path: output_path,
        meta: RunMetadata {
            model_name: model.program().name.clone(),
            model_source: compiled.file.text.clone(),
            data_path: data.as_ref().map(|p| p.display().to_string()),
            seed,
            settings_json: settings_json.to_string(),
        },
        n_chains: opts.chains,
        dim: model.num_unconstrained(),
        settings,
        control: Some(&CONTROL),
        target: opts.target,
    };
    // Under MPI, ranks take groups of chains from rank 0's queue as they
    // go (a CUDA executor, which runs its chains at once, an equal share);
    // one process runs them all. (Pooled warmup, before, runs equal shares.)
    // With a target, equal shares: every chain must reach each checkpoint,
    // and a rank runs the groups it is handed one after another.
    let queue = (ranks.size() > 1 && backend != Backend::Cuda && opts.target.is_none())
        .then(|| ChainQueue::new(opts.chains, ranks.size()));
    let chains: Vec<usize> = match queue {
        Some(_) => Vec::new(),
        None => share(opts.chains, ranks.size(), ranks.rank()).collect(),
    };
    // The chains a rank runs at once: every thread's group of lanes.
    let at_once = LANES_PER_GROUP
        * match opts.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            t => t,
        };
    #[cfg(feature = "mpi")]
    if let Ranks::World(world) = ranks
        && world.rank != 0
    {
        let started = Instant::now();
        let cpu = super::ranks::CpuAtStart::now();
        let (tx, rx) = mpsc::channel();
        let (want, wants) = mpsc::channel();
        let (groups, granted) = mpsc::channel::<std::ops::Range<usize>>();
        let dynamic = queue.is_some();
        let asking = dynamic.then_some(super::ranks::world::Asking {
            wants,
            groups,
            at_once,
        });
        let sent = std::thread::scope(|scope| {
            scope.spawn(move || {
                if !dynamic {
                    executor.run(&job, &chains, &tx, &CONTROL);
                    return;
                }
                // Groups from rank 0 until it has none left.
                while want.send(()).is_ok()
                    && let Ok(group) = granted.recv()
                {
                    executor.run(&job, &group.collect::<Vec<_>>(), &tx, &CONTROL);
                }
            });
            world.send_events(rx, &CONTROL.stop, asking)
        });
        match sent {
            Ok(bytes) if super::ranks::times_requested() => {
                cpu.print(ranks, started.elapsed().as_secs_f64(), 0.0, bytes)
            }
            Ok(_) => {}
            Err(why) => {
                eprintln!("error: rank {} of {}: {why}", world.rank, world.size);
                world.abort(1);
            }
        }
        return Ok(ExitCode::from(world.receive_exit()));
    }
    let mut progress = Bar::new(opts.chains);
    let started = Instant::now();
    let cpu = super::ranks::CpuAtStart::now();
    let (tx, rx) = mpsc::channel();
    let (collected, collector_cpu, received) = std::thread::scope(|scope| {
        let own = tx.clone();
        let queue = queue.as_ref();
        scope.spawn(move || match queue {
            Some(queue) => {
                while let Some(group) = queue.take(at_once) {
                    executor.run(&job, &group.collect::<Vec<_>>(), &own, &CONTROL);
                }
            }
            None => executor.run(&job, &chains, &own, &CONTROL),
        });
        match ranks {
            Ranks::Single => {
                drop(tx);
                (collect(rx, &spec, &mut progress), 0.0, 0)
            }
            // The collector on a thread of its own: this one (MPI's)
            // brings the other ranks' events and hands out chains.
            #[cfg(feature = "mpi")]
            Ranks::World(world) => {
                let collector = std::thread::Builder::new()
                    .name("bat-collector".into())
                    .spawn_scoped(scope, || {
                        let collected = collect(rx, &spec, &mut progress);
                        (collected, super::ranks::cpu_seconds(false))
                    })
                    .expect("start the collector thread");
                let received = world
                    .receive_events(tx, &CONTROL.stop, queue)
                    .unwrap_or_else(|why| {
                        eprintln!("error: {why}");
                        world.abort(1)
                    });
                let (collected, cpu) = collector
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (collected, cpu, received)
            }
        }
    });
    if super::ranks::times_requested() {
        let wall = started.elapsed().as_secs_f64();
        cpu.print(ranks, wall, collector_cpu, received);
    }
    progress.finish(started.elapsed());
    let code = report(opts, compiled, settings, output_path, collected);
    #[cfg(feature = "mpi")]
    if let Ranks::World(world) = ranks {
        world.send_exit(*code.as_ref().unwrap_or(&1));
    }
    code.map(ExitCode::from)
}

/// Pooled warmup of this rank's `chains` (every rank's, exchanged over
/// MPI): the settings of the sampling run that follows it (no warmup, the
/// pooled kernel, each chain from where warmup left it). Rank 0 says what
/// it did, or why it failed, for all ranks.
fn pooled_warmup(
    opts: &Options,
    ranks: &Ranks,
    compiled: &model::Compiled,
    executor: &dyn SamplerExecutor,
    job: &ChainJob<'_>,
    chains: &[usize],
) -> Result<Settings, Reported> {
    let started = Instant::now();
    let gather: &dyn pooled::Gather = match ranks {
        Ranks::Single => &pooled::OneProcess,
        #[cfg(feature = "mpi")]
        Ranks::World(world) => world,
    };
    let speak = ranks.rank() == 0;
    if speak {
        eprintln!(
            "Pooled warmup: {} iterations of {} chains, synchronized every {} iterations",
            job.settings.num_warmup,
            opts.chains,
            pooled::SYNC_EVERY
        );
    }
    match pooled::warmup(executor, job, chains, opts.chains, gather, &CONTROL) {
        Ok(warmed) => {
            if speak {
                let length = match warmed.kernel.trajectory_length {
                    Some(length) => format!(
                        ", trajectory length {length:.3} ({:.0} steps)",
                        (length / warmed.kernel.step_size).ceil()
                    ),
                    None => String::new(),
                };
                let metric = match warmed.kernel.inv_metric {
                    bat::sampler::InvMetric::Diag(_) => "",
                    bat::sampler::InvMetric::Dense { .. } => ", dense metric",
                };
                eprintln!(
                    "Pooled warmup done in {} s: step size {:.3}{length}{metric}, {} divergent transitions",
                    seconds_text(started.elapsed().as_secs_f64()),
                    warmed.kernel.step_size,
                    warmed.divergences
                );
                if !warmed.restarted.is_empty() {
                    let chains: Vec<String> = warmed
                        .restarted
                        .iter()
                        .map(|c| (c + 1).to_string())
                        .collect();
                    eprintln!(
                        "  restarted from other chains' points, stuck far below them: chain{} {}",
                        if chains.len() == 1 { "" } else { "s" },
                        chains.join(", ")
                    );
                }
            }
            Ok(Settings {
                num_warmup: 0,
                save_warmup: false,
                init: Init::PerChain(warmed.starts),
                kernel: Some(warmed.kernel),
                // The jitters go on from where warmup's left off.
                jitter_start: job.settings.jitter_start + job.settings.num_warmup,
                ..job.settings.clone()
            })
        }
        Err(pooled::PooledError::Chain(failure)) if failure.interrupted => {
            if speak {
                eprintln!("Interrupted during pooled warmup: no draws were written.");
            }
            Err(Reported)
        }
        Err(pooled::PooledError::Chain(failure)) => {
            if speak {
                report_chain_error(&failure, &compiled.file.name, &compiled.file.text);
                eprintln!(
                    "error: pooled warmup stops every chain when one fails; no draws were written"
                );
            }
            Err(Reported)
        }
        Err(pooled::PooledError::Gather(why)) => {
            if speak {
                eprintln!("error: {why}; no draws were written");
            }
            Err(Reported)
        }
    }
}

/// What the run did, on stderr, and the summary of the draws file on
/// stdout; the exit status.
fn report(
    opts: &Options,
    compiled: &model::Compiled,
    settings: &Settings,
    output_path: &Path,
    collected: Result<bat::sampler::RunReport, bat::sampler::CollectError>,
) -> Result<u8, Reported> {
    let report = match collected {
        Ok(report) => report,
        Err(error) => {
            eprintln!("error: `{}`: {error}", output_path.display());
            return Err(Reported);
        }
    };
    if let Some(fullness) = report.batches.fullness() {
        let utilization = match report.batches.utilization() {
            Some(u) => format!(
                "; utilization of the gradient blocks (useful ÷ lane slots run) {:.1}%",
                100.0 * u
            ),
            None => String::new(),
        };
        eprintln!(
            "{} gradient evaluations in {} batched calls ({:.0}% of the lanes of each call on average{utilization})",
            // Counted by the calls, so an interrupted run's chains that did
            // not finish are in it too.
            report.batches.lanes,
            report.batches.calls,
            100.0 * fullness
        );
    }
    // The collector stops the chains with the same flag once the target
    // is reached: that is no interruption.
    let reached = report.target.and_then(|t| t.reached);
    let interrupted = CONTROL.is_stopped() && reached.is_none();
    let failures: Vec<&ChainError> = report
        .chain_errors
        .iter()
        .filter(|e| !e.interrupted)
        .collect();
    for failure in &failures {
        report_chain_error(failure, &compiled.file.name, &compiled.file.text);
    }
    let summarize = match &report.write_failure {
        Some(failed) => {
            failed.close_error.is_none() && failed.draws_per_chain.iter().any(|&n| n > 0)
        }
        None => report.wrote_file,
    };
    if summarize {
        match bat::summary::report_for_file(output_path) {
            Ok(summary) => {
                let stuck: Vec<usize> = summary.stuck_chains.iter().map(|s| s.chain).collect();
                if let Err(error) = bat::output::record_stuck_chains(output_path, &stuck) {
                    eprintln!(
                        "warning: cannot record stuck chains in `{}`: {error}",
                        output_path.display()
                    );
                }
                print!("{}", bat::render(&summary, bat::Format::Table));
            }
            Err(error) => eprintln!(
                "warning: cannot summarize `{}`: {error}",
                output_path.display()
            ),
        }
    }
    if let Some(failed) = &report.write_failure {
        eprintln!("{}", write_failure_message(failed, output_path, settings));
        return Ok(1);
    }
    if report.wrote_file {
        eprintln!(
            "wrote {} draws ({} chains) to `{}`",
            report.draws_written,
            opts.chains,
            output_path.display()
        );
    }
    if let Some(outcome) = &report.target
        && report.wrote_file
        && !interrupted
    {
        eprintln!("{}", target_line(outcome, settings));
    }
    if interrupted {
        eprintln!("interrupted: the file holds the draws made so far");
        return Ok(1);
    }
    Ok(if failures.is_empty() { 0 } else { 1 })
}

/// Whether the run reached its target, in one line.
fn target_line(outcome: &bat::sampler::TargetOutcome, settings: &Settings) -> String {
    let target = outcome.target;
    let criterion = format!(
        "ESS_bulk ≥ {} and R-hat < {}",
        target.min_ess_bulk, target.max_rhat
    );
    match outcome.reached {
        Some(reached) => format!(
            "target reached after {} draws per chain: every quantity has {criterion} (smallest ESS_bulk {:.0}, largest R-hat {:.4}; {} checks took {} s)",
            reached.draws,
            reached.min_ess_bulk,
            reached.max_rhat,
            outcome.checks,
            seconds_text(outcome.check_seconds),
        ),
        None => format!(
            "target not reached: not every quantity has {criterion} within {} draws per chain ({} checks took {} s)",
            settings.kept_draws().1,
            outcome.checks,
            seconds_text(outcome.check_seconds),
        ),
    }
}

/// What a failed write did to the run, in words: what happened, what the
/// file holds, and how to make the run fit.
fn write_failure_message(failed: &WriteFailure, path: &Path, settings: &Settings) -> String {
    let what = failed.in_words.unwrap_or("a write failed");
    let mut text = format!(
        "error: {what} while writing `{}`, so sampling stopped ({})",
        path.display(),
        failed.error
    );
    if let Some(close_error) = &failed.close_error {
        text += &format!(". Closing the file failed too ({close_error}): it may not be readable");
        return text;
    }
    let (_, planned) = settings.kept_draws();
    let counts = &failed.draws_per_chain;
    let (least, most) = (
        counts.iter().copied().min().unwrap_or(0),
        counts.iter().copied().max().unwrap_or(0),
    );
    let held = if least == most {
        format!("{least} of {planned} draws per chain")
    } else {
        format!(
            "{least} to {most} of {planned} draws per chain (its `draws_per_chain` attribute says how many each)"
        )
    };
    text += &format!(". The file holds {held} and opens in ArviZ and `bat summary`.");
    if failed.in_words == Some("the disk is full")
        || failed.in_words == Some("the disk quota is used up")
    {
        text += " To fit, free some space, ask for fewer draws (--samples, --chains), keep every k-th draw (--thin k) or write elsewhere (-o).";
    }
    text
}

/// Before sampling: the draws file's estimated size must fit the free
/// space of its disk (an existing file there, to be replaced, counts as
/// free), or the run stops with what it needs and how to change it.
fn check_disk_space(
    path: &Path,
    model: &runtime::Model,
    settings: &Settings,
    chains: usize,
) -> Result<(), Reported> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(free) = bat::output::room::free_bytes(dir) else {
        return Ok(()); // unknown: the writer's own checks still hold
    };
    let replaced = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len());
    let needed = estimated_file_bytes(model, settings, chains);
    if needed <= free.saturating_add(replaced) {
        return Ok(());
    }
    eprintln!(
        "error: the draws file `{}` needs about {} but its disk has {} free; ask for fewer draws (--samples, --chains), keep every k-th draw (--thin k), write elsewhere (-o), or sample anyway with --ignore-disk-space",
        path.display(),
        bytes_in_words(needed),
        bytes_in_words(free.saturating_add(replaced)),
    );
    Err(Reported)
}

/// The draws file's size for this run: the variables of one draw (from
/// the generated quantities at the origin, or the parameters alone when
/// they fail there) laid out as the writer lays them out.
fn estimated_file_bytes(model: &runtime::Model, settings: &Settings, chains: usize) -> u64 {
    let theta = vec![0.0; model.num_unconstrained()];
    let rng = runtime::Rng::new(settings.seed, 0, 0);
    let specs = model
        .generated_quantities(&theta, rng)
        .ok()
        .and_then(|draw| bat::sampler::collect::draw_specs(&draw.values).ok())
        .unwrap_or_else(|| {
            model
                .params()
                .iter()
                .filter_map(|p| Some(VarSpec::real(&p.name, &p.shape.stored_dims()?)))
                .collect()
        });
    let (warmup, sampling) = settings.kept_draws();
    let options = WriterOptions {
        n_chains: chains,
        n_draws_planned: sampling.max(1),
        n_warmup_planned: settings.save_warmup.then_some(warmup.max(1)),
    };
    bat::output::estimate_file_bytes(&specs, &options)
}

/// `2.0 MB`, `24.7 MB`, `3.1 GB` (decimal units, as `df -H`).
fn bytes_in_words(bytes: u64) -> String {
    let units = ["bytes", "kB", "MB", "GB", "TB", "PB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

/// Whether `path` can be written as the draws file, without changing an
/// existing file there (it is replaced only once draws are written): its
/// directory exists, it is not a directory, and it opens (or a new file
/// there can be created, then is removed) for writing.
fn check_writable(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err("it is a directory".into());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!("the directory `{}` does not exist", dir.display()));
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| e.to_string())
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| e.to_string())?;
        std::fs::remove_file(path).map_err(|e| e.to_string())
    }
}

fn default_output(model: &Path) -> PathBuf {
    let stem = model
        .file_stem()
        .map_or_else(|| "output".into(), |s| s.to_string_lossy().into_owned());
    PathBuf::from(format!("{stem}.h5"))
}

pub(super) fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// `--init`: a radius (`0`, `0.5`, ...) or a Stan JSON file of constrained values.
fn parse_init(init: Option<&str>, model: &runtime::Model) -> Result<Init, Reported> {
    let Some(text) = init else {
        return Ok(Init::Radius(2.0));
    };
    if let Ok(radius) = text.parse::<f64>() {
        if radius.is_finite() && radius >= 0.0 {
            return Ok(Init::Radius(radius));
        }
        eprintln!("error: --init {text}: a radius must be a finite number ≥ 0");
        return Err(Reported);
    }
    let path = Path::new(text);
    let values = model::read_json(path)?;
    let (theta, missing) = model.unconstrain_partial(&values).map_err(|e| {
        eprintln!("error: `{}`: {e}", path.display());
        Reported
    })?;
    if !missing.is_empty() {
        // As Stan: what the file leaves out starts at random.
        eprintln!(
            "note: `{}` gives no value for {}; {} uniform(−{r}, {r}) on the unconstrained scale",
            path.display(),
            missing
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if missing.len() == 1 {
                "it starts"
            } else {
                "they start"
            },
            r = bat::sampler::PARTIAL_INIT_RADIUS,
        );
    }
    Ok(Init::Values(theta))
}

fn report_chain_error(failure: &ChainError, file_name: &str, source: &str) {
    let chain = failure.chain + 1;
    eprintln!("error: chain {chain}: {}", failure.error.message);
    if let Some(last) = &failure.last_log_density_error {
        eprintln!("  the last log density evaluation failed: {}", last.message);
        render_span(last, file_name, source);
    } else {
        render_span(&failure.error, file_name, source);
    }
}

/// The progress bar on stderr, or (when stderr is not a terminal) one
/// final line.
struct Bar {
    bar: Option<ProgressBar>,
    chains: usize,
    last: ProgressState,
}

impl Bar {
    fn new(chains: usize) -> Bar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(4));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>8} [{bar:30}] {pos}/{len} iterations, ETA {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Bar {
            bar,
            chains,
            last: ProgressState::default(),
        }
    }

    fn finish(&mut self, elapsed: Duration) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let s = &self.last;
        eprintln!(
            "{} chains: {}/{} iterations in {} s, {} divergent transitions after warmup, mean acceptance {}",
            self.chains,
            s.iterations_done,
            s.iterations_total,
            seconds_text(elapsed.as_secs_f64()),
            s.divergences,
            accept_text(s.mean_accept_stat),
        );
    }
}

/// Seconds with two decimals under 10 s (a compiled run of a small model
/// takes hundredths), one above.
fn seconds_text(seconds: f64) -> String {
    if seconds < 10.0 {
        format!("{seconds:.2}")
    } else {
        format!("{seconds:.1}")
    }
}

fn accept_text(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else {
        format!("{x:.2}")
    }
}

impl Progress for Bar {
    /// On stdout, as CmdStan shows `print`, each line naming its chain;
    /// above the progress bar, which stays whole.
    fn printed(&mut self, chain: usize, lines: &[String]) {
        let text: String = lines
            .iter()
            .map(|l| format!("chain {chain}: {l}\n"))
            .collect();
        let write = || {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        };
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    fn update(&mut self, state: &ProgressState) {
        self.last = state.clone();
        if let Some(bar) = &self.bar {
            bar.set_length(state.iterations_total as u64);
            bar.set_position(state.iterations_done as u64);
            let phase = if state.warmup_done < state.warmup_total {
                "warmup"
            } else {
                "sampling"
            };
            bar.set_prefix(phase);
            bar.set_message(format!(
                "| divergences {} | accept {}",
                state.divergences,
                accept_text(state.mean_accept_stat)
            ));
        }
    }
}
