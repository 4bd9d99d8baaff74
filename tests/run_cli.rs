//! `bat run` end to end: errors and exit codes, reproducibility across
//! `--chains` and `--threads`, and a run killed with SIGKILL leaving a file
//! that `bat summary` and ArviZ open.

#[path = "support/run.rs"]
mod support;

use bat::output::{DrawReader, read_draws};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{NORMAL_DATA, NORMAL_MEAN, bat, s, text, venv_python, write};

#[test]
fn missing_data_is_an_error_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    let out = bat(&["run", s(&model), "-o", s(&dir.path().join("o.h5"))]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("`N`"), "{}", text(&out.stderr));
}

/// An output path that cannot be written is refused before any sampling
/// (the draws file is created at the first kept draw, after warmup), and
/// an existing file there is left alone.
#[test]
fn an_unwritable_output_fails_before_sampling() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let missing_dir = dir.path().join("no_such_dir").join("o.h5");
    for (output, reason) in [
        (missing_dir, "does not exist"),
        (dir.path().to_path_buf(), "is a directory"),
    ] {
        let out = bat(&["run", s(&model), "--warmup", "200", "-o", s(&output)]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("cannot write the draws file") && err.contains(s(&output)),
            "{err}"
        );
        assert!(err.contains(reason), "{err}");
        // Nothing ran: no iteration report.
        assert!(!err.contains("iterations in"), "{err}");
    }
    // A writable path: an existing file is checked without being changed
    // (a run that fails before its first draw leaves it as it was).
    let never = write(
        dir.path(),
        "never.bat",
        "parameters { real x; }\nmodel { reject(\"never\"); }\n",
    );
    let existing = write(dir.path(), "old.h5", "not a draws file");
    let out = bat(&["run", s(&never), "--chains", "2", "-o", s(&existing)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Initialization failed"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "not a draws file"
    );
}

/// `--samples 0` without `--save-warmup` would keep nothing: refused
/// before sampling with what to add; with it, the warmup draws are written.
#[test]
fn samples_zero_needs_save_warmup() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("o.h5");
    let out = bat(&["run", s(&model), "--samples", "0", "-o", s(&output)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--save-warmup") && !err.contains("iterations in"),
        "{err}"
    );
    let out = bat(&[
        "run",
        s(&model),
        "--samples",
        "0",
        "--warmup",
        "30",
        "--save-warmup",
        "-o",
        s(&output),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reader = bat::output::DrawReader::open(&output).unwrap();
    let mu = |group: &str| {
        let vars = reader.variables(group).unwrap();
        let v = vars.iter().find(|v| v.name == "mu").expect("mu");
        (v.n_chains, v.n_draws)
    };
    assert_eq!(mu("warmup_posterior"), (4, 30));
    assert_eq!(mu("posterior"), (4, 0));
}

/// Data that does not fit the model names the data file, the variable,
/// and expected vs found; an error in transformed data points at its
/// statement in the model.
#[test]
fn data_errors_name_the_data_file_and_transformed_data_errors_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    let data = write(dir.path(), "short.json", r#"{"N": 5, "y": [1.0, 2.0]}"#);
    let out = bat(&["run", s(&model), "--data", s(&data)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("short.json") && err.contains("`y`"), "{err}");
    assert!(err.contains("found an array of 2 elements"), "{err}");
    let td = write(
        dir.path(),
        "td.bat",
        "data { int N; }\ntransformed data {\n  if (N > 2) reject(\"N too big: \", N);\n}\nparameters { real x; }\nmodel { x ~ normal(0, 1); }\n",
    );
    let data = write(dir.path(), "n.json", r#"{"N": 5}"#);
    let out = bat(&["run", s(&td), "--data", s(&data)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("N too big: 5"), "{err}");
    assert!(err.contains("td.bat:3:"), "{err}");
}

/// A model without parameters (a simulation in generated quantities)
/// runs as Stan's fixed_param sampler: every draw runs generated
/// quantities with the chain's own random stream, whatever the batching
/// (it used to fail with "Posterior is improper").
#[test]
fn a_model_without_parameters_simulates_its_generated_quantities() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(
        dir.path(),
        "sim.bat",
        "data { int N; }\ngenerated quantities {\n  array[N] real y;\n  for (n in 1:N) y[n] = normal_rng(0, 1);\n}\n",
    );
    write(dir.path(), "sim.data.json", r#"{"N": 2}"#);
    let run = |batching: &str, chains: &str| {
        let output = dir.path().join(format!("{batching}{chains}.h5"));
        let out = bat(&[
            "run",
            s(&model),
            "--chains",
            chains,
            "--samples",
            "400",
            "--batching",
            batching,
            "--seed",
            "3",
            "-o",
            s(&output),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let file = read_draws(&output).unwrap();
        let y = file.posterior_variable("y").unwrap().clone();
        (y, file)
    };
    let (y, file) = run("pc", "4");
    assert_eq!((y.n_chains, y.n_draws), (4, 400));
    // Standard normal draws: mean within 0.15 (6 sd of 1600 draws), sd
    // within 10%, no two draws equal.
    let draws = y.element_draws(0);
    let mean = draws.iter().sum::<f64>() / draws.len() as f64;
    let sd = (draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / draws.len() as f64).sqrt();
    assert!(
        mean.abs() < 0.15 && (sd - 1.0).abs() < 0.1,
        "mean {mean}, sd {sd}"
    );
    let mut sorted = draws.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(sorted.windows(2).all(|w| w[0] != w[1]));
    let stats = file.sample_stats.as_ref().unwrap();
    let lp = stats.iter().find(|v| v.name == "lp").unwrap();
    assert!(lp.values.iter().all(|&x| x == 0.0));
    // Chain 1 draws the same with the other executor and fewer chains.
    let (y_local, _) = run("local", "2");
    let per_chain = 400 * 2;
    assert_eq!(y_local.values[..per_chain], y.values[..per_chain]);
}

/// Tuple-valued transformed parameters and generated quantities (and an
/// array of tuples) are stored one dataset per component, named as Stan
/// names them (`t.1`, `a.2`), with the components' own shapes.
#[test]
fn tuple_outputs_are_stored_one_dataset_per_component() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(
        dir.path(),
        "tuples.bat",
        "parameters { real x; }\n\
         transformed parameters { tuple(real<lower=0>, real<upper=0>) t = (exp(x), -exp(x)); }\n\
         model { x ~ normal(0, 1); }\n\
         generated quantities {\n\
           array[3] tuple(int, vector[2]) a;\n\
           for (i in 1:3) a[i] = (i, [x, i * x]');\n\
         }\n",
    );
    let output = dir.path().join("tuples.h5");
    let (file, _) = run_ok(
        &model,
        &[
            "--chains",
            "2",
            "--warmup",
            "50",
            "--samples",
            "20",
            "--seed",
            "5",
        ],
        &output,
    );
    let var = |name: &str| {
        file.posterior_variable(name)
            .unwrap_or_else(|| panic!("no `{name}` in the file"))
            .clone()
    };
    let names: Vec<&str> = file.posterior.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["x", "t.1", "t.2", "a.1", "a.2"]);
    let (x, t1, t2, a1, a2) = (var("x"), var("t.1"), var("t.2"), var("a.1"), var("a.2"));
    assert_eq!(
        (t1.dims.clone(), a1.dims.clone(), a2.dims.clone()),
        (vec![], vec![3], vec![3, 2])
    );
    for (k, &xk) in x.values.iter().enumerate() {
        assert_eq!(t1.values[k], xk.exp());
        assert_eq!(t2.values[k], -xk.exp());
        assert_eq!(&a1.values[3 * k..3 * k + 3], &[1.0, 2.0, 3.0]);
        // a[i].2 = [x, i x], row-major over (i, element).
        let row: Vec<f64> = (1..=3).flat_map(|i| [xk, i as f64 * xk]).collect();
        assert_eq!(&a2.values[6 * k..6 * k + 6], &row[..]);
    }
}

/// Nested tuple parameters sample (they used to panic in the batched
/// gradient's parameter adjoint): the same draws on the CPU backend and
/// the default one, stored one dataset per component, centred where the
/// model puts them.
#[test]
fn nested_tuple_parameters_sample_the_same_on_the_host_backends() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(
        dir.path(),
        "nested.stan",
        "parameters {\n\
           tuple(real, real) ps;\n\
           tuple(real, tuple(real, vector[2])) ps2;\n\
         }\n\
         model {\n\
           ps.1 ~ normal(0, 1);\n\
           ps.2 ~ normal(1, 2);\n\
           ps2.1 ~ normal(2, 1);\n\
           ps2.2.1 ~ normal(-1, 0.5);\n\
           ps2.2.2 ~ normal(3, 1);\n\
         }\n",
    );
    let run = |backend: &[&str], name: &str| {
        let mut settings = vec![
            "--chains",
            "2",
            "--warmup",
            "150",
            "--samples",
            "150",
            "--seed",
            "9",
        ];
        settings.extend(backend);
        run_ok(&model, &settings, &dir.path().join(name)).0
    };
    let cpu = run(&["--backend", "cpu"], "cpu.h5");
    let default = run(&[], "default.h5");
    let names: Vec<&str> = cpu.posterior.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["ps.1", "ps.2", "ps2.1", "ps2.2.1", "ps2.2.2"]);
    for name in names {
        let (a, b) = (
            cpu.posterior_variable(name).unwrap(),
            default.posterior_variable(name).unwrap(),
        );
        assert_eq!(a.values, b.values, "{name}");
    }
    // 300 draws of normal(-1, 0.5) and normal(2, 1): means within 0.3
    // and 0.6 (several standard errors).
    let mean = |name: &str| {
        let v = &cpu.posterior_variable(name).unwrap().values;
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!((mean("ps2.2.1") + 1.0).abs() < 0.3, "{}", mean("ps2.2.1"));
    assert!((mean("ps2.1") - 2.0).abs() < 0.6, "{}", mean("ps2.1"));
}

/// An init file may leave parameters out (as Stan's): those start
/// uniform(−2, 2) on the unconstrained scale, the given ones where the
/// file puts them, and a note says which were left out.
#[test]
fn an_init_file_may_leave_parameters_out() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    // mu far from the posterior (about 1.3): the first warmup draws are
    // still near 40, which a uniform(−2, 2) start could not give.
    let init = write(dir.path(), "init.json", r#"{"mu": 40}"#);
    let output = dir.path().join("o.h5");
    let out = bat(&[
        "run",
        s(&model),
        "--init",
        s(&init),
        "--chains",
        "3",
        "--warmup",
        "3",
        "--samples",
        "3",
        "--save-warmup",
        "--seed",
        "11",
        "-o",
        s(&output),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("no value for `sigma`") && !err.contains("`mu`"),
        "{err}"
    );
    let reader = bat::output::DrawReader::open(&output).unwrap();
    let read = |name: &str| {
        let vars = reader.variables("warmup_posterior").unwrap();
        let info = vars.iter().find(|v| v.name == name).unwrap().clone();
        reader.read(&info).unwrap()
    };
    let (mu, sigma) = (read("mu"), read("sigma"));
    for chain in 0..3 {
        let first = mu.values[chain * 3];
        assert!((first - 40.0).abs() < 10.0, "chain {chain}: mu {first}");
    }
    // sigma was drawn per chain: the chains start apart.
    let starts: Vec<f64> = (0..3).map(|c| sigma.values[c * 3]).collect();
    assert!(
        starts[0] != starts[1] && starts[1] != starts[2],
        "{starts:?}"
    );
}

/// A chain stopped by an error in generated quantities (as Stan, the
/// error stops the chain) keeps its draws; the summary covers every
/// chain's first draws up to the shortest chain's count instead of
/// printing NaN for everything, and says so.
#[test]
fn a_chain_stopped_early_is_summarized_over_the_common_draws() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(
        dir.path(),
        "gq.bat",
        "parameters { real mu; }\nmodel { mu ~ normal(0, 1); }\n\
         generated quantities { if (mu > 1.5) reject(\"mu too big: \", mu); }\n",
    );
    let output = dir.path().join("o.h5");
    let out = bat(&[
        "run",
        s(&model),
        "--chains",
        "2",
        "--samples",
        "300",
        "--seed",
        "1",
        "-o",
        s(&output),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let file = read_draws(&output).unwrap();
    let mu = file.posterior_variable("mu").unwrap();
    let kept: Vec<usize> = (0..2)
        .map(|c| {
            let row = &mu.values[c * mu.n_draws..(c + 1) * mu.n_draws];
            row.iter().take_while(|x| !x.is_nan()).count()
        })
        .collect();
    let common = *kept.iter().min().unwrap();
    assert!(
        common > 0 && kept.iter().any(|&k| k < mu.n_draws),
        "{kept:?}"
    );
    let expected: f64 = (0..2)
        .flat_map(|c| &mu.values[c * mu.n_draws..c * mu.n_draws + common])
        .sum::<f64>()
        / (2 * common) as f64;
    let out = bat(&["summary", "--format", "json", s(&output)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let q = summary["quantities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "mu")
        .unwrap();
    let mean = q["mean"].as_f64().unwrap();
    assert!((mean - expected).abs() < 1e-12, "{mean} vs {expected}");
    let table = text(&bat(&["summary", s(&output)]).stdout);
    assert!(table.contains("stopped early"), "{table}");
    // The file says which draws are real, and why the run ended.
    let reader = DrawReader::open(&output).unwrap();
    assert_eq!(reader.draws_per_chain("posterior").unwrap(), kept);
    let attributes = reader.attributes();
    assert_eq!(attributes["run_status"], "failed");
    assert!(
        attributes["run_status_reason"].contains("mu too big"),
        "{attributes:?}"
    );
}

/// `--lanes` pools chains only on the host's program-counter executor;
/// elsewhere it is refused rather than ignored.
#[test]
fn lanes_without_pc_batching_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let out = bat(&[
        "run",
        s(&model),
        "--lanes",
        "2",
        "--batching",
        "local",
        "-o",
        s(&dir.path().join("o.h5")),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--lanes needs --batching pc"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("o.h5").exists(), "nothing ran");
}

#[test]
fn bad_init_file_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let init = write(dir.path(), "init.json", r#"{"mu": 1, "sigma": -2}"#);
    let out = bat(&[
        "run",
        s(&model),
        "--init",
        s(&init),
        "-o",
        s(&dir.path().join("o.h5")),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("init.json") && err.contains("sigma"), "{err}");
    let missing = dir.path().join("nope.json");
    let out = bat(&["run", s(&model), "--init", s(&missing)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nope.json"),
        "{}",
        text(&out.stderr)
    );
}

/// Without a CUDA driver, `--backend cuda` is a clear error (the backend
/// itself is tested in `tests/cuda_cli.rs` against a stub driver).
#[test]
fn cuda_backend_without_a_driver_is_a_clear_error() {
    if backend_cuda::probe::driver_library_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    let out = bat(&["run", s(&model), "--backend", "cuda"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).trim(),
        "error: no CUDA driver found; use --backend cpu"
    );
}

#[test]
fn usage_errors_exit_two() {
    for args in [
        &["run"][..],
        &["run", "m.bat", "--chains", "0"],
        &["run", "m.bat", "--adapt-delta", "1.5"],
        &["run", "m.bat", "--batching", "warp"],
    ] {
        assert_eq!(bat(args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn initialization_failure_names_the_failing_statement() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(
        dir.path(),
        "reject.bat",
        "parameters { real x; }\nmodel {\n  reject(\"never valid\");\n}\n",
    );
    let out = bat(&[
        "run",
        s(&model),
        "--chains",
        "1",
        "-o",
        s(&dir.path().join("o.h5")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("Initialization failed after 100 attempts"),
        "{err}"
    );
    assert!(
        err.contains("never valid") && err.contains("reject.bat:3:3"),
        "{err}"
    );
}

fn run_chains(dir: &Path, name: &str, chains: &str, threads: &str) -> bat::output::DrawFile {
    let model = write(dir, "m.bat", NORMAL_MEAN);
    write(dir, "m.data.json", NORMAL_DATA);
    // The CPU backend's batched executor: its sub-batches are what the
    // batch report describes.
    let settings = [
        "--backend",
        "cpu",
        "--chains",
        chains,
        "--threads",
        threads,
        "--warmup",
        "60",
        "--samples",
        "40",
        "--seed",
        "11",
    ];
    let (file, stderr) = run_ok(&model, &settings, &dir.join(name));
    assert_batch_report(&stderr, 2);
    file
}

/// `bat run model settings -o output`, which must succeed: the draws file
/// and stderr.
fn run_ok(model: &Path, settings: &[&str], output: &Path) -> (bat::output::DrawFile, String) {
    let mut args = vec!["run", s(model)];
    args.extend(settings);
    args.extend(["-o", s(output)]);
    let out = bat(&args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (read_draws(output).unwrap(), stderr)
}

/// The line `N gradient evaluations in M batched calls (U% of the lanes of
/// each call on average)`: each call of a sub-batch of `lanes` lanes
/// evaluates 1 to `lanes` gradients, and U = N ÷ (lanes·M).
fn assert_batch_report(stderr: &str, lanes: u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("gradient evaluations in"))
        .unwrap_or_else(|| panic!("no batch report in {stderr}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let evaluations: u64 = words[0].parse().unwrap();
    let calls: u64 = words[4].parse().unwrap();
    let percent: f64 = words[7]
        .trim_start_matches('(')
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(
        calls <= evaluations && evaluations <= lanes * calls,
        "{line}"
    );
    let expected = 100.0 * evaluations as f64 / (lanes * calls) as f64;
    assert!(
        (percent - expected).abs() <= 0.5,
        "{line}: expected {expected:.1}%"
    );
}

#[test]
fn chain_draws_do_not_depend_on_chains_or_threads() {
    let dir = tempfile::tempdir().unwrap();
    let two = run_chains(dir.path(), "two.h5", "2", "1");
    let four = run_chains(dir.path(), "four.h5", "4", "2");
    for (a, b) in two.posterior.iter().zip(&four.posterior) {
        assert_eq!(a.name, b.name);
        assert_eq!((a.n_chains, b.n_chains), (2, 4));
        let per_chain = a.n_draws * a.elements_per_draw();
        assert_eq!(
            a.values[..2 * per_chain],
            b.values[..2 * per_chain],
            "{}",
            a.name
        );
        // Different chains are different streams.
        assert_ne!(b.values[..per_chain], b.values[per_chain..2 * per_chain]);
    }
    let stats = |f: &bat::output::DrawFile| f.sample_stats.clone().unwrap();
    for (a, b) in stats(&two).iter().zip(&stats(&four)) {
        let per_chain = a.n_draws;
        assert_eq!(
            a.values[..2 * per_chain],
            b.values[..2 * per_chain],
            "{}",
            a.name
        );
    }
}

#[test]
fn sigkill_mid_run_leaves_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("killed.h5");
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_bat"))
            .args([
                "run",
                s(&model),
                "--chains",
                "2",
                "--threads",
                "1",
                "--warmup",
                "100",
                "--samples",
                LONG_RUN_SAMPLES,
                "--thin",
                long_run_thin("auto"),
                "--seed",
                "3",
                "-o",
                s(&output),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_draws(&output, 200);
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    let out = bat(&["summary", s(&output)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("mu"));
    let file = read_draws(&output).unwrap();
    let mu = file.posterior_variable("mu").unwrap();
    let first_block = &mu.values[..100];
    assert!(first_block.iter().all(|x| x.is_finite()));
    // A killed run's file says it was still running, and each chain's
    // recorded draws (as of the last flush) are real.
    let reader = DrawReader::open(&output).unwrap();
    assert_eq!(reader.attributes()["run_status"], "running");
    let counts = reader.draws_per_chain("posterior").unwrap();
    for (chain, &n) in counts.iter().enumerate() {
        let row = &mu.values[chain * mu.n_draws..][..n];
        assert!(n >= 100 && row.iter().all(|x| x.is_finite()), "{counts:?}");
    }
    let code = format!(
        "import arviz; d = arviz.from_netcdf({:?}); print(d.posterior['mu'].shape)",
        s(&output)
    );
    let out = Command::new(venv_python())
        .args(["-c", &code])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Waits until `output` holds at least `draws` draws per chain (read
/// without HDF5's file lock, which the writer holds).
fn wait_for_draws(output: &Path, draws: u64) {
    let started = Instant::now();
    loop {
        let out = Command::new(env!("CARGO_BIN_EXE_bat"))
            .args(["summary", "--format", "json", s(output)])
            .env("HDF5_USE_FILE_LOCKING", "FALSE")
            .output()
            .unwrap();
        let written = serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v["n_draws"].as_u64());
        if out.status.success() && written.is_some_and(|n| n >= draws) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no draws written"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Iterations per chain of a run that is stopped from outside: far more
/// than the compiled backend makes (about 100,000 a second per chain in
/// the test build) before the test stops it.
const LONG_RUN_SAMPLES: &str = "20000000";

/// The thinning of such a run on `backend`: the test polls the file with
/// `bat summary`, which reads every draw, so the file must grow by a few
/// hundred draws a second, not by the compiled backend's 100,000 (the CPU
/// backend of the test build makes about 500).
fn long_run_thin(backend: &str) -> &'static str {
    if backend == "cpu" { "1" } else { "100" }
}

fn spawn_long_run(model: &Path, output: &Path, backend: &str) -> KillOnDrop {
    KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_bat"))
            .args([
                "run",
                s(model),
                "--backend",
                backend,
                "--chains",
                "2",
                "--threads",
                "2",
                "--warmup",
                "100",
                "--samples",
                LONG_RUN_SAMPLES,
                "--thin",
                long_run_thin(backend),
                "--seed",
                "3",
                "-o",
                s(output),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Ctrl-C (SIGINT) mid-run, on the CPU and the compiled backend: the file
/// is closed with the draws every chain has, and says it was interrupted
/// and how many draws each chain has.
#[test]
fn ctrl_c_stops_cleanly_with_the_draws_so_far() {
    for backend in ["cpu", "native"] {
        ctrl_c_stops_cleanly_on(backend);
    }
}

fn ctrl_c_stops_cleanly_on(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("interrupted.h5");
    let mut child = spawn_long_run(&model, &output, backend);
    wait_for_draws(&output, 300);
    let pid = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    while child.0.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Ctrl-C did not stop the run"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output_ref();
    assert_eq!(out.0.code(), Some(1), "{backend}: {}", out.2);
    assert!(out.2.contains("interrupted"), "{backend}: {}", out.2);
    // The summary of the draws so far was printed; every chain has the
    // same number of draws, none of them padding.
    assert!(out.1.contains("mu"), "{}", out.1);
    // The file says it was interrupted and how many draws each chain has:
    // the draws every chain has, at least those seen before the signal.
    let reader = DrawReader::open(&output).unwrap();
    assert_eq!(reader.attributes()["run_status"], "interrupted");
    let file = read_draws(&output).unwrap();
    let mu = file.posterior_variable("mu").unwrap();
    assert!(mu.n_draws >= 300, "{backend}: {} draws", mu.n_draws);
    assert!(mu.values.iter().all(|x| x.is_finite()));
    let counts = reader.draws_per_chain("posterior").unwrap();
    assert_eq!(counts, vec![mu.n_draws; 2], "{backend}");
}

/// Kills the child process also when the test fails.
struct KillOnDrop(std::process::Child);

impl KillOnDrop {
    /// (status, stdout, stderr) of the exited child.
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String, String) {
        use std::io::Read;
        let status = self.0.wait().unwrap();
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(mut o) = self.0.stdout.take() {
            o.read_to_string(&mut out).unwrap();
        }
        if let Some(mut e) = self.0.stderr.take() {
            e.read_to_string(&mut err).unwrap();
        }
        (status, out, err)
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn save_warmup_and_thin_shape_the_groups() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("w.h5");
    let out = bat(&[
        "run",
        s(&model),
        "--chains",
        "2",
        "--warmup",
        "61",
        "--samples",
        "40",
        "--thin",
        "3",
        "--save-warmup",
        "--seed",
        "5",
        "-o",
        s(&output),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reader = bat::output::DrawReader::open(&output).unwrap();
    let draws = |group: &str, name: &str| {
        let vars = reader.variables(group).unwrap();
        let v = vars
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("{group}/{name}"));
        (v.n_chains, v.n_draws)
    };
    // Iterations 1, 4, 7, ... are kept: ceil(61 / 3) = 21 and ceil(40 / 3) = 14.
    assert_eq!(draws("warmup_posterior", "mu"), (2, 21));
    assert_eq!(draws("warmup_sample_stats", "step_size"), (2, 21));
    assert_eq!(draws("posterior", "y_new"), (2, 14));
    assert_eq!(draws("sample_stats", "diverging"), (2, 14));
    let attributes = reader.attributes();
    assert_eq!(attributes.get("seed").map(String::as_str), Some("5"));
    assert!(
        attributes["settings"].contains("\"thin\":3"),
        "{attributes:?}"
    );
    // The adapted step size is the one every post-warmup draw reports.
    let file = read_draws(&output).unwrap();
    let stats = file.sample_stats.unwrap();
    let step = stats.iter().find(|v| v.name == "step_size").unwrap();
    let h5 = bat::output::open_hdf5(&output).unwrap();
    let adapted: Vec<f64> = h5
        .dataset("sample_stats/adapted_step_size")
        .unwrap()
        .read_raw()
        .unwrap();
    let metric: Vec<f64> = h5
        .dataset("sample_stats/inv_metric")
        .unwrap()
        .read_raw()
        .unwrap();
    assert_eq!(metric.len(), 2 * 2);
    assert!(metric.iter().all(|&m| m > 0.0 && m.is_finite()));
    for chain in 0..2 {
        let per_chain = &step.values[chain * 14..(chain + 1) * 14];
        assert!(
            per_chain.iter().all(|&x| x == adapted[chain]),
            "{per_chain:?} vs {adapted:?}"
        );
    }
}

/// `--backend native` (sampler and gradient compiled with g++) writes the
/// CPU backend's draws and statistics bit for bit, generated quantities
/// included, and reports as many gradient evaluations; its threads change
/// nothing.
#[test]
fn native_backend_writes_the_cpu_backends_draws() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let run = |name: &str, extra: &[&str]| {
        let output = dir.path().join(name);
        let args = [
            &[
                "run",
                s(&model),
                "--chains",
                "5",
                "--warmup",
                "60",
                "--samples",
                "40",
                "--seed",
                "11",
                "-o",
                s(&output),
            ][..],
            extra,
        ]
        .concat();
        let out = bat(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        // The same trajectories: as many gradient evaluations.
        let evaluations: u64 = stderr
            .lines()
            .find_map(|l| {
                l.split_once(" gradient evaluations in ")?
                    .0
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{name}: no gradient evaluations reported: {stderr}"));
        (read_draws(&output).unwrap(), evaluations)
    };
    let (cpu, cpu_evaluations) = run("cpu.h5", &["--backend", "cpu"]);
    for threads in ["1", "2"] {
        let (native, evaluations) = run(
            &format!("native{threads}.h5"),
            &["--backend", "native", "--threads", threads],
        );
        assert_eq!(evaluations, cpu_evaluations, "{threads} threads");
        let stats = |f: &bat::output::DrawFile| f.sample_stats.clone().unwrap();
        for (a_group, b_group) in [
            (&cpu.posterior, &native.posterior),
            (&stats(&cpu), &stats(&native)),
        ] {
            assert_eq!(a_group.len(), b_group.len());
            for (a, b) in a_group.iter().zip(b_group) {
                assert_eq!(a.name, b.name);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&a.values),
                    bits(&b.values),
                    "{} ({threads} threads)",
                    a.name
                );
            }
        }
        assert!(native.posterior.iter().any(|v| v.name == "y_new"));
    }
}

/// A model never compiled before (an empty cache) starts on a quick build
/// and says so, with the CPU backend's draws bit for bit; the optimized
/// builds, compiled meanwhile by processes of their own, land in the cache
/// even when the run ends first, and the next run starts on them at once,
/// with the same draws.
#[test]
fn a_first_native_run_starts_on_a_quick_build_and_caches_the_optimized_one() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("native-cache");
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let run = |name: &str, backend: &str| {
        let output = dir.path().join(name);
        let out = Command::new(env!("CARGO_BIN_EXE_bat"))
            .args(["run", s(&model), "--chains", "3", "--warmup", "50"])
            .args(["--samples", "30", "--seed", "5", "--backend", backend, "-o"])
            .arg(&output)
            .env("BAT_NATIVE_CACHE", &cache)
            .output()
            .expect("run bat");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        (read_draws(&output).unwrap(), stderr)
    };
    let bits = |f: &bat::output::DrawFile| {
        let stats = f.sample_stats.clone().unwrap();
        (f.posterior.iter().chain(&stats))
            .map(|v| {
                (
                    v.name.clone(),
                    v.values.iter().map(|x| x.to_bits()).collect(),
                )
            })
            .collect::<Vec<(String, Vec<u64>)>>()
    };
    let (cpu, _) = run("cpu.h5", "cpu");
    let (first, stderr) = run("first.h5", "native");
    assert!(stderr.contains("a quick build"), "{stderr}");
    assert_eq!(bits(&first), bits(&cpu), "first run");
    // Two quick and two optimized libraries, no build directory left.
    let libraries = || {
        let entries: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().collect();
        let so = entries
            .iter()
            .filter(|e| e.path().extension().is_some_and(|x| x == "so"));
        (so.count(), entries.len())
    };
    let waited = Instant::now();
    while libraries() != (4, 4) {
        assert!(
            waited.elapsed() < Duration::from_secs(300),
            "the optimized builds never reached the cache: {:?}",
            libraries()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (second, stderr) = run("second.h5", "native");
    assert!(!stderr.contains("quick build"), "{stderr}");
    assert_eq!(bits(&second), bits(&cpu), "second run");
}

#[test]
fn native_backend_refuses_local_batching() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let out = bat(&[
        "run",
        s(&model),
        "--backend",
        "native",
        "--batching",
        "local",
        "-o",
        s(&dir.path().join("o.h5")),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("with --backend native the sampler is compiled"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("o.h5").exists(), "nothing ran");
}

/// The backend a draws file says ran it (its `settings` attribute).
fn backend_of(file: &bat::output::DrawFile) -> String {
    let settings: serde_json::Value =
        serde_json::from_str(&file.attributes["settings"]).expect("settings are JSON");
    settings["backend"].as_str().expect("a backend").to_string()
}

/// With no `--backend`, a model the compiled backend has code for runs
/// compiled, with the CPU backend's draws bit for bit and no note.
#[test]
fn the_default_backend_compiles_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let settings = [
        "--chains",
        "3",
        "--warmup",
        "50",
        "--samples",
        "30",
        "--seed",
        "4",
    ];
    let (auto, stderr) = run_ok(&model, &settings, &dir.path().join("auto.h5"));
    assert!(!stderr.contains("CPU backend"), "{stderr}");
    assert!(!stderr.contains("no code yet"), "{stderr}");
    assert_eq!(backend_of(&auto), "native");
    let mut cpu_settings = settings.to_vec();
    cpu_settings.extend(["--backend", "cpu"]);
    let (cpu, _) = run_ok(&model, &cpu_settings, &dir.path().join("cpu.h5"));
    assert_eq!(backend_of(&cpu), "cpu");
    for (a, c) in auto.posterior.iter().zip(&cpu.posterior) {
        assert_eq!(a.name, c.name);
        assert_eq!(a.values, c.values, "{}", a.name);
    }
    assert_eq!(auto.posterior.len(), cpu.posterior.len());
}

/// A model with an op the compiled backend has no code for (`gamma_p`).
const GAMMA_P_MODEL: &str = "parameters {
  real mu;
  real<lower=0, upper=1> x;
}
model {
  mu ~ normal(1, 2);
  target += gamma_p(2, x);
}
generated quantities {
  real y = normal_rng(mu, 1);
}
";

/// Every posterior and sample-statistics value of a draws file, as bits.
fn draw_bits(file: &bat::output::DrawFile) -> Vec<(String, Vec<u64>)> {
    let stats = file.sample_stats.clone().unwrap();
    (file.posterior.iter().chain(&stats))
        .map(|v| {
            let bits = v.values.iter().map(|x| x.to_bits()).collect();
            (v.name.clone(), bits)
        })
        .collect()
}

/// The `N gradient evaluations in ...` count a run reports.
fn gradient_evaluations(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| {
            l.split_once(" gradient evaluations in ")?
                .0
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no gradient evaluations reported: {stderr}"))
}

/// A model with an op the compiled backend has no code for runs, with no
/// `--backend` and with `--backend native`: the sampler compiled, the
/// model's gradient on the CPU backend's gradient program, said once with
/// the op's line. Its draws are `--backend cpu`'s bit for bit, generated
/// quantities included, on any number of threads.
#[test]
fn a_gradient_the_compiled_backend_lacks_runs_on_the_cpu_backends() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", GAMMA_P_MODEL);
    let settings = [
        "--chains",
        "5",
        "--warmup",
        "40",
        "--samples",
        "30",
        "--seed",
        "9",
    ];
    let (cpu, cpu_stderr) = run_ok(
        &model,
        &[&settings[..], &["--backend", "cpu"]].concat(),
        &dir.path().join("cpu.h5"),
    );
    assert_eq!(backend_of(&cpu), "cpu");
    let runs = [
        ("auto", &[][..]),
        ("native", &["--backend", "native"][..]),
        ("native2", &["--backend", "native", "--threads", "2"][..]),
    ];
    for (name, extra) in runs {
        let output = dir.path().join(format!("{name}.h5"));
        let (file, stderr) = run_ok(&model, &[&settings[..], extra].concat(), &output);
        assert_eq!(backend_of(&file), "native", "{name}: {stderr}");
        assert_eq!(
            stderr
                .matches("note: the compiled backend has no code yet for the ops below")
                .count(),
            1,
            "{name}: {stderr}"
        );
        assert!(
            stderr.contains("line 7, column 13: `gamma_p(2, x)`: primitive gamma_p"),
            "{name}: {stderr}"
        );
        assert!(stderr.contains("the sampler compiled"), "{name}: {stderr}");
        assert!(!stderr.contains("internal error"), "{name}: {stderr}");
        assert_eq!(
            gradient_evaluations(&stderr),
            gradient_evaluations(&cpu_stderr),
            "{name}"
        );
        assert_eq!(draw_bits(&file), draw_bits(&cpu), "{name}");
        assert_eq!(file.posterior_variable("y").unwrap().n_draws, 30);
    }
}

/// g++ failing on the model's generated gradient code (a compiler that
/// refuses it, here) is an internal error saying so, naming the model's
/// statements whose code the compiler's log names, never a failed run:
/// the sampler runs compiled and the gradient on the CPU backend's
/// program, with `--backend cpu`'s draws.
#[test]
fn a_gradient_the_compiler_fails_on_runs_on_the_cpu_backends() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let model = write(
        dir.path(),
        "m.bat",
        "parameters {\n  real mu;\n  real<lower=0> sigma;\n}\n\
         model {\n  mu ~ normal(0, 10);\n  sigma ~ lognormal(0, 1);\n}\n",
    );
    let path = std::env::var_os("PATH").unwrap_or_default();
    let gxx = std::env::split_paths(&path)
        .map(|d| d.join("g++"))
        .find(|p| p.is_file())
        .expect("g++ on PATH");
    // g++ that fails on the gradient program (the one defining the
    // one-lane gradient function) and compiles the rest.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let wrapper = bin.join("g++");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nif grep -qs bat_native_lane_gradient model.cu; then\n  \
             kernel=$(grep -o 'bat_b[0-9]*_[0-9]*_at' model.cu | head -n 1)\n  \
             echo \"model.cu: In function 'void $kernel()':\" >&2\n  \
             echo 'model.cu:1:1: error: injected failure' >&2\n  exit 1\nfi\nexec '{}' \"$@\"\n",
            gxx.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut paths = vec![bin];
    paths.extend(std::env::split_paths(&path));
    let settings = [
        "--chains",
        "3",
        "--warmup",
        "40",
        "--samples",
        "30",
        "--seed",
        "3",
    ];
    let (cpu, _) = run_ok(
        &model,
        &[&settings[..], &["--backend", "cpu"]].concat(),
        &dir.path().join("cpu.h5"),
    );
    let output = dir.path().join("o.h5");
    let out = Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(["run", s(&model)])
        .args(settings)
        .args(["-o", s(&output)])
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("BAT_NATIVE_CACHE", dir.path().join("cache"))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("internal error: compiling the model's log density gradient failed")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("injected failure"), "{stderr}");
    assert!(
        stderr.contains(
            "m.bat: line 6, column 3: `mu ~ normal(0, 10);`: its generated code failed to compile"
        ),
        "{stderr}"
    );
    let file = read_draws(&output).unwrap();
    assert_eq!(backend_of(&file), "native");
    assert_eq!(draw_bits(&file), draw_bits(&cpu));
}

/// With no `--backend` and no C++ compiler, the run goes on on the CPU
/// backend after one line saying what is missing.
#[test]
fn the_default_backend_without_a_compiler_runs_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("o.h5");
    let out = Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(["run", s(&model), "--chains", "2", "--warmup", "30"])
        .args(["--samples", "20", "-o", s(&output)])
        // No directory on PATH holds g++.
        .env("PATH", dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].contains("g++ not found") && notes[0].contains("install g++"),
        "{stderr}"
    );
    assert_eq!(backend_of(&read_draws(&output).unwrap()), "cpu");
}

/// What transformed parameters and generated quantities print is shown on
/// stdout once per kept draw, each line naming its chain, in the chain's
/// draw order: the same lines on every backend and batching, and the
/// printed numbers are the draws the file holds. The model block's
/// `print` (run at every gradient evaluation) is not shown, and `bat run`
/// says so (W0201) instead of dropping it silently.
#[test]
fn prints_of_kept_draws_are_shown_and_the_model_blocks_are_announced() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let gq_print = NORMAL_MEAN.replace(
        "real y_new = normal_rng(mu, sigma); }",
        "real y_new = normal_rng(mu, sigma); print(\"y_new \", y_new); }",
    );
    assert_ne!(gq_print, NORMAL_MEAN);
    let tp_print = gq_print.replace(
        "model {",
        "transformed parameters { real s2 = square(sigma); print(\"s2 \", s2); }\nmodel {",
    );
    let model_print = NORMAL_MEAN.replace("model {", "model { print(\"mu \", mu);");
    let (chains, kept) = (3, 10);
    let run = |source: &str, name: &str, extra: &[&str]| {
        let model = write(dir.path(), "m.bat", source);
        let output = dir.path().join(format!("{name}.h5"));
        let args = [
            &[
                "run",
                s(&model),
                "--chains",
                "3",
                "--warmup",
                "30",
                "--samples",
                "20",
                "--thin",
                "2",
                "--seed",
                "5",
                "-o",
                s(&output),
            ][..],
            extra,
        ]
        .concat();
        let out = bat(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        // Each chain's lines, in order.
        let mut per_chain = vec![Vec::new(); chains];
        for line in text(&out.stdout).lines() {
            if let Some((chain, rest)) =
                line.strip_prefix("chain ").and_then(|l| l.split_once(": "))
            {
                per_chain[chain.parse::<usize>().unwrap()].push(rest.to_string());
            }
        }
        (per_chain, read_draws(&output).unwrap(), stderr)
    };
    let values = |file: &bat::output::DrawFile, name: &str| {
        let v = file.posterior.iter().find(|v| v.name == name).unwrap();
        v.values.clone()
    };
    let (cpu, file, stderr) = run(&gq_print, "cpu", &[]);
    assert!(!stderr.contains("W0201"), "{stderr}");
    let y_new = values(&file, "y_new");
    assert_eq!(y_new.len(), chains * kept);
    for (c, lines) in cpu.iter().enumerate() {
        assert_eq!(lines.len(), kept, "chain {c}: {lines:?}");
        for (d, line) in lines.iter().enumerate() {
            let printed: f64 = line.strip_prefix("y_new ").unwrap().parse().unwrap();
            let stored = y_new[c * kept + d];
            assert!(
                (printed - stored).abs() <= 1e-5 * stored.abs().max(1e-3),
                "chain {c} draw {d}: printed {printed}, stored {stored}"
            );
        }
    }
    for (name, extra) in [
        ("local", &["--batching", "local"][..]),
        ("threads1", &["--threads", "1"][..]),
        ("native", &["--backend", "native"][..]),
    ] {
        assert_eq!(run(&gq_print, name, extra).0, cpu, "{name}");
    }
    // Transformed parameters print before generated quantities, per draw.
    let (tp, file, _) = run(&tp_print, "tp", &[]);
    let s2 = values(&file, "s2");
    for (c, lines) in tp.iter().enumerate() {
        assert_eq!(lines.len(), 2 * kept, "chain {c}");
        for (d, pair) in lines.chunks(2).enumerate() {
            let printed: f64 = pair[0].strip_prefix("s2 ").unwrap().parse().unwrap();
            let stored = s2[c * kept + d];
            assert!(
                (printed - stored).abs() <= 1e-5 * stored.abs(),
                "{printed} {stored}"
            );
            assert_eq!(pair[1], cpu[c][d]);
        }
    }
    // The model block's print: announced, not shown, on either backend.
    for (name, extra) in [
        ("model", &[][..]),
        ("model_native", &["--backend", "native"][..]),
    ] {
        let (shown, _, stderr) = run(&model_print, name, extra);
        assert!(shown.iter().all(Vec::is_empty), "{name}: {shown:?}");
        assert!(
            stderr.contains("warning[W0201]") && stderr.contains("print(\"mu \", mu)"),
            "{name}: {stderr}"
        );
    }
}

/// `--algorithm chees` needs pooled warmup and runs no NUTS trees: the
/// flags that contradict it are refused in one line before anything runs.
#[test]
fn chees_refuses_stan_adaptation_and_tree_depth() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("o.h5");
    for (flags, says) in [
        (["--adapt", "stan"], "drop --adapt stan"),
        (["--max-depth", "8"], "drop --max-depth"),
    ] {
        let mut args = vec!["run", s(&model), "--algorithm", "chees", "-o", s(&output)];
        args.extend(flags);
        let out = bat(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: ") && err.contains(says), "{err}");
        assert!(!output.exists(), "nothing ran");
    }
}

/// `--metric dense` is adapted only by pooled warmup: with Stan's
/// adaptation it is refused in one line before anything runs.
#[test]
fn a_dense_metric_refuses_stan_adaptation() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("o.h5");
    for adapt in [&["--adapt", "stan"][..], &[]] {
        let mut args = vec!["run", s(&model), "--metric", "dense", "-o", s(&output)];
        args.extend(adapt);
        let out = bat(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("error: ") && err.contains("add --adapt pooled"),
            "{err}"
        );
        assert!(!output.exists(), "nothing ran");
    }
}

/// A dense-metric run's file holds every chain's d×d inverse metric
/// (chain, inv_metric_dim_0, inv_metric_dim_1), symmetric with a positive
/// diagonal and the same for every chain (pooled warmup's), and its
/// settings say `dense_e`; the run says the metric is dense.
#[test]
fn a_dense_metric_is_stored_as_a_matrix_per_chain() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let settings = [
        "--adapt",
        "pooled",
        "--metric",
        "dense",
        "--chains",
        "8",
        "--warmup",
        "60",
        "--samples",
        "20",
        "--seed",
        "5",
    ];
    let output = dir.path().join("o.h5");
    let (file, stderr) = run_ok(&model, &settings, &output);
    assert!(stderr.contains("dense metric"), "{stderr}");
    let settings: serde_json::Value =
        serde_json::from_str(&file.attributes["settings"]).expect("settings are JSON");
    assert_eq!(settings["metric"], "dense_e", "{settings}");
    let h5 = bat::output::open_hdf5(&output).unwrap();
    let dataset = h5.dataset("sample_stats/inv_metric").unwrap();
    assert_eq!(dataset.shape(), vec![8, 2, 2]);
    let metric: Vec<f64> = dataset.read_raw().unwrap();
    let first = &metric[..4];
    assert!(first[0] > 0.0 && first[3] > 0.0, "{first:?}");
    assert_eq!(first[1], first[2]);
    assert!(
        first[0] * first[3] > first[1] * first[1],
        "positive definite"
    );
    assert!(metric.chunks(4).all(|chain| chain == first), "{metric:?}");
}

/// A ChEES run's file says which algorithm ran and the kernel it adapted
/// (step size, trajectory length), and its draws say the step size too.
#[test]
fn chees_records_its_kernel_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let settings = [
        "--algorithm",
        "chees",
        "--chains",
        "8",
        "--warmup",
        "60",
        "--samples",
        "20",
        "--seed",
        "5",
    ];
    let (file, stderr) = run_ok(&model, &settings, &dir.path().join("o.h5"));
    let settings: serde_json::Value =
        serde_json::from_str(&file.attributes["settings"]).expect("settings are JSON");
    assert_eq!(settings["algorithm"], "chees", "{settings}");
    assert_eq!(settings["adapt"], "pooled", "{settings}");
    assert_eq!(settings["adapt_delta"], 0.651, "{settings}");
    let step_size = settings["step_size"].as_f64().expect("a step size");
    let length = settings["trajectory_length"]
        .as_f64()
        .expect("a trajectory length");
    assert!(length >= step_size && step_size > 0.0, "{settings}");
    assert!(stderr.contains("trajectory length"), "{stderr}");
    let stats = file.sample_stats.as_ref().expect("sample stats");
    let step_sizes = stats
        .iter()
        .find(|v| v.name == "step_size")
        .expect("step sizes");
    assert!(
        step_sizes.values.iter().all(|&x| x == step_size),
        "{stderr}"
    );
}
