//! What the benches that run `bat` and its opponents as commands share:
//! their settings from environment variables, the corpus, and running a
//! command under a time limit.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

pub fn env_number(name: &str, default: u64) -> u64 {
    let text = env_or(name, &default.to_string());
    text.parse()
        .unwrap_or_else(|_| panic!("{name}={text}: expected a whole number"))
}

pub fn env_float(name: &str, default: f64) -> f64 {
    let text = env_or(name, &default.to_string());
    text.parse()
        .unwrap_or_else(|_| panic!("{name}={text}: expected a number"))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// posteriordb's posteriors (`BAT_CORPUS`, else `../shared/corpus`).
pub fn corpus() -> PathBuf {
    std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/corpus"))
        .join("posteriordb")
}

/// Runs `command` to its end, or kills it after `limit`: its output and
/// wall time. Output goes through files, so a chatty command never blocks
/// on a full pipe.
pub fn run_with_limit(mut command: Command, limit: Duration) -> Result<(Output, Duration), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (out_path, err_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).map_err(|e| e.to_string())?)
        .stderr(std::fs::File::create(&err_path).map_err(|e| e.to_string())?);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("stopped after {:.0} s", limit.as_secs_f64()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = started.elapsed();
    let output = Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    };
    Ok((output, wall))
}
