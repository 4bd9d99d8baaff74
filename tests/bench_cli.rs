//! `bat bench --format json` on eight schools with tiny counts: one object
//! per (batching, chain count) with the documented fields, positive rates,
//! no failed lanes at random inits of this well-behaved model.

use std::process::Command;

fn bench(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bat"))
        .arg("bench")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/eight_schools_noncentered.bat"
        ))
        .args(args)
        .output()
        .expect("bat runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The JSON list's rows as (chains, the string field `key`, the row),
/// each checked to have a positive finite rate and no failed lanes.
fn sound_rows(stdout: &str, key: &str) -> Vec<(u64, String, serde_json::Value)> {
    let rows: serde_json::Value = serde_json::from_str(stdout).expect(stdout);
    let rows = rows.as_array().expect("a JSON list");
    rows.iter()
        .map(|r| {
            let rate = r["grad_evals_per_s"].as_f64().expect("a number");
            assert!(rate > 0.0 && rate.is_finite(), "{r}");
            assert_eq!(r["failed_lanes"], 0, "{r}");
            let name = r[key].as_str().unwrap_or_else(|| panic!("{key}: {r}"));
            (r["chains"].as_u64().unwrap(), name.to_string(), r.clone())
        })
        .collect()
}

#[test]
fn json_lists_one_measurement_per_batching_and_chain_count() {
    let (ok, stdout, stderr) = bench(&[
        "--chains",
        "1,3",
        "--batching",
        "local,pc",
        "--threads",
        "2",
        "--seconds",
        "0",
        "--format",
        "json",
    ]);
    assert!(ok, "{stderr}");
    let rows = sound_rows(&stdout, "batching");
    let seen: Vec<(u64, &str)> = rows.iter().map(|(c, b, _)| (*c, b.as_str())).collect();
    assert_eq!(seen, [(1, "local"), (3, "local"), (1, "pc"), (3, "pc")]);
    for (_, _, r) in &rows {
        assert!(r["batches"].as_u64().unwrap() >= 1, "{r}");
    }
}

#[test]
fn the_table_names_the_columns_and_bad_models_fail() {
    let (ok, stdout, stderr) = bench(&["--chains", "2", "--seconds", "0"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("grad evals/s"), "{stdout}");
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    // The compiled gradient by default (g++ is there), as `bat run`.
    let row: Vec<&str> = stdout.lines().last().unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["2", "native", "pc"], "{stdout}");
    // The CPU backend's program-counter batching when asked for.
    let (ok, stdout, stderr) = bench(&["--chains", "2", "--seconds", "0", "--backend", "cpu"]);
    assert!(ok, "{stderr}");
    let row: Vec<&str> = stdout.lines().last().unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["2", "cpu", "pc"], "{stdout}");
    let out = Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(["bench", "/nonexistent/model.bat"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// A batch of no chains measures nothing: a usage error (exit 2) naming
/// the option.
#[test]
fn zero_chains_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_bat"))
        .arg("bench")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/eight_schools_noncentered.bat"
        ))
        .args(["--chains", "16,0"])
        .output()
        .expect("bat runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--chains") && stderr.contains("at least one chain"),
        "{stderr}"
    );
}

/// `--backend native` times the compiled gradient: one object per chain
/// count, named `native`, with a positive rate and no failed lanes, the
/// lanes split over two threads.
#[test]
fn native_backend_lists_its_measurements() {
    let (ok, stdout, stderr) = bench(&[
        "--backend",
        "native",
        "--chains",
        "1,5",
        "--threads",
        "2",
        "--seconds",
        "0",
        "--format",
        "json",
    ]);
    assert!(ok, "{stderr}");
    let rows = sound_rows(&stdout, "backend");
    let seen: Vec<(u64, &str)> = rows.iter().map(|(c, b, _)| (*c, b.as_str())).collect();
    assert_eq!(seen, [(1, "native"), (5, "native")]);
}

/// A gradient the code generator cannot build runs on the CPU backend
/// under `bat run --backend native`; `bat bench --backend native` says so
/// and measures that, rather than refusing the model.
#[test]
fn native_backend_measures_the_cpu_gradient_it_falls_back_to() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("eigen.stan");
    // eigenvalues_sym has no generated code (tests/primitive_support.rs).
    std::fs::write(
        &model,
        "parameters { vector<lower=0>[2] d; }
model {
  d ~ exponential(1);
  target += log(eigenvalues_sym(diag_matrix(d) + rep_matrix(0.5, 2, 2))[1]);
}",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bat"))
        .arg("bench")
        .arg(&model)
        .args(["--backend", "native", "--chains", "3", "--seconds", "0"])
        .args(["--format", "json"])
        .output()
        .expect("bat runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("not compiled") && stderr.contains("eigenvalues_sym"),
        "{stderr}"
    );
    let rows = sound_rows(&stdout, "backend");
    let seen: Vec<(u64, &str)> = rows.iter().map(|(c, b, _)| (*c, b.as_str())).collect();
    assert_eq!(seen, [(3, "cpu")]);
}
