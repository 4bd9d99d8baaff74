//! Posterior correctness on posteriordb: for each posterior with a
//! reference, `bat run`'s draws must pass the reference check of
//! `support/posteriordb.rs` (every reference mean within 5 Monte-Carlo
//! standard errors, every sd within ±20%).
//!
//! The default run checks a fast subset with short chains (debug builds
//! interpret the sampler). `BAT_FULL_SWEEP=1` runs every posterior with
//! Stan's default 1000 + 1000 iterations and 4 chains (or
//! `BAT_SWEEP_CHAINS`, `BAT_SWEEP_WARMUP`, `BAT_SWEEP_SAMPLES`; only names
//! containing `BAT_SWEEP_ONLY`; each run killed after `BAT_SWEEP_TIMEOUT`
//! seconds, default 900; with `BAT_SWEEP_TARGET_ESS=N`, each run stops
//! once its draws reach `--target-ess N`) and prints a table; posteriors
//! that bat cannot compile yet are listed, not hidden; `BAT_SWEEP_ARGS` adds
//! options to every run, such as `--adapt pooled`. Two posteriors of
//! the fast subset are also checked with `--target-ess`: draws stopped
//! early must pass the same check; eight schools also with
//! `--algorithm chees`.

#[path = "support/posteriordb.rs"]
mod posteriordb;

use posteriordb::{Row, compare, references};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/posteriordb")
}

/// Runs `bat run` on posterior `name` (with `extra` flags); rows of every
/// reference parameter and the run's stderr, or the reason bat could not
/// run it.
fn check_posterior(
    name: &str,
    chains: u32,
    warmup: u32,
    samples: u32,
    extra: &[&str],
    limit: Option<std::time::Duration>,
) -> Result<(Vec<Row>, String), String> {
    let dir = corpus().join(name);
    assert!(
        dir.is_dir(),
        "posteriordb corpus missing at {}",
        dir.display()
    );
    let refs = references(&dir)?;
    // posteriordb has no reference draws for some posteriors (mcycle_gp):
    // nothing to compare, so nothing is sampled.
    if refs.is_empty() {
        return Ok((Vec::new(), String::new()));
    }
    let tmp = tempfile::tempdir().unwrap();
    let output = tmp.path().join("draws.h5");
    let mut command = Command::new(env!("CARGO_BIN_EXE_bat"));
    command
        .arg("run")
        .arg(dir.join("model.stan"))
        .arg("--data")
        .arg(dir.join("data.json"))
        .args([
            "--chains",
            &chains.to_string(),
            "--warmup",
            &warmup.to_string(),
        ])
        .args([
            "--samples",
            &samples.to_string(),
            "--seed",
            "20240601",
            "-o",
        ])
        .arg(&output)
        .args(extra);
    let run = run_with_limit(command, tmp.path(), limit)?;
    if !run.status.success() {
        let err = String::from_utf8_lossy(&run.stderr);
        return Err(err
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or(&err)
            .to_string());
    }
    let summary = Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(["summary", "--format", "json"])
        .arg(&output)
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&summary.stdout).map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    Ok((compare(&refs, &summary)?, stderr))
}

/// How long one posterior of the sweep may take (`BAT_SWEEP_TIMEOUT`
/// seconds, default 900).
fn sweep_time_limit() -> std::time::Duration {
    let seconds = std::env::var("BAT_SWEEP_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(900);
    std::time::Duration::from_secs(seconds)
}

/// Runs `command` with its output in files under `dir`; a run longer than
/// `limit` is killed and reported, never waited for without end.
fn run_with_limit(
    mut command: Command,
    dir: &Path,
    limit: Option<std::time::Duration>,
) -> Result<std::process::Output, String> {
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    command
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let started = std::time::Instant::now();
    let mut child = command.spawn().unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if limit.is_some_and(|l| started.elapsed() > l) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "stopped after the time limit of {} s (BAT_SWEEP_TIMEOUT)",
                limit.unwrap().as_secs()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    Ok(std::process::Output {
        status,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: std::fs::read(&err_path).unwrap(),
    })
}

fn print_rows(posterior: &str, rows: &[Row]) {
    for r in rows {
        println!(
            "{posterior:40} {:16} ref {:>10.4} ± {:<9.4} bat {:>10.4} ± {:<9.4} z {:>6.2} sd ratio {:.3} {}",
            r.name,
            r.reference_mean,
            r.reference_sd,
            r.mean,
            r.sd,
            r.z,
            r.sd_ratio,
            if r.passes() { "ok" } else { "FAIL" }
        );
    }
}

fn assert_posterior(name: &str, chains: u32, warmup: u32, samples: u32) {
    assert_posterior_with(name, chains, warmup, samples, &[]);
}

/// [`assert_posterior`] with `extra` flags; the run's stderr.
fn assert_posterior_with(
    name: &str,
    chains: u32,
    warmup: u32,
    samples: u32,
    extra: &[&str],
) -> String {
    let (rows, stderr) = check_posterior(name, chains, warmup, samples, extra, None)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    print_rows(name, &rows);
    assert!(!rows.is_empty());
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.passes())
        .map(|r| r.name.as_str())
        .collect();
    assert!(failed.is_empty(), "{name}: {failed:?} off the reference");
    stderr
}

/// With `--target-ess`, a run stopped early (well before its `--samples`)
/// passes the same reference check.
fn assert_posterior_with_target(name: &str, chains: u32, warmup: u32, samples: u32) {
    let stderr = assert_posterior_with(name, chains, warmup, samples, &["--target-ess", "400"]);
    let draws: u32 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("target reached after "))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{name}: the target was not reached: {stderr}"));
    assert!(draws < samples, "{name}: {draws} draws per chain");
}

#[test]
fn eight_schools_noncentered_matches_the_reference() {
    assert_posterior("eight_schools-eight_schools_noncentered", 4, 300, 300);
}

/// Pooled warmup: 16 chains share one kernel adapted in 100 iterations.
/// 300 draws per chain: with 150, tau's heavy tail put its sd outside
/// ±20% at some seeds (1 of 13 tried).
#[test]
fn eight_schools_noncentered_matches_the_reference_with_pooled_warmup() {
    assert_posterior_with(
        "eight_schools-eight_schools_noncentered",
        16,
        100,
        300,
        &["--adapt", "pooled"],
    );
}

/// Pooled warmup of a dense metric: 16 chains share one kernel whose
/// inverse metric is the chains' covariance, adapted in 100 iterations;
/// and the run says the metric is dense.
#[test]
fn eight_schools_noncentered_matches_the_reference_with_a_dense_metric() {
    let stderr = assert_posterior_with(
        "eight_schools-eight_schools_noncentered",
        16,
        100,
        300,
        &["--adapt", "pooled", "--metric", "dense"],
    );
    assert!(stderr.contains("dense metric"), "{stderr}");
}

/// ChEES-HMC: 64 chains adapt the step size, metric and jittered
/// trajectory length together in 200 iterations, then sample with them
/// fixed; and the run says what it adapted.
#[test]
fn eight_schools_noncentered_matches_the_reference_with_chees() {
    let stderr = assert_posterior_with(
        "eight_schools-eight_schools_noncentered",
        64,
        200,
        100,
        &["--algorithm", "chees"],
    );
    assert!(stderr.contains("trajectory length"), "{stderr}");
}

#[test]
fn mesquite_log_volume_matches_the_reference() {
    assert_posterior("mesquite-logmesquite_logva", 2, 300, 500);
}

#[test]
fn eight_schools_noncentered_with_a_target_matches_the_reference() {
    assert_posterior_with_target("eight_schools-eight_schools_noncentered", 4, 300, 2000);
}

#[test]
fn mesquite_log_volume_with_a_target_matches_the_reference() {
    assert_posterior_with_target("mesquite-logmesquite_logva", 4, 300, 2000);
}

#[test]
fn full_sweep() {
    if std::env::var_os("BAT_FULL_SWEEP").is_none() {
        eprintln!("full posteriordb sweep not run: set BAT_FULL_SWEEP=1 (best with --release)");
        return;
    }
    let mut names: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("reference.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let setting = |var: &str, default: u32| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (chains, warmup, samples) = (
        setting("BAT_SWEEP_CHAINS", 4),
        setting("BAT_SWEEP_WARMUP", 1000),
        setting("BAT_SWEEP_SAMPLES", 1000),
    );
    if let Ok(only) = std::env::var("BAT_SWEEP_ONLY") {
        names.retain(|n| n.contains(&only));
    }
    let target = std::env::var("BAT_SWEEP_TARGET_ESS").ok();
    let more = std::env::var("BAT_SWEEP_ARGS").unwrap_or_default();
    let mut extra: Vec<&str> = match &target {
        Some(n) => vec!["--target-ess", n],
        None => Vec::new(),
    };
    extra.extend(more.split_whitespace());
    let (mut passed, mut failed, mut not_run) = (Vec::new(), Vec::new(), Vec::new());
    let mut without_reference = Vec::new();
    for name in &names {
        let started = std::time::Instant::now();
        let limit = Some(sweep_time_limit());
        match check_posterior(name, chains, warmup, samples, &extra, limit) {
            Ok((rows, _)) if rows.is_empty() => without_reference.push(name.clone()),
            Ok((rows, stderr)) => {
                print_rows(name, &rows);
                let ok = rows.iter().all(Row::passes);
                // With a target, where the run stopped.
                let stopped = (stderr.lines())
                    .find(|l| l.starts_with("target "))
                    .map(|l| format!(" ({})", l.split(':').next().unwrap_or(l)))
                    .unwrap_or_default();
                println!(
                    "{name}: {} in {:.0} s{stopped}",
                    if ok { "PASS" } else { "FAIL" },
                    started.elapsed().as_secs_f64()
                );
                if ok {
                    passed.push(name.clone())
                } else {
                    failed.push(name.clone())
                }
            }
            Err(e) => not_run.push(format!("{name}: {e}")),
        }
    }
    println!(
        "\npassed {} of the {} posteriors with reference draws; failed: {failed:?}",
        passed.len(),
        names.len() - without_reference.len()
    );
    for name in &without_reference {
        println!("not compared: {name} (posteriordb has no reference draws)");
    }
    for line in &not_run {
        println!("not run: {line}");
    }
    assert!(
        failed.is_empty() && not_run.is_empty(),
        "failed {failed:?}, not run {not_run:?}"
    );
}
