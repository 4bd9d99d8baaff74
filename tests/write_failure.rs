//! `bat run` when the disk will not take the draws: a run that cannot fit
//! stops before sampling; a disk that fills (simulated, a real small file
//! system where the machine allows mounting one, or a file-size limit)
//! or stops taking writes leaves a file that `bat summary` and ArviZ open,
//! holding exactly the draws of the same seed's complete run up to each
//! chain's recorded count.

#[path = "support/run.rs"]
mod support;

use bat::output::{DrawReader, read_draws};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{text, venv_python};

const MODEL: &str = "examples/eight_schools_noncentered.bat";
const CHAINS: usize = 4;
/// Three chunks of draws per chain (1024 draws each): a disk with room for
/// two thirds of the file holds some of them.
const SAMPLES: usize = 3000;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `bat run` of the model: 4 chains × (100 + 3000), seed 7, to `out`.
fn run(out: &Path, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let chains = CHAINS.to_string();
    let samples = SAMPLES.to_string();
    let mut args = vec![
        "run",
        MODEL,
        "--chains",
        &chains,
        "--warmup",
        "100",
        "--samples",
        &samples,
        "--seed",
        "7",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    Command::new(env!("CARGO_BIN_EXE_bat"))
        .current_dir(root())
        .args(&args)
        .envs(env.iter().copied())
        .output()
        .expect("run bat")
}

/// The same run in a shell that ignores SIGXFSZ and limits files to
/// `blocks` × 512 bytes (`ulimit -f`).
fn run_with_file_size_limit(out: &Path, blocks: u64) -> Output {
    let script = format!(
        "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" run {MODEL} --chains {CHAINS} \
         --warmup 100 --samples {SAMPLES} --seed 7 -o \"$1\" --ignore-disk-space"
    );
    Command::new("sh")
        .current_dir(root())
        .args([
            "-c",
            &script,
            env!("CARGO_BIN_EXE_bat"),
            out.to_str().unwrap(),
        ])
        .output()
        .expect("run sh")
}

/// The complete run's file, written once.
fn complete_run() -> PathBuf {
    static DONE: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    let (_, path) = DONE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("complete.h5");
        let out = run(&path, &[], &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (dir, path)
    });
    path.clone()
}

/// Checks the file a run stopped by a refused write left: `bat summary`
/// opens it, it says `failed` and why, and each chain's recorded draws are
/// the complete run's first draws (NaN after them), with the counts the
/// message gave. Returns the draws per chain.
fn check_partial_file(path: &Path, stderr: &str, in_words: &str) -> Vec<usize> {
    assert!(stderr.contains(in_words), "{stderr}");
    let summary = Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(["summary", path.to_str().unwrap()])
        .output()
        .unwrap();
    let reader = DrawReader::open(path).expect("the file opens");
    let attributes = reader.attributes();
    assert_eq!(attributes["run_status"], "failed");
    assert!(
        attributes["run_status_reason"].contains(in_words),
        "{attributes:?}"
    );
    let counts = reader
        .draws_per_chain("posterior")
        .expect("draws_per_chain");
    assert_eq!(counts.len(), CHAINS);
    assert!(counts.iter().all(|&n| n < SAMPLES), "{counts:?}");
    let (least, most) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    let held = if least == most {
        format!("holds {least} of {SAMPLES} draws per chain")
    } else {
        format!("holds {least} to {most} of {SAMPLES} draws per chain")
    };
    assert!(stderr.contains(&held), "{held:?} not in {stderr}");
    if *most > 0 {
        assert!(summary.status.success(), "{}", text(&summary.stderr));
    }

    let partial = read_draws(path).unwrap();
    let complete = read_draws(complete_run()).unwrap();
    for variable in &partial.posterior {
        let whole = complete.posterior_variable(&variable.name).unwrap();
        let per_draw = variable.elements_per_draw();
        for (chain, &n) in counts.iter().enumerate() {
            let ours = &variable.values[chain * variable.n_draws * per_draw..]
                [..variable.n_draws * per_draw];
            let theirs = &whole.values[chain * whole.n_draws * per_draw..][..n * per_draw];
            assert_eq!(
                ours[..n * per_draw]
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                theirs.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "`{}` chain {chain}: the first {n} draws",
                variable.name
            );
            assert!(
                ours[n * per_draw..].iter().all(|x| x.is_nan()),
                "`{}` chain {chain}: draws after the first {n} are not NaN",
                variable.name
            );
        }
    }
    counts
}

#[test]
fn a_run_that_cannot_fit_stops_before_sampling() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.h5");
    let output = run(&out, &[("BAT_TEST_DISK_FREE", "200000")], &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for part in [
        "needs about",
        "200.0 kB free",
        "--samples",
        "--thin",
        "-o",
        "--ignore-disk-space",
    ] {
        assert!(stderr.contains(part), "{part:?} not in {stderr}");
    }
    assert!(!stderr.contains("iterations in"), "it sampled: {stderr}");
    assert!(!out.exists());
    // The estimate is what the complete run's file takes, or somewhat more.
    let needed: f64 = stderr
        .split("needs about ")
        .nth(1)
        .and_then(|rest| rest.split(" MB").next())
        .and_then(|n| n.parse().ok())
        .expect("needs about N MB");
    let actual = std::fs::metadata(complete_run()).unwrap().len() as f64 / 1e6;
    assert!(
        needed >= actual && needed <= 1.5 * actual + 0.2,
        "estimated {needed} MB, the complete file is {actual} MB"
    );
}

#[test]
fn a_full_disk_keeps_every_block_written_before() {
    let complete = std::fs::metadata(complete_run()).unwrap().len();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.h5");
    let free = (complete * 2 / 3).to_string();
    let output = run(
        &out,
        &[("BAT_TEST_DISK_FREE", &free)],
        &["--ignore-disk-space"],
    );
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("To fit, free some space"), "{stderr}");
    let counts = check_partial_file(&out, &stderr, "the disk is full");
    assert!(counts.iter().any(|&n| n > 0), "{counts:?}");
    arviz_selects_the_recorded_draws(&out, &counts);
}

#[test]
fn a_disk_that_stops_taking_writes_keeps_every_block_written_before() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.h5");
    // Blocks are written per group: the 5th is the third group of draws.
    let output = run(&out, &[("BAT_TEST_FAIL_WRITE", "5")], &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let counts = check_partial_file(&out, &stderr, "the disk reported an input/output error");
    assert!(counts.iter().any(|&n| n > 0), "{counts:?}");
}

#[test]
fn a_file_size_limit_keeps_every_block_written_before() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.h5");
    let complete = std::fs::metadata(complete_run()).unwrap().len();
    let output = run_with_file_size_limit(&out, complete * 2 / 3 / 512);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let counts = check_partial_file(&out, &stderr, "the file reached the largest size allowed");
    assert!(counts.iter().any(|&n| n > 0), "{counts:?}");
}

/// A tmpfs of `size` mounted for the test, unmounted when dropped; `None`
/// where the machine does not allow mounting (not root, or no capability).
struct SmallFs(tempfile::TempDir);

impl SmallFs {
    fn mount(size: &str) -> Option<SmallFs> {
        let dir = tempfile::tempdir().ok()?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .ok()?;
        status.status.success().then_some(SmallFs(dir))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_real_small_file_system() {
    let Some(fs) = SmallFs::mount("2500k") else {
        eprintln!("skipped: this machine does not allow mounting a tmpfs");
        return;
    };
    let out = fs.0.path().join("o.h5");
    let refused = run(&out, &[], &[]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("needs about"), "{stderr}");
    let output = run(&out, &[], &["--ignore-disk-space"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let counts = check_partial_file(&out, &stderr, "the disk is full");
    assert!(counts.iter().any(|&n| n > 0), "{counts:?}");
    arviz_selects_the_recorded_draws(&out, &counts);
}

/// The selection docs/output.md shows, run in ArviZ: the recorded draws
/// are numbers, the rest NaN, and the draws every chain has summarize.
fn arviz_selects_the_recorded_draws(path: &Path, counts: &[usize]) {
    let code = r#"
import json, sys
import arviz as az
import numpy as np
import xarray as xr
idata = az.from_netcdf(sys.argv[1])
post = idata.posterior
n = np.asarray(post.attrs["draws_per_chain"])
real = post.where(post.draw < xr.DataArray(n, dims="chain"))
common = post.isel(draw=slice(0, int(n.min())))
mu = real["mu"].values
print(json.dumps({
    "status": post.attrs["run_status"],
    "counts": n.tolist(),
    "numbers": [int(np.isfinite(row).sum()) for row in post["mu"].values],
    "selected": [int(np.isfinite(row).sum()) for row in mu],
    "common": int(common.sizes["draw"]),
    "summary_rows": int(len(az.summary(common))) if n.min() > 1 else 0,
}))
"#;
    let output = Command::new(venv_python())
        .args(["-c", code])
        .arg(path)
        .output()
        .expect("run python");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["status"], "failed");
    let counts_json: Vec<serde_json::Value> = counts.iter().map(|&n| n.into()).collect();
    assert_eq!(
        report["counts"],
        serde_json::Value::Array(counts_json.clone())
    );
    assert_eq!(
        report["numbers"],
        serde_json::Value::Array(counts_json.clone())
    );
    assert_eq!(report["selected"], serde_json::Value::Array(counts_json));
    assert_eq!(report["common"], *counts.iter().min().unwrap());
}
