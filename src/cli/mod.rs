//! Argument parsing and dispatch for the `bat` command line.
//!
//! Exit codes: 0 success (warnings allowed), 1 when any input has an error
//! or cannot be read, 2 for usage errors (clap's default).

mod bench;
mod check;
mod cuda;
mod fmt;
mod front_end;
mod ir;
mod json;
mod logdensity;
mod model;
mod ranks;
mod run;
mod source;
mod stack;
mod summary;

use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "bat",
    version,
    about = "Stan-compatible probabilistic programming: check models, evaluate log densities and gradients, summarize draws"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and check Stan programs (`.bat` or `.stan`) and report diagnostics.
    Check {
        /// Files to check.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// How diagnostics are printed.
        #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
        message_format: MessageFormat,
        /// When to colour diagnostics (auto: stderr is a terminal and NO_COLOR is unset).
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Print an intermediate representation of a program.
    Ir {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Which representation to print.
        #[arg(long, value_enum)]
        emit: Emit,
        /// Data in Stan JSON, for `--emit cuda` (sizes; default: FILE with
        /// `.data.json` if it exists).
        #[arg(long, value_name = "DATA.json")]
        data: Option<PathBuf>,
        /// When to colour diagnostics (auto: stderr is a terminal and NO_COLOR is unset).
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Log density and gradient at one point (as BridgeStan's log_density_gradient).
    Logdensity {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Data in Stan JSON (default: FILE with `.data.json` if it exists).
        #[arg(long, value_name = "DATA.json")]
        data: Option<PathBuf>,
        /// Parameter values: constrained values by name in Stan JSON, or with
        /// --unconstrained a JSON array of the unconstrained vector.
        #[arg(long, value_name = "PARAMS.json")]
        params: PathBuf,
        /// PARAMS.json holds the unconstrained vector (Stan's order).
        #[arg(long)]
        unconstrained: bool,
        /// Leave out the log-Jacobian of the parameter transforms.
        #[arg(long)]
        no_jacobian: bool,
        /// When to colour diagnostics.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Sample from a model's posterior with Stan's NUTS (adaptive, diagonal
    /// metric), or jittered HMC with ChEES adaptation, over many chains;
    /// writes an HDF5 InferenceData file and prints its summary.
    Run {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Data in Stan JSON (default: FILE with `.data.json` if it exists).
        #[arg(long, value_name = "DATA.json")]
        data: Option<PathBuf>,
        /// Number of chains.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
        chains: u32,
        /// Warmup (adaptation) iterations per chain [default: 1000, or 200
        /// with --adapt pooled].
        #[arg(long)]
        warmup: Option<u32>,
        /// Sampling iterations per chain.
        #[arg(long, default_value_t = 1000)]
        samples: u32,
        /// Keep every THIN-th iteration.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        thin: u32,
        /// Random seed (default: from the clock; stored in the output).
        #[arg(long)]
        seed: Option<u64>,
        /// The transition: Stan's NUTS, or jittered HMC whose trajectory
        /// length is adapted across all chains by the ChEES criterion
        /// (chees: needs pooled warmup, so it implies --adapt pooled and
        /// refuses --adapt stan and --max-depth).
        #[arg(long, value_enum, default_value_t = run::Algorithm::Nuts)]
        algorithm: run::Algorithm,
        /// Maximum tree depth of NUTS [default: 10].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=30))]
        max_depth: Option<u32>,
        /// Target acceptance statistic of step-size adaptation, in (0, 1)
        /// [default: 0.8, or 0.651 with --algorithm chees].
        #[arg(long, value_parser = parse_adapt_delta)]
        adapt_delta: Option<f64>,
        /// Warmup adaptation: each chain its own step size and metric, as
        /// Stan (stan), or one shared by all chains and adapted from all
        /// their iterations at once (pooled: with many chains a short warmup
        /// suffices) [default: stan, or pooled with --algorithm chees].
        #[arg(long, value_enum)]
        adapt: Option<run::Adapt>,
        /// The inverse metric: diagonal (CmdStan's diag_e), or a dense
        /// matrix estimated from the chains' covariance (dense_e; needs
        /// --adapt pooled for now).
        #[arg(long, value_enum, default_value_t = run::Metric::Diag)]
        metric: run::Metric,
        /// Initial values: a radius R (uniform(-R, R) on the unconstrained
        /// scale; 0 for all zeros) or a Stan JSON file of constrained values.
        #[arg(long, value_name = "0|R|FILE.json")]
        init: Option<String>,
        /// Output file (default: FILE's stem with `.h5`, in the current directory).
        #[arg(long, short = 'o', value_name = "OUT.h5")]
        output: Option<PathBuf>,
        /// Also write the warmup draws (groups warmup_posterior, warmup_sample_stats).
        #[arg(long)]
        save_warmup: bool,
        /// Sample even when the draws file's estimated size exceeds the free
        /// disk space (by default the run stops before sampling). Should the
        /// disk fill, the file keeps every draw written before.
        #[arg(long)]
        ignore_disk_space: bool,
        /// Stop sampling once lp__ and every posterior quantity (each
        /// element of the parameters, transformed parameters and generated
        /// quantities) have ESS_bulk ≥ N and R-hat < --max-rhat over all
        /// chains. Checked when every chain has N ÷ chains kept draws (at
        /// least 10, at most 100), then every half of that (or a tenth of
        /// the draws so far, if more); every chain keeps the same draws,
        /// the first of the run without a target. --samples stays the most
        /// draws per chain.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        target_ess: Option<u32>,
        /// With --target-ess: R-hat must be below R for every quantity.
        #[arg(long, value_name = "R", default_value_t = 1.01, value_parser = parse_max_rhat, requires = "target_ess")]
        max_rhat: f64,
        /// Where to run (auto: compiled with g++ where it can be, else cpu).
        #[arg(long, value_enum, default_value_t = run::Backend::Auto)]
        backend: run::Backend,
        /// Batching executor: all chains as lanes of one batch, program-counter
        /// (pc) or local static (local) autobatching.
        #[arg(long, value_enum, default_value_t = run::Batching::Pc)]
        batching: run::Batching,
        /// Worker threads (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Lanes of the batch (0: one per chain). With fewer lanes than
        /// chains (`pc` batching), a lane whose chain is done starts the next
        /// waiting chain; draws are the same either way.
        #[arg(long, default_value_t = 0)]
        lanes: usize,
        /// With `--backend cuda`: run the sampler program (NUTS) on the
        /// host's batched executor and only the model's gradients on the
        /// device (honours --threads, --batching and --lanes).
        #[arg(long)]
        host_sampler: bool,
        /// With `--backend cuda`: the sampler program on the device, the
        /// default (kept as an alias).
        #[arg(long, conflicts_with = "host_sampler")]
        device_sampler: bool,
        /// When to colour diagnostics.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Time batched log-density gradient evaluations per number of chains.
    Bench {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Data in Stan JSON (default: FILE with `.data.json` if it exists).
        #[arg(long, value_name = "DATA.json")]
        data: Option<PathBuf>,
        /// Chain counts (lanes per batch) to measure.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 16, 256, 1024], value_parser = parse_chain_count)]
        chains: Vec<usize>,
        /// How control flow is batched (several: comma-separated); `pc`,
        /// as `bat run`, by default.
        #[arg(long, value_enum, value_delimiter = ',', default_values_t = [BatchingChoice::Pc])]
        batching: Vec<BatchingChoice>,
        /// Threads the batch is split over (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// What evaluates the gradients: `cpu` interprets the batching IR
        /// over the whole batch (backend-cpu); `native` compiles the
        /// gradient program to machine code with g++ and runs it lane by
        /// lane (the CUDA backend's generated code, on the CPU); `auto`, as
        /// `bat run`, native where it can, else cpu.
        #[arg(long, value_enum, default_value_t = bench::Backend::Auto)]
        backend: bench::Backend,
        /// Seconds spent measuring each chain count.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        #[arg(long, value_enum, default_value_t = BenchFormat::Table)]
        format: BenchFormat,
        /// When to colour diagnostics.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Summarize the draws in a bat output file (Mean, MCSE, SD, quantiles, ESS, R-hat).
    Summary {
        #[arg(value_name = "FILE.h5")]
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = SummaryFormat::Table)]
        format: SummaryFormat,
        /// Group consecutive chains into K superchains of equal size and add
        /// nested R-hat (column nR_hat; Margossian et al. 2024). Chains
        /// that fill no superchain are left out of it. At least 2 and at
        /// most the number of chains.
        #[arg(long, value_name = "K", value_parser = parse_superchains)]
        superchains: Option<usize>,
    },
    /// Format Stan programs in place in canonical style, keeping comments.
    Fmt {
        /// Files to format (`.stan`, `.bat`, `.stanfunctions`).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Change nothing; print a diff of each file that is not formatted and exit 1.
        #[arg(long)]
        check: bool,
        /// When to colour diagnostics (auto: stderr is a terminal and NO_COLOR is unset).
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Run the language server over stdin/stdout (started by editors).
    Lsp,
    /// Check for a CUDA driver and device (exit code 1 when there is none).
    CudaProbe,
}

/// A chain count of `bat bench`: at least 1.
fn parse_chain_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("a batch needs at least one chain".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("`{text}` is not a chain count: {e}")),
    }
}

/// A superchain count of `bat summary`: at least 2.
fn parse_superchains(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        Ok(_) => Err("nested R-hat needs at least 2 superchains".into()),
        Err(e) => Err(format!("`{text}` is not a superchain count: {e}")),
    }
}

fn parse_adapt_delta(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(format!("`{text}` is not a number strictly between 0 and 1")),
    }
}

fn parse_max_rhat(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 1.0 && x.is_finite() => Ok(x),
        _ => Err(format!(
            "`{text}` is not a number greater than 1 (R-hat is at least 1 for any draws)"
        )),
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFormat {
    /// Aligned columns like CmdStan's stansummary, with warnings.
    Table,
    Csv,
    Json,
}

impl From<SummaryFormat> for bat::Format {
    fn from(f: SummaryFormat) -> bat::Format {
        match f {
            SummaryFormat::Table => bat::Format::Table,
            SummaryFormat::Csv => bat::Format::Csv,
            SummaryFormat::Json => bat::Format::Json,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchingChoice {
    /// Local static autobatching (host recursion for calls).
    Local,
    /// Program-counter autobatching (explicit stacks).
    Pc,
}

impl From<BatchingChoice> for backend_cpu::exec::Batching {
    fn from(b: BatchingChoice) -> backend_cpu::exec::Batching {
        match b {
            BatchingChoice::Local => backend_cpu::exec::Batching::Local,
            BatchingChoice::Pc => backend_cpu::exec::Batching::ProgramCounter,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchFormat {
    Table,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageFormat {
    /// codespan-rendered diagnostics on stderr and a summary line.
    Human,
    /// One JSON object per diagnostic per line on stdout.
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour text written to stderr.
    fn for_stderr(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stderr().is_terminal()
            }
        }
    }
}

/// Representations `bat ir --emit` can print. Later stages add variants.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The parsed syntax tree.
    Ast,
    /// The model IR: data, transformed data, parameters with their
    /// transforms, transformed parameters, model, generated quantities.
    Mir,
    /// The gradient program: forward sweep then reverse sweep of the log density.
    Grad,
    /// The gradient program as a control-flow graph of basic blocks (the
    /// batching IR), followed by generated quantities.
    Cfg,
    /// The program-counter IR: all functions in one graph with explicit
    /// stacks, each variable's storage class and batched/shared marks.
    Pc,
    /// The CUDA C kernels of the gradient program, sized for the data.
    Cuda,
    /// The CUDA C kernels of the sampler program (NUTS) for the model's
    /// number of unconstrained parameters (`bat run --device-sampler`).
    CudaSampler,
    /// Debugging: the sampler program's (NUTS) CFG IR; FILE is not read.
    #[value(hide = true)]
    SamplerCfg,
    /// Debugging: the sampler program's (NUTS) PC IR; FILE is not read.
    #[value(hide = true)]
    SamplerPc,
}

pub fn run() -> ExitCode {
    if let Some((size, rank)) = ranks::launched() {
        return run_ranked(size, rank);
    }
    dispatch(Cli::parse(), &ranks::Ranks::Single)
}

/// Started by an MPI launcher as one of several processes: built without
/// MPI, every rank refuses (rank 0 says why).
#[cfg(not(feature = "mpi"))]
fn run_ranked(size: usize, rank: usize) -> ExitCode {
    if rank == 0 {
        eprintln!(
            "error: started as one of {size} MPI processes, but this bat was built without MPI \
             (build it with `cargo build --release --features mpi`, or run one process)"
        );
    }
    ExitCode::FAILURE
}

/// Started by an MPI launcher as one of several processes: every rank
/// parses its command line and rank 0 judges them all (one message for a
/// bad argument, whichever rank has it; the same arguments everywhere),
/// then gives every rank the seed (its own or drawn), so that all ranks
/// run the same chains.
#[cfg(feature = "mpi")]
fn run_ranked(size: usize, rank: usize) -> ExitCode {
    let world = match ranks::world::World::init() {
        Ok(world) => world,
        Err(why) => {
            eprintln!("error: rank {rank} of {size}: cannot start MPI: {why}");
            return ExitCode::FAILURE;
        }
    };
    // Processes started without MPI's knowledge (`srun` without an MPI
    // plugin) each see a world of their own: each would sample every chain
    // into the same file.
    if world.size != size {
        if rank == 0 {
            eprintln!(
                "error: the launcher started {size} processes, but MPI sees {} (under Slurm, run `srun --mpi=pmix` or `--mpi=pmi2`; `srun --mpi=list` lists them)",
                world.size
            );
        }
        return ExitCode::FAILURE;
    }
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let args_text = args.join("\u{0}");
    let parsed = Cli::try_parse();
    let said = match &parsed {
        Ok(_) => format!("ok\u{0}{args_text}"),
        Err(e) => format!("error\u{0}{e}"),
    };
    let (go, payload) = world.agree(said.as_bytes(), |theirs| {
        // Rank 0 speaks for all: its own error first (the others' as a rule
        // the same), else the first rank with another verdict.
        let mine = match &parsed {
            Err(e) => {
                let _ = e.print();
                return (false, vec![e.exit_code().clamp(0, 255) as u8]);
            }
            Ok(cli) => cli,
        };
        if !matches!(mine.command, Command::Run { .. }) {
            eprintln!(
                "error: under an MPI launcher only `bat run` runs (its chains shared over the ranks); run other commands as one process"
            );
            return (false, vec![2]);
        }
        for (rank, message) in theirs {
            let text = String::from_utf8_lossy(&message);
            let (verdict, rest) = text.split_once('\u{0}').unwrap_or((&text, ""));
            if verdict != "ok" {
                eprintln!(
                    "error: rank {rank} of {size}: {}",
                    rest.trim_start_matches("error: ").trim_end()
                );
                return (false, vec![2]);
            }
            if rest != args_text {
                eprintln!(
                    "error: rank {rank} of {size} was started with other arguments than rank 0 ({}), but every rank must run the same command",
                    rest.replace('\u{0}', " ")
                );
                return (false, vec![2]);
            }
        }
        let seed = match &mine.command {
            Command::Run { seed, .. } => seed.unwrap_or_else(run::random_seed),
            _ => 0,
        };
        (true, seed.to_le_bytes().to_vec())
    });
    let code = |payload: &[u8]| ExitCode::from(payload.first().copied().unwrap_or(1));
    if !go {
        return code(&payload);
    }
    let (Ok(mut cli), Ok(seed)) = (parsed, <[u8; 8]>::try_from(payload.as_slice())) else {
        return ExitCode::FAILURE;
    };
    if let Command::Run { seed: s, .. } = &mut cli.command {
        *s = Some(u64::from_le_bytes(seed));
    }
    dispatch(cli, &ranks::Ranks::World(world))
}

fn dispatch(cli: Cli, ranks: &ranks::Ranks) -> ExitCode {
    match cli.command {
        Command::Check {
            files,
            message_format,
            color,
        } => check::run(&files, message_format, color.for_stderr()),
        Command::Ir {
            file,
            emit: Emit::Cuda,
            data,
            color,
        } => cuda::emit(&file, data.as_deref(), color.for_stderr()),
        Command::Ir {
            file,
            emit: Emit::CudaSampler,
            data,
            color,
        } => cuda::emit_sampler(&file, data.as_deref(), color.for_stderr()),
        Command::Ir {
            file, emit, color, ..
        } => ir::run(&file, emit, color.for_stderr()),
        Command::CudaProbe => cuda::probe(),
        Command::Logdensity {
            file,
            data,
            params,
            unconstrained,
            no_jacobian,
            color,
        } => logdensity::run(&logdensity::Options {
            file: &file,
            data: data.as_deref(),
            params: &params,
            unconstrained,
            jacobian: !no_jacobian,
            color: color.for_stderr(),
        }),
        Command::Fmt {
            files,
            check,
            color,
        } => fmt::run(&files, check, color.for_stderr()),
        Command::Run {
            file,
            data,
            chains,
            warmup,
            samples,
            thin,
            seed,
            algorithm,
            max_depth,
            adapt_delta,
            adapt,
            metric,
            init,
            output,
            save_warmup,
            ignore_disk_space,
            target_ess,
            max_rhat,
            backend,
            batching,
            threads,
            lanes,
            host_sampler,
            device_sampler,
            color,
        } => {
            let adapt = adapt.unwrap_or(algorithm.default_adapt());
            run::run(
                &run::Options {
                    file: &file,
                    data: data.as_deref(),
                    chains: chains as usize,
                    warmup: warmup.map_or(adapt.default_warmup(), |w| w as usize),
                    samples: samples as usize,
                    thin: thin as usize,
                    seed,
                    algorithm,
                    max_depth: max_depth.map(|d| d as usize),
                    adapt_delta: adapt_delta.unwrap_or(algorithm.default_adapt_delta()),
                    adapt,
                    metric,
                    init: init.as_deref(),
                    output: output.as_deref(),
                    save_warmup,
                    ignore_disk_space,
                    target: target_ess.map(|n| bat::sampler::EssTarget {
                        min_ess_bulk: f64::from(n),
                        max_rhat,
                    }),
                    backend,
                    batching,
                    threads,
                    lanes,
                    host_sampler,
                    device_sampler,
                    color: color.for_stderr(),
                },
                ranks,
            )
        }
        Command::Bench {
            file,
            data,
            chains,
            batching,
            threads,
            backend,
            seconds,
            format,
            color,
        } => {
            let batching: Vec<_> = batching.into_iter().map(Into::into).collect();
            bench::run(&bench::Options {
                file: &file,
                data: data.as_deref(),
                chains: &chains,
                batching: &batching,
                threads,
                backend,
                seconds,
                json: format == BenchFormat::Json,
                color: color.for_stderr(),
            })
        }
        Command::Summary {
            file,
            format,
            superchains,
        } => summary::run(&file, format.into(), bat::summary::Options { superchains }),
        Command::Lsp => match lsp::run_stdio() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("bat lsp: {error}");
                ExitCode::FAILURE
            }
        },
    }
}
