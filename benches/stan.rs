//! `cargo bench --bench stan`: `bat run` against Stan itself on real
//! models — every posterior in `../shared/corpus/posteriordb` (or
//! `$BAT_CORPUS/posteriordb`), both run in this process's run, one after
//! the other, with the same chains and iterations (default 4 × (1000 +
//! 1000), Stan's defaults; bat with its defaults, so with whatever backend
//! `bat run` picks). Stan is Stan 2.35 through PyStan 3 in its own venv
//! (`scripts/install-stan.sh`, run on first use; each model compiles once,
//! about a minute, cached by httpstan under `$XDG_CACHE_HOME`).
//!
//! Prints one row per posterior:
//! - `start`: bat's seconds from starting `bat run` to sampling (parsing,
//!   data, compiling the model: a first run, with an empty compile cache);
//! - `bat s` / `Stan s`: sampling wall time (bat: warmup + sampling as
//!   `bat run` reports it; Stan: `posterior.sample`, one process per chain,
//!   its process start included);
//! - `ratio`: bat ÷ Stan sampling time (≤ 1: bat is faster);
//! - min ESS_bulk over the reference parameters (every quantity where
//!   posteriordb has no reference draws), both computed by `bat::summary`
//!   (ArviZ's estimator), and ESS per second of sampling;
//! - `ref`: whether bat's draws pass the posteriordb reference check (every
//!   reference mean within 5 combined MCSE, sd within ±20%);
//! - `backend`: the backend `bat run` chose (`native+cpu`: the sampler
//!   compiled, the model's gradient on the CPU backend's program).
//!
//! Then the geometric mean of the ratios and the slowest start.
//!
//! Settings (environment): `BAT_BENCH_POSTERIORS` (comma-separated
//! substrings of posterior names; default all), `BAT_BENCH_CHAINS` (4),
//! `BAT_BENCH_WARMUP` (1000), `BAT_BENCH_SAMPLES` (1000), `BAT_BENCH_SEED`
//! (20240601), `BAT_BENCH_TIMEOUT` (seconds per run of either, default
//! 1800), `BAT_STAN_VENV` (default `~/.cache/bat-stan-venv`).

#[path = "../tests/support/bench.rs"]
mod bench;
#[path = "../tests/support/posteriordb.rs"]
#[allow(dead_code)] // the bench reads only whether every row passes
mod posteriordb;

use bat::summary::{ChainDraws, QuantitySummary};
use bench::{corpus, env_number, env_or, repo, run_with_limit};
use posteriordb::{Reference, Row, compare, references};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The venv's python with PyStan, installed on first use.
fn stan_python() -> PathBuf {
    let venv = std::env::var_os("BAT_STAN_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
                .join(".cache/bat-stan-venv")
        });
    let status = Command::new(repo().join("scripts/install-stan.sh"))
        .env("BAT_STAN_VENV", &venv)
        .status()
        .expect("run scripts/install-stan.sh");
    assert!(status.success(), "scripts/install-stan.sh failed");
    venv.join("bin/python")
}

struct Settings {
    chains: u64,
    warmup: u64,
    samples: u64,
    seed: u64,
    limit: Duration,
}

struct BatRun {
    start: f64,
    sampling: f64,
    min_ess: f64,
    reference_ok: Option<bool>,
    backend: &'static str,
}

fn run_bat(dir: &Path, refs: &[Reference], s: &Settings) -> Result<BatRun, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let output = tmp.path().join("draws.h5");
    let mut command = Command::new(env!("CARGO_BIN_EXE_bat"));
    command
        .arg("run")
        .arg(dir.join("model.stan"))
        .arg("--data")
        .arg(dir.join("data.json"))
        .args(["--chains", &s.chains.to_string()])
        .args(["--warmup", &s.warmup.to_string()])
        .args(["--samples", &s.samples.to_string()])
        .args(["--seed", &s.seed.to_string(), "-o"])
        .arg(&output)
        // A model never seen before: nothing compiled in the cache.
        .env("BAT_NATIVE_CACHE", tmp.path().join("native-cache"));
    let (out, wall) = run_with_limit(command, s.limit)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let line = stderr.lines().find(|l| l.contains("error")).unwrap_or("");
        return Err(format!("bat run failed: {line}"));
    }
    // "4 chains: 8000/8000 iterations in 1.1 s, ..."
    let sampling = stderr
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once(" iterations in ")?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .ok_or_else(|| "no sampling time in bat's output".to_string())?;
    let backend = if stderr.contains("uses the interpreting CPU backend") {
        "cpu"
    } else if stderr.contains("the sampler compiled") {
        // The model's gradient on the CPU backend's program.
        "native+cpu"
    } else {
        "native"
    };
    let summary = Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(["summary", "--format", "json"])
        .arg(&output)
        .output()
        .map_err(|e| e.to_string())?;
    let json: Value = serde_json::from_slice(&summary.stdout).map_err(|e| e.to_string())?;
    let quantities = json["quantities"]
        .as_array()
        .ok_or("no quantities in bat summary")?;
    let get = |q: &Value, k: &str| q[k].as_f64().unwrap_or(f64::NAN);
    let find = |name: &str| quantities.iter().find(|q| q["name"] == name);
    let min_ess = if refs.is_empty() {
        quantities
            .iter()
            .map(|q| get(q, "ess_bulk"))
            .filter(|e| e.is_finite())
            .fold(f64::INFINITY, f64::min)
    } else {
        refs.iter()
            .map(|r| find(&r.name).map_or(f64::NAN, |q| get(q, "ess_bulk")))
            .fold(f64::INFINITY, f64::min)
    };
    let reference_ok = (!refs.is_empty())
        .then(|| compare(refs, &json).is_ok_and(|rows| rows.iter().all(Row::passes)));
    Ok(BatRun {
        start: (wall.as_secs_f64() - sampling).max(0.0),
        sampling,
        min_ess,
        reference_ok,
        backend,
    })
}

struct StanRun {
    sampling: f64,
    min_ess: f64,
}

fn run_stan(
    python: &Path,
    dir: &Path,
    refs: &[Reference],
    s: &Settings,
) -> Result<StanRun, String> {
    // httpstan builds a model under the working directory (`build/`).
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut command = Command::new(python);
    command
        .current_dir(scratch.path())
        .arg(repo().join("scripts/python/stan_sample.py"))
        .arg(dir.join("model.stan"))
        .arg(dir.join("data.json"))
        .args([s.chains, s.warmup, s.samples, s.seed].map(|n| n.to_string()));
    let (out, _) = run_with_limit(command, s.limit)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!("Stan failed: {}", last.unwrap_or("")));
    }
    let json: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let draws = json["draws"].as_object().ok_or("no draws from Stan")?;
    let ess = |name: &str| -> f64 {
        let Some(chains) = draws.get(name).and_then(Value::as_array) else {
            return f64::NAN;
        };
        let n_draws = chains.first().and_then(Value::as_array).map_or(0, Vec::len);
        let values: Vec<f64> = chains
            .iter()
            .filter_map(Value::as_array)
            .flatten()
            .map(|v| v.as_f64().unwrap_or(f64::NAN))
            .collect();
        ChainDraws::new(&values, chains.len(), n_draws)
            .map_or(f64::NAN, |d| QuantitySummary::compute(name, d).ess_bulk)
    };
    let min_ess = if refs.is_empty() {
        draws
            .keys()
            .map(|name| ess(name))
            .filter(|e| e.is_finite())
            .fold(f64::INFINITY, f64::min)
    } else {
        refs.iter()
            .map(|r| ess(&r.name))
            .fold(f64::INFINITY, f64::min)
    };
    Ok(StanRun {
        sampling: json["sampling_s"].as_f64().ok_or("no sampling time")?,
        min_ess,
    })
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let settings = Settings {
        chains: env_number("BAT_BENCH_CHAINS", 4),
        warmup: env_number("BAT_BENCH_WARMUP", 1000),
        samples: env_number("BAT_BENCH_SAMPLES", 1000),
        seed: env_number("BAT_BENCH_SEED", 20240601),
        limit: Duration::from_secs(env_number("BAT_BENCH_TIMEOUT", 1800)),
    };
    let filters: Vec<String> = env_or("BAT_BENCH_POSTERIORS", "")
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(String::from)
        .collect();
    let mut names: Vec<String> = std::fs::read_dir(corpus())
        .unwrap_or_else(|e| panic!("posteriordb corpus at {}: {e}", corpus().display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().join("model.stan").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    names.sort();
    let python = stan_python();
    println!(
        "bat run vs Stan 2.35 (PyStan 3): {} chains x ({} + {}), seed {}, {} core(s)",
        settings.chains,
        settings.warmup,
        settings.samples,
        settings.seed,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:40} {:>7} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>4} {:>7}",
        "posterior",
        "start",
        "bat s",
        "Stan s",
        "ratio",
        "bat ESS",
        "Stan ESS",
        "bat ESS/s",
        "Stan/s",
        "ref",
        "backend"
    );
    let (mut log_ratios, mut slowest_start) = (Vec::new(), 0.0f64);
    for name in &names {
        let dir = corpus().join(name);
        let refs = references(&dir).unwrap_or_default();
        let bat = run_bat(&dir, &refs, &settings);
        let stan = run_stan(&python, &dir, &refs, &settings);
        match (&bat, &stan) {
            (Ok(b), Ok(s)) => {
                let ratio = b.sampling / s.sampling;
                log_ratios.push(ratio.ln());
                slowest_start = slowest_start.max(b.start);
                println!(
                    "{name:40} {:>7.1} {:>8.2} {:>8.2} {:>7.2} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>4} {:>7}",
                    b.start,
                    b.sampling,
                    s.sampling,
                    ratio,
                    b.min_ess,
                    s.min_ess,
                    b.min_ess / b.sampling,
                    s.min_ess / s.sampling,
                    match b.reference_ok {
                        Some(true) => "ok",
                        Some(false) => "FAIL",
                        None => "-",
                    },
                    b.backend
                );
            }
            _ => {
                for (who, e) in [("bat", bat.as_ref().err()), ("Stan", stan.as_ref().err())] {
                    if let Some(e) = e {
                        println!("{name:40} {who}: {e}");
                    }
                }
            }
        }
    }
    if !log_ratios.is_empty() {
        let geometric = (log_ratios.iter().sum::<f64>() / log_ratios.len() as f64).exp();
        let faster = log_ratios.iter().filter(|r| **r <= 0.0).count();
        println!(
            "\ngeometric mean of bat/Stan sampling time over {} posteriors: {geometric:.2}; bat at least as fast on {faster}; slowest start {slowest_start:.1} s",
            log_ratios.len()
        );
    }
}
