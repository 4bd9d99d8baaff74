//! `cargo bench --bench time_to_result`: wall time from start until the
//! draws are enough — every posterior quantity with ESS_bulk ≥ 10,000 and
//! R-hat < 1.01 over 1,024 chains — for `bat run --adapt pooled
//! --target-ess`, for bat's default adaptation (`--adapt stan`) with the
//! smallest warmup that still gets there, and for BlackJAX's ChEES-HMC.
//!
//! Problems: the three synthetic examples (eight schools non-centered, the
//! 100-d correlated Gaussian, the logistic regression with N = 10,000 and
//! D = 100; `examples/*.bat` with their `.data.json`) and posteriors of
//! `../shared/corpus/posteriordb` (or `$BAT_CORPUS/posteriordb`).
//!
//! For each problem, one after the other in this one process:
//! 1. `compile s`: a short `bat run` (2 chains × (20 + 20)) with an empty
//!    native compile cache of the bench's own (`BAT_NATIVE_CACHE`): the
//!    model's compile, once. Every timed run after it finds the compiled
//!    model in that cache, so the times below are `bat run` from start to
//!    exit without g++ (parsing, data, loading the cached library,
//!    warmup, sampling, the target checks, writing the file).
//! 2. `pooled s`: `bat run --chains C --adapt pooled --target-ess T
//!    --samples CAP` (pooled warmup's default 200 iterations), start to
//!    exit; `draws` the draws per chain at the stop.
//! 3. `default`: `bat run --chains C --adapt stan --target-ess T --samples
//!    CAP --warmup W` for W in `BAT_BENCH_WARMUPS` in that order; the first
//!    that passes is reported (its W and time). Passing: the run stopped
//!    with the target reached (`target reached after ...`), and for a
//!    posteriordb posterior also the reference check (every reference mean
//!    within 5 combined MCSE, sd within ±20%; `tests/support/posteriordb.rs`).
//!    Each of these runs is stopped after `BAT_BENCH_DEFAULT_LIMIT` × the
//!    pooled time (and `BAT_BENCH_TIMEOUT`): a warmup that does not pass by
//!    then counts as not passing, and when none passes the row says so
//!    (the ratio is then above the limit factor).
//! 4. `bat ChEES s`: `bat run --chains C --algorithm chees --target-ess T
//!    --samples CAP` (bat's jittered HMC with ChEES adaptation over pooled
//!    warmup's default 200 iterations), start to exit, passing as above;
//!    `draws` the draws per chain at the stop, `bCh/pool` its time ÷
//!    `pooled s`.
//! 5. `ChEES`, synthetic problems only: `scripts/python/chees_time_to_result.py`
//!    in the venv of `scripts/install-peers.sh` (BlackJAX, JAX, ArviZ; run
//!    on first use): BlackJAX's `chees_adaptation` for `BAT_BENCH_CHEES_WARMUP`
//!    steps, then jittered HMC in chunks of 50 draws, checked at bat's
//!    checkpoints with ArviZ's ESS_bulk and R-hat, float64 on the CPU, the
//!    same number of chains. `ChEES s` is the whole process (Python's start,
//!    imports and XLA compile included); `-JIT s` leaves out the
//!    ahead-of-time compile the script times apart. The ratio uses `-JIT s`
//!    (the counterpart of bat's cached compile).
//!
//! Columns `def/pool` and `ChEES/pool` are those times ÷ `pooled s` (> 1:
//! pooled is faster); `3x` whether default ÷ pooled ≥ 3, `>ChEES` whether
//! pooled beat ChEES. A run that fails or runs past its limit is a row
//! entry with the reason, never a panic.
//!
//! Settings (environment): `BAT_BENCH_PROBLEMS` (comma-separated; the
//! synthetic names `eight_schools_noncentered`, `correlated_gaussian_100`,
//! `logistic_regression`, posteriordb names such as `garch-garch11`,
//! `default` for the three synthetic ones and five posteriordb posteriors
//! that run in well under a minute, `all` for the synthetic ones and every
//! posteriordb posterior but diamonds and mcycle_gp, which take minutes;
//! default `default`), `BAT_BENCH_CHAINS` (1024), `BAT_BENCH_TARGET_ESS`
//! (10000), `BAT_BENCH_MAX_RHAT` (1.01), `BAT_BENCH_SAMPLES` (most draws per
//! chain, 1000), `BAT_BENCH_WARMUPS` (default adaptation's warmups to try,
//! `50,100,200,400,1000`; empty: not run), `BAT_BENCH_DEFAULT_LIMIT` (10), `BAT_BENCH_SEED`
//! (20240601), `BAT_BENCH_TIMEOUT` (seconds per run, 900),
//! `BAT_BENCH_CHEES_WARMUP` (200), `BAT_BENCH_CHEES=0` (leave ChEES out),
//! `BAT_BENCH_BAT_CHEES=0` (leave `bat ChEES` out),
//! `BAT_PEERS_VENV` (default `~/.cache/bat-peers-venv`).

#[path = "../tests/support/bench.rs"]
mod bench;
#[path = "../tests/support/posteriordb.rs"]
#[allow(dead_code)] // the bench reads only whether every row passes
mod posteriordb;

use bench::{corpus, env_float, env_number, env_or, repo, run_with_limit};
use posteriordb::{Reference, Row, compare, references};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The synthetic problems: `examples/NAME.bat` with `NAME.data.json`, and
/// ChEES's name for the same model.
const SYNTHETIC: [&str; 3] = [
    "eight_schools_noncentered",
    "correlated_gaussian_100",
    "logistic_regression",
];

/// posteriordb posteriors in the default set: each runs in well under a
/// minute at 1,024 chains.
const DEFAULT_POSTERIORDB: [&str; 5] = [
    "eight_schools-eight_schools_noncentered",
    "kidiq-kidscore_momiq",
    "garch-garch11",
    "arK-arK",
    "gp_pois_regr-gp_regr",
];

/// posteriordb posteriors `all` leaves out: minutes per run at 1,024
/// chains (diamonds: 26 predictors, 5,000 rows and a hard posterior;
/// mcycle_gp: a 66-dimensional GP basis with no reference draws).
const SLOW_POSTERIORDB: [&str; 2] = ["diamonds-diamonds", "mcycle_gp-accel_gp"];

struct Problem {
    name: String,
    model: PathBuf,
    data: PathBuf,
    refs: Vec<Reference>,
    synthetic: bool,
}

fn problems() -> Vec<Problem> {
    let posteriordb_names = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(corpus())
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| e.path().join("model.stan").exists())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let mut wanted: Vec<String> = Vec::new();
    for item in env_or("BAT_BENCH_PROBLEMS", "default").split(',') {
        match item.trim() {
            "" => {}
            "default" => wanted.extend(
                SYNTHETIC
                    .iter()
                    .chain(&DEFAULT_POSTERIORDB)
                    .map(|s| s.to_string()),
            ),
            "all" => {
                wanted.extend(SYNTHETIC.iter().map(|s| s.to_string()));
                wanted.extend(
                    posteriordb_names()
                        .into_iter()
                        .filter(|n| !SLOW_POSTERIORDB.contains(&n.as_str())),
                );
            }
            name => wanted.push(name.to_string()),
        }
    }
    let mut seen = std::collections::HashSet::new();
    wanted.retain(|n| seen.insert(n.clone()));
    wanted
        .into_iter()
        .map(|name| {
            if SYNTHETIC.contains(&name.as_str()) {
                let examples = repo().join("examples");
                Problem {
                    model: examples.join(format!("{name}.bat")),
                    data: examples.join(format!("{name}.data.json")),
                    refs: Vec::new(),
                    synthetic: true,
                    name,
                }
            } else {
                let dir = corpus().join(&name);
                assert!(
                    dir.join("model.stan").exists(),
                    "BAT_BENCH_PROBLEMS: `{name}` is neither a synthetic problem ({}) nor a posterior in {}",
                    SYNTHETIC.join(", "),
                    corpus().display()
                );
                Problem {
                    model: dir.join("model.stan"),
                    data: dir.join("data.json"),
                    refs: references(&dir).unwrap_or_default(),
                    synthetic: false,
                    name,
                }
            }
        })
        .collect()
}

struct Settings {
    chains: u64,
    target_ess: f64,
    max_rhat: f64,
    samples: u64,
    warmups: Vec<u64>,
    default_limit: f64,
    seed: u64,
    timeout: Duration,
    chees_warmup: u64,
    cache: PathBuf,
}

/// One timed `bat run` with a target.
struct BatRun {
    wall: f64,
    /// Draws per chain at the stop (the cap when not reached).
    draws: u64,
    reached: bool,
    min_ess: f64,
    max_rhat: f64,
    /// Whether the reference check passed (posteriordb only).
    reference_ok: Option<bool>,
    /// Where the time went, from bat's stderr: pooled warmup seconds,
    /// sampler seconds (warmup included) and iterations run per chain, the
    /// target checks' seconds.
    pooled_warmup_s: f64,
    sampler_s: f64,
    iterations_per_chain: f64,
    checks_s: f64,
}

impl BatRun {
    fn passes(&self) -> bool {
        self.reached && self.reference_ok != Some(false)
    }

    fn marks(&self) -> String {
        let mut text = if self.reached {
            format!("ESS {:.0} R {:.3}", self.min_ess, self.max_rhat)
        } else {
            "target not reached".to_string()
        };
        match self.reference_ok {
            Some(true) => text += ", ref ok",
            Some(false) => text += ", ref FAIL",
            None => {}
        }
        text
    }

    /// Where the time went.
    fn breakdown(&self, warmup: u64) -> String {
        // bat's iteration line counts the pooled warmup apart (not in its
        // iterations or seconds), Stan's warmup in.
        if self.pooled_warmup_s.is_finite() {
            format!(
                "pooled warmup {:.1} s, then sampling {:.1} s for {:.0} iterations per chain ({} kept), checks {:.1} s",
                self.pooled_warmup_s,
                self.sampler_s,
                self.iterations_per_chain,
                self.draws,
                self.checks_s
            )
        } else {
            format!(
                "warmup and sampling {:.1} s for {:.0} iterations per chain ({} warmup + {} kept), checks {:.1} s",
                self.sampler_s, self.iterations_per_chain, warmup, self.draws, self.checks_s
            )
        }
    }
}

fn bat_command(problem: &Problem, s: &Settings, output: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bat"));
    command
        .arg("run")
        .arg(&problem.model)
        .arg("--data")
        .arg(&problem.data)
        .args(["--seed", &s.seed.to_string(), "-o"])
        .arg(output)
        .env("BAT_NATIVE_CACHE", &s.cache);
    command
}

fn failure(what: &str, out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("error"))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("");
    format!("{what} failed: {line}")
}

/// The model's compile, once (2 chains × (20 + 20) into the bench's cache).
fn compile(problem: &Problem, s: &Settings) -> Result<f64, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut command = bat_command(problem, s, &tmp.path().join("draws.h5"));
    command.args(["--chains", "2", "--warmup", "20", "--samples", "20"]);
    let (out, wall) = run_with_limit(command, s.timeout)?;
    if !out.status.success() {
        return Err(failure("bat run", &out));
    }
    Ok(wall.as_secs_f64())
}

/// `bat run --target-ess` with `flags` (the adaptation or algorithm) and
/// `warmup` (none: the adaptation's default), stopped after `limit`.
fn run_bat(
    problem: &Problem,
    s: &Settings,
    flags: &[&str],
    warmup: Option<u64>,
    limit: Duration,
) -> Result<BatRun, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let output = tmp.path().join("draws.h5");
    let mut command = bat_command(problem, s, &output);
    command
        .args(["--chains", &s.chains.to_string()])
        .args(flags)
        .args(["--target-ess", &s.target_ess.to_string()])
        .args(["--max-rhat", &s.max_rhat.to_string()])
        .args(["--samples", &s.samples.to_string()]);
    if let Some(w) = warmup {
        command.args(["--warmup", &w.to_string()]);
    }
    let (out, wall) = run_with_limit(command, limit)?;
    if !out.status.success() {
        return Err(failure("bat run", &out));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    // "target reached after D draws per chain: ... (smallest ESS_bulk E,
    // largest R-hat R; ...)" or "target not reached: ..."
    let reached_line = stderr
        .lines()
        .find(|l| l.starts_with("target reached after "));
    let number_after = |line: &str, key: &str| -> f64 {
        line.split_once(key)
            .and_then(|(_, rest)| {
                rest.trim_start()
                    .split(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(f64::NAN)
    };
    // "Pooled warmup done in 1.07: ...", "1024 chains: 458885/1024000
    // iterations in 2.79 s, ...", "(...; 2 checks took 0.95 s)"
    let pooled_warmup_s = stderr
        .lines()
        .find_map(|l| l.strip_prefix("Pooled warmup done in "))
        .map_or(f64::NAN, |rest| number_after(rest, ""));
    let (iterations, sampler_s) = stderr
        .lines()
        .find_map(|l| {
            let (head, rest) = l.split_once(" iterations in ")?;
            let done: f64 = head.rsplit_once(": ")?.1.split('/').next()?.parse().ok()?;
            Some((done, number_after(rest, "")))
        })
        .unwrap_or((f64::NAN, f64::NAN));
    let checks_s = stderr
        .lines()
        .find_map(|l| l.split_once(" checks took "))
        .map_or(f64::NAN, |(_, rest)| number_after(rest, ""));
    let timing = BatRun {
        wall: wall.as_secs_f64(),
        draws: s.samples,
        reached: false,
        min_ess: f64::NAN,
        max_rhat: f64::NAN,
        reference_ok: None,
        pooled_warmup_s,
        sampler_s,
        iterations_per_chain: iterations / s.chains as f64,
        checks_s,
    };
    let run = match reached_line {
        Some(line) => BatRun {
            draws: number_after(line, "target reached after ") as u64,
            reached: true,
            min_ess: number_after(line, "smallest ESS_bulk "),
            max_rhat: number_after(line, "largest R-hat "),
            ..timing
        },
        None if stderr.contains("target not reached") => timing,
        None => return Err("no target line in bat's output".to_string()),
    };
    if problem.refs.is_empty() {
        return Ok(run);
    }
    let summary = Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(["summary", "--format", "json"])
        .arg(&output)
        .output()
        .map_err(|e| e.to_string())?;
    let json: Value = serde_json::from_slice(&summary.stdout).map_err(|e| e.to_string())?;
    let reference_ok = compare(&problem.refs, &json).is_ok_and(|rows| rows.iter().all(Row::passes));
    Ok(BatRun {
        reference_ok: Some(reference_ok),
        ..run
    })
}

/// The venv's python with BlackJAX, installed on first use.
fn peers_python() -> Result<PathBuf, String> {
    let venv = std::env::var_os("BAT_PEERS_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/bat-peers-venv")
        });
    let status = Command::new(repo().join("scripts/install-peers.sh"))
        .env("BAT_PEERS_VENV", &venv)
        .status()
        .map_err(|e| format!("scripts/install-peers.sh: {e}"))?;
    if !status.success() {
        return Err("scripts/install-peers.sh failed (pip install blackjax jax arviz)".into());
    }
    Ok(venv.join("bin/python"))
}

struct CheesRun {
    /// The whole process: Python's start, imports, XLA compile, warmup,
    /// sampling, checks.
    wall: f64,
    compile: f64,
    /// The script's own account: imports, warmup, sampling, checks.
    import: f64,
    warmup: f64,
    sampling: f64,
    checks: f64,
    draws: u64,
    reached: bool,
    min_ess: f64,
    max_rhat: f64,
}

fn run_chees(python: &Path, problem: &Problem, s: &Settings) -> Result<CheesRun, String> {
    let mut command = Command::new(python);
    command
        .arg(repo().join("scripts/python/chees_time_to_result.py"))
        .arg(&problem.name)
        .arg(&problem.data)
        .args(["--chains", &s.chains.to_string()])
        .args(["--warmup", &s.chees_warmup.to_string()])
        .args(["--target-ess", &s.target_ess.to_string()])
        .args(["--max-rhat", &s.max_rhat.to_string()])
        .args(["--max-draws", &s.samples.to_string()])
        .args(["--seed", &s.seed.to_string()]);
    let (out, wall) = run_with_limit(command, s.timeout)?;
    if !out.status.success() {
        return Err(failure("ChEES", &out));
    }
    let json: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("ChEES: {e}"))?;
    let get = |k: &str| json[k].as_f64().unwrap_or(f64::NAN);
    Ok(CheesRun {
        wall: wall.as_secs_f64(),
        compile: get("compile_s"),
        import: get("import_s"),
        warmup: get("warmup_s"),
        sampling: get("sampling_s"),
        checks: get("checks_s"),
        draws: get("draws_per_chain") as u64,
        reached: json["reached"].as_bool().unwrap_or(false),
        min_ess: get("min_ess_bulk"),
        max_rhat: get("max_rhat"),
    })
}

/// The 1-minute load average (Linux), for the table's machine line.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "?".into())
}

struct Default {
    warmup: u64,
    run: BatRun,
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let cache = tempfile::tempdir().expect("a temporary directory");
    let settings = Settings {
        chains: env_number("BAT_BENCH_CHAINS", 1024),
        target_ess: env_float("BAT_BENCH_TARGET_ESS", 10000.0),
        max_rhat: env_float("BAT_BENCH_MAX_RHAT", 1.01),
        samples: env_number("BAT_BENCH_SAMPLES", 1000),
        warmups: env_or("BAT_BENCH_WARMUPS", "50,100,200,400,1000")
            .split(',')
            .filter(|w| !w.trim().is_empty())
            .map(|w| {
                w.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("BAT_BENCH_WARMUPS: `{w}` is not a whole number"))
            })
            .collect(),
        default_limit: env_float("BAT_BENCH_DEFAULT_LIMIT", 10.0),
        seed: env_number("BAT_BENCH_SEED", 20240601),
        timeout: Duration::from_secs(env_number("BAT_BENCH_TIMEOUT", 900)),
        chees_warmup: env_number("BAT_BENCH_CHEES_WARMUP", 200),
        cache: cache.path().join("native-cache"),
    };
    let problems = problems();
    let with_chees = env_or("BAT_BENCH_CHEES", "1") != "0" && problems.iter().any(|p| p.synthetic);
    let with_bat_chees = env_or("BAT_BENCH_BAT_CHEES", "1") != "0";
    let python = if with_chees {
        Some(peers_python())
    } else {
        None
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load_before = load();
    println!(
        "time to result: {} chains, target ESS_bulk >= {} and R-hat < {} (at most {} draws per chain), seed {}",
        settings.chains, settings.target_ess, settings.max_rhat, settings.samples, settings.seed
    );
    println!(
        "bat times: `bat run` start to exit, the model compiled beforehand (column `compile s`: that first run, not in any other figure); default adaptation tries warmups {:?}, each stopped after {}x the pooled time",
        settings.warmups, settings.default_limit
    );
    println!(
        "{:40} {:>7} {:>8} {:>6} {:>9} {:>6} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>6} {:>8} {:>3} {:>6}",
        "problem",
        "compile",
        "pooled s",
        "draws",
        "batCh s",
        "draws",
        "bCh/pool",
        "def wu",
        "def s",
        "def/pool",
        "ChEES s",
        "-JIT s",
        "draws",
        "Ch/pool",
        "3x",
        ">ChEES"
    );
    let mut notes: Vec<String> = Vec::new();
    for problem in &problems {
        let name = &problem.name;
        let compile_s = match compile(problem, &settings) {
            Ok(t) => format!("{t:.1}"),
            Err(e) => {
                println!("{name:40} compile: {e}");
                continue;
            }
        };
        let pooled = run_bat(
            problem,
            &settings,
            &["--adapt", "pooled"],
            None,
            settings.timeout,
        );
        let bat_chees = with_bat_chees.then(|| {
            run_bat(
                problem,
                &settings,
                &["--algorithm", "chees"],
                None,
                settings.timeout,
            )
        });
        // The default adaptation: the first warmup that passes.
        let limit = match &pooled {
            Ok(p) => Duration::from_secs_f64(
                (p.wall * settings.default_limit).clamp(10.0, settings.timeout.as_secs_f64()),
            ),
            Err(_) => settings.timeout,
        };
        let mut tried: Vec<String> = Vec::new();
        let mut default: Option<Default> = None;
        let mut timeouts = 0;
        for &warmup in &settings.warmups {
            match run_bat(
                problem,
                &settings,
                &["--adapt", "stan"],
                Some(warmup),
                limit,
            ) {
                Ok(run) if run.passes() => {
                    tried.push(format!("{warmup}: pass {:.1} s", run.wall));
                    default = Some(Default { warmup, run });
                    break;
                }
                Ok(run) => tried.push(format!("{warmup}: {} {:.1} s", run.marks(), run.wall)),
                Err(e) => {
                    timeouts += usize::from(e.starts_with("stopped after"));
                    tried.push(format!("{warmup}: {e}"));
                }
            }
        }
        let chees = match (&python, problem.synthetic) {
            (Some(Ok(python)), true) => Some(run_chees(python, problem, &settings)),
            (Some(Err(e)), true) => Some(Err(format!("not run: {e}"))),
            (None, true) => Some(Err("not run: BAT_BENCH_CHEES=0".into())),
            _ => None,
        };
        let dash = || "-".to_string();
        let (pooled_s, pooled_draws) = match &pooled {
            Ok(p) if p.passes() => (format!("{:.1}", p.wall), p.draws.to_string()),
            Ok(p) => (format!("{:.1}!", p.wall), p.draws.to_string()),
            Err(_) => ("failed".to_string(), dash()),
        };
        let pooled_wall = pooled.as_ref().ok().filter(|p| p.passes()).map(|p| p.wall);
        let (bat_chees_s, bat_chees_draws, bat_chees_ratio) = match &bat_chees {
            None => (dash(), dash(), dash()),
            Some(Err(_)) => ("failed".to_string(), dash(), dash()),
            Some(Ok(c)) => (
                format!("{:.1}{}", c.wall, if c.passes() { "" } else { "!" }),
                c.draws.to_string(),
                match pooled_wall {
                    Some(p) if c.passes() => format!("{:.2}", c.wall / p),
                    _ => dash(),
                },
            ),
        };
        let (def_warmup, def_s, def_ratio, three) = match (&default, pooled_wall) {
            (Some(d), Some(p)) => {
                let ratio = d.run.wall / p;
                (
                    d.warmup.to_string(),
                    format!("{:.1}", d.run.wall),
                    format!("{ratio:.2}"),
                    if ratio >= 3.0 { "yes" } else { "no" }.to_string(),
                )
            }
            (Some(d), None) => (
                d.warmup.to_string(),
                format!("{:.1}", d.run.wall),
                dash(),
                dash(),
            ),
            (None, _) if tried.is_empty() => ("not run".to_string(), dash(), dash(), dash()),
            // Every warmup ran past its limit: slower than the limit factor.
            (None, Some(_)) if timeouts == tried.len() => (
                "none".to_string(),
                format!(">{:.0}", limit.as_secs_f64()),
                format!(">{}", settings.default_limit),
                "yes".to_string(),
            ),
            (None, _) => ("none".to_string(), dash(), dash(), dash()),
        };
        let (ch_s, ch_nojit, ch_draws, ch_ratio, beat) = match &chees {
            None => (dash(), dash(), dash(), dash(), dash()),
            Some(Err(_)) => ("failed".into(), dash(), dash(), dash(), dash()),
            Some(Ok(c)) => {
                let nojit = c.wall - c.compile;
                let mark = if c.reached { "" } else { "!" };
                let (ratio, beat) = match pooled_wall {
                    Some(p) if c.reached => (
                        format!("{:.2}", nojit / p),
                        if nojit > p { "yes" } else { "no" }.to_string(),
                    ),
                    Some(_) => (dash(), "yes".to_string()),
                    None => (dash(), dash()),
                };
                (
                    format!("{:.1}{mark}", c.wall),
                    format!("{nojit:.1}{mark}"),
                    c.draws.to_string(),
                    ratio,
                    beat,
                )
            }
        };
        println!(
            "{name:40} {compile_s:>7} {pooled_s:>8} {pooled_draws:>6} {bat_chees_s:>9} {bat_chees_draws:>6} {bat_chees_ratio:>8} {def_warmup:>7} {def_s:>8} {def_ratio:>8} {ch_s:>8} {ch_nojit:>8} {ch_draws:>6} {ch_ratio:>8} {three:>3} {beat:>6}"
        );
        match &pooled {
            Ok(p) => notes.push(format!(
                "{name}: pooled {}; {}",
                p.marks(),
                p.breakdown(200)
            )),
            Err(e) => notes.push(format!("{name}: pooled {e}")),
        }
        match &bat_chees {
            Some(Ok(c)) => notes.push(format!(
                "{name}: bat ChEES {}; {}",
                c.marks(),
                c.breakdown(200)
            )),
            Some(Err(e)) => notes.push(format!("{name}: bat ChEES {e}")),
            None => {}
        }
        if !tried.is_empty() {
            notes.push(format!("{name}: default warmups {}", tried.join("; ")));
        }
        if let Some(d) = &default {
            notes.push(format!(
                "{name}: default (warmup {}) {}",
                d.warmup,
                d.run.breakdown(d.warmup)
            ));
        }
        match &chees {
            Some(Ok(c)) => notes.push(format!(
                "{name}: ChEES {}ESS {:.0} R {:.3} after {} draws; imports {:.1} s, XLA compile {:.1} s, warmup {:.1} s, sampling {:.1} s, checks {:.1} s",
                if c.reached { "" } else { "target not reached, " },
                c.min_ess,
                c.max_rhat,
                c.draws,
                c.import,
                c.compile,
                c.warmup,
                c.sampling,
                c.checks
            )),
            Some(Err(e)) => notes.push(format!("{name}: ChEES {e}")),
            None => {}
        }
    }
    println!(
        "\nmachine: {cores} core(s), 1-minute load average {load_before} at the start, {} at the end; `!`: the target was not reached",
        load()
    );
    for note in notes {
        println!("  {note}");
    }
}
