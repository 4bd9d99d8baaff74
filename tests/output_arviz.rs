//! Cross-checks with the Python ecosystem: files written by `DrawWriter` open with
//! `arviz.from_netcdf` and `xarray.open_dataset` (h5netcdf and netCDF4 engines), and
//! our summary statistics agree with ArviZ's to 1e-6 relative.
//!
//! Needs the venv made by `scripts/setup.sh` (scripts/setup.d/30-python-venv.sh);
//! without it these tests fail with instructions rather than skip.

#[path = "support/run.rs"]
mod support;

use bat::output::{Column, DrawWriter, GroupKind, RunMetadata, VarSpec, WriterOptions};
use bat::summary::{QuantitySummary, report_for_file};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::venv_python;

const RELATIVE_TOLERANCE: f64 = 1e-6;

/// Tests here run one at a time: HDF5 opens files without close-on-exec, so a child
/// process spawned by one test inherits another test's open file and its lock, and
/// the long-lived writer child would make Python's open fail with "unable to lock".
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn arviz_report(path: &Path, extra: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/python/arviz_check.py");
    let output = Command::new(venv_python())
        .arg(script)
        .arg(path)
        .args(extra)
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "arviz_check.py failed on {}:\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("arviz_check.py prints JSON")
}

/// Deterministic pseudo-random numbers (SplitMix64) so the data is reproducible.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Synthetic draws, chain-major `[chain][draw][element]`, for one variable.
fn synthetic(rng: &mut Rng, chains: usize, draws: usize, elements: usize, kind: &str) -> Vec<f64> {
    let mut out = vec![0.0; chains * draws * elements];
    for c in 0..chains {
        for e in 0..elements {
            let mut x = 0.0;
            for d in 0..draws {
                let value = match kind {
                    // AR(1) with φ growing by element: known autocorrelation.
                    "ar1" => {
                        let phi = 0.3 + 0.3 * e as f64;
                        x = phi * x + (1.0 - phi * phi).sqrt() * rng.normal();
                        x
                    }
                    // Each chain centred elsewhere: R-hat well above 1.
                    "shifted" => c as f64 * 0.5 + rng.normal(),
                    // Cauchy: heavy tails, where rank normalization matters.
                    "heavy" => (std::f64::consts::PI * (rng.uniform() - 0.5)).tan(),
                    // Rounded normals: many ties in the ranks.
                    "ties" => (2.0 * rng.normal()).round(),
                    other => panic!("unknown kind {other}"),
                };
                out[(c * draws + d) * elements + e] = value;
            }
        }
    }
    out
}

struct Fixture {
    specs: Vec<VarSpec>,
    posterior: Vec<Vec<f64>>,
    /// The integer variable `count`, stored as int64.
    counts: Vec<i64>,
    tree_depth: Vec<i64>,
    diverging: Vec<bool>,
    n_chains: usize,
    n_draws: usize,
}

fn fixture(n_chains: usize, n_draws: usize) -> Fixture {
    let mut rng = Rng(20260101);
    let specs = vec![
        VarSpec::real("mu", &[]),
        VarSpec::real("theta", &[3]),
        VarSpec::real("tau", &[]),
        VarSpec::real("Sigma", &[2, 2]),
        VarSpec::real("y_rep", &[]),
        VarSpec::int("count", &[]),
    ];
    let posterior = vec![
        synthetic(&mut rng, n_chains, n_draws, 1, "shifted"),
        synthetic(&mut rng, n_chains, n_draws, 3, "ar1"),
        synthetic(&mut rng, n_chains, n_draws, 1, "heavy"),
        synthetic(&mut rng, n_chains, n_draws, 4, "ar1"),
        synthetic(&mut rng, n_chains, n_draws, 1, "ties"),
    ];
    let counts = synthetic(&mut rng, n_chains, n_draws, 1, "ties")
        .into_iter()
        .map(|v| v as i64)
        .collect();
    let total = n_chains * n_draws;
    let tree_depth = (0..total).map(|i| (i % 11) as i64).collect();
    let diverging = (0..total).map(|i| i % 97 == 0).collect();
    Fixture {
        specs,
        posterior,
        counts,
        tree_depth,
        diverging,
        n_chains,
        n_draws,
    }
}

/// Slices `values` (`[chain][draw][element]` over all draws) to a draw block.
fn block(values: &[f64], f: &Fixture, elements: usize, draws: std::ops::Range<usize>) -> Vec<f64> {
    let mut out = Vec::new();
    for c in 0..f.n_chains {
        let start = (c * f.n_draws + draws.start) * elements;
        let end = (c * f.n_draws + draws.end) * elements;
        out.extend_from_slice(&values[start..end]);
    }
    out
}

fn block_of<T: Copy>(values: &[T], f: &Fixture, draws: std::ops::Range<usize>) -> Vec<T> {
    (0..f.n_chains)
        .flat_map(|c| values[c * f.n_draws + draws.start..c * f.n_draws + draws.end].to_vec())
        .collect()
}

/// Writes fixture `f` in blocks of `block_size` draws, each chain's
/// inverse metric a 5×5 matrix if `dense`, else its diagonal.
fn write_fixture(path: &Path, f: &Fixture, block_size: usize, dense: bool) {
    let meta = RunMetadata {
        model_name: "synthetic".into(),
        model_source: "parameters { real mu; }".into(),
        data_path: Some("data.json".into()),
        seed: 42,
        settings_json: r#"{"max_depth":10,"adapt_delta":0.8}"#.into(),
    };
    let options = WriterOptions {
        n_chains: f.n_chains,
        n_draws_planned: f.n_draws,
        n_warmup_planned: Some(20),
    };
    let mut writer = DrawWriter::create_with(path, &meta, &f.specs, &options).unwrap();
    let mut start = 0;
    while start < f.n_draws {
        let end = (start + block_size).min(f.n_draws);
        let blocks: Vec<Vec<f64>> = f
            .specs
            .iter()
            .zip(&f.posterior)
            .map(|(spec, values)| block(values, f, spec.elements_per_draw(), start..end))
            .collect();
        let counts = block_of(&f.counts, f, start..end);
        let mut columns: Vec<Column> = blocks.iter().map(|b| Column::F64(b)).collect();
        columns.push(Column::I64(&counts));
        writer
            .write_block(GroupKind::Posterior, 0..f.n_chains, start..end, &columns)
            .unwrap();
        let n = f.n_chains * (end - start);
        let real = vec![0.5; n];
        let depth = block_of(&f.tree_depth, f, start..end);
        let steps: Vec<i64> = depth.iter().map(|d| (1 << d) - 1).collect();
        let diverging = block_of(&f.diverging, f, start..end);
        let lp = block(&f.posterior[0], f, 1, start..end);
        let stats = [
            Column::F64(&lp),
            Column::F64(&real),
            Column::F64(&real),
            Column::I64(&depth),
            Column::I64(&steps),
            Column::Bool(&diverging),
            Column::F64(&real),
        ];
        writer
            .write_block(GroupKind::SampleStats, 0..f.n_chains, start..end, &stats)
            .unwrap();
        start = end;
    }
    let step_sizes: Vec<f64> = (0..f.n_chains).map(|c| 0.1 * (c + 1) as f64).collect();
    let per_chain: Vec<f64> = if dense {
        (0..25)
            .map(|k| match (k / 5, k % 5) {
                (i, j) if i == j => 1.0,
                (0, 1) | (1, 0) => 0.5,
                _ => 0.0,
            })
            .collect()
    } else {
        vec![1.0; 5]
    };
    writer
        .write_adaptation(&step_sizes, &per_chain.repeat(f.n_chains), dense)
        .unwrap();
    writer.finish().unwrap();
}

/// Asserts agreement to [`RELATIVE_TOLERANCE`]; returns the relative difference.
fn assert_close(ours: f64, theirs: &Value, what: &str) -> f64 {
    match theirs.as_f64() {
        None => {
            assert!(ours.is_nan(), "{what}: ArviZ gives NaN, we give {ours}");
            0.0
        }
        Some(theirs) => {
            let relative = (ours - theirs).abs() / theirs.abs().max(1e-300);
            assert!(
                relative <= RELATIVE_TOLERANCE,
                "{what}: ours {ours} vs ArviZ {theirs}"
            );
            relative
        }
    }
}

#[test]
fn summaries_match_arviz_and_file_opens_everywhere() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    let f = fixture(4, 500);
    write_fixture(&path, &f, 64, false);

    let arviz = arviz_report(&path, &[]);
    let report = report_for_file(&path).unwrap();
    let stats = arviz["stats"].as_object().unwrap();
    // lp__ comes from sample_stats; every posterior element is compared.
    let ours: Vec<&QuantitySummary> = report
        .quantities
        .iter()
        .filter(|q| q.name != "lp__")
        .collect();
    assert_eq!(ours.len(), stats.len(), "quantity count");
    assert_eq!(ours.len(), 1 + 3 + 1 + 4 + 1 + 1);
    assert_eq!(arviz["posterior"]["dtypes"]["count"], "int64");
    let mut worst: f64 = 0.0;
    for q in ours {
        let theirs = &stats[&q.name];
        let checks = [
            (q.r_hat, "r_hat"),
            (q.ess_bulk, "ess_bulk"),
            (q.ess_tail, "ess_tail"),
            (q.mcse, "mcse"),
            (q.mean, "mean"),
            (q.sd, "sd"),
            (q.q5, "q5"),
            (q.q50, "q50"),
            (q.q95, "q95"),
        ];
        for (ours, key) in checks {
            let relative = assert_close(ours, &theirs[key], &format!("{} {key}", q.name));
            worst = worst.max(relative);
        }
    }
    eprintln!("largest relative difference from ArviZ/numpy: {worst:e}");
    // The shifted-mean variable must be flagged by both.
    assert!(stats["mu"]["r_hat"].as_f64().unwrap() > 1.1);

    // Layout as ArviZ sees it.
    let groups: Vec<&str> = arviz["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    for group in [
        "posterior",
        "sample_stats",
        "warmup_posterior",
        "warmup_sample_stats",
    ] {
        assert!(groups.contains(&group), "{group} missing from {groups:?}");
    }
    let posterior = &arviz["posterior"];
    assert_eq!(
        posterior["dims"]["Sigma"],
        serde_json::json!(["chain", "draw", "Sigma_dim_0", "Sigma_dim_1"])
    );
    assert_eq!(posterior["sizes"]["draw"], 500);
    assert_eq!(posterior["sizes"]["chain"], 4);
    assert_eq!(
        posterior["coords"]["draw"].as_array().unwrap().len(),
        500,
        "draw coordinate"
    );
    assert_eq!(posterior["coords"]["draw"][499], 499);
    let sample_stats = &arviz["sample_stats"];
    assert_eq!(sample_stats["dtypes"]["diverging"], "bool");
    assert_eq!(sample_stats["dtypes"]["tree_depth"], "int64");
    assert_eq!(
        sample_stats["dims"]["inv_metric"],
        serde_json::json!(["chain", "inv_metric_dim_0"])
    );
    let attrs = &arviz["attrs"];
    assert_eq!(attrs["model_name"], "synthetic");
    assert_eq!(attrs["seed"], "42");
    assert_eq!(attrs["data_path"], "data.json");
    assert!(attrs["created_at"].as_str().unwrap().starts_with("20"));

    // Sampler warnings read from sample_stats: i % 97 == 0 diverges, depth 10 saturates.
    let sampler = report.sampler.unwrap();
    assert_eq!(sampler.transitions, 2000);
    assert_eq!(
        sampler.divergences,
        (0..2000).filter(|i| i % 97 == 0).count()
    );
    assert_eq!(
        sampler.tree_depth_saturated,
        (0..2000).filter(|i| i % 11 == 10).count()
    );
}

/// A dense metric's (chain, d, d) dataset opens in ArviZ and xarray
/// (both engines) with its dimensions named.
#[test]
fn a_dense_metric_opens_in_arviz() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    let f = fixture(3, 20);
    write_fixture(&path, &f, 8, true);
    let arviz = arviz_report(&path, &[]);
    let sample_stats = &arviz["sample_stats"];
    assert_eq!(
        sample_stats["dims"]["inv_metric"],
        serde_json::json!(["chain", "inv_metric_dim_0", "inv_metric_dim_1"])
    );
    assert_eq!(sample_stats["sizes"]["inv_metric_dim_0"], 5);
    assert_eq!(sample_stats["sizes"]["inv_metric_dim_1"], 5);
}

#[test]
fn single_chain_and_short_chains_match_arviz() {
    let _serial = serial();
    for (chains, draws) in [(1, 200), (2, 5), (3, 3)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("draws.h5");
        let f = fixture(chains, draws);
        write_fixture(&path, &f, 7, false);
        let arviz = arviz_report(&path, &[]);
        let report = report_for_file(&path).unwrap();
        for q in report.quantities.iter().filter(|q| q.name != "lp__") {
            let theirs = &arviz["stats"][&q.name];
            let what = format!("{chains}×{draws} {}", q.name);
            assert_close(q.r_hat, &theirs["r_hat"], &format!("{what} r_hat"));
            assert_close(q.ess_bulk, &theirs["ess_bulk"], &format!("{what} ess_bulk"));
            assert_close(q.ess_tail, &theirs["ess_tail"], &format!("{what} ess_tail"));
            assert_close(q.mcse, &theirs["mcse"], &format!("{what} mcse"));
        }
    }
}

/// Writes blocks forever (as a sampler would) until killed; run only as the child of
/// `killed_writer_leaves_readable_file`.
#[test]
#[ignore = "helper process for killed_writer_leaves_readable_file"]
fn kill_child_writer() {
    let Some(path) = std::env::var_os("BAT_KILL_CHILD_PATH") else {
        return;
    };
    let n_chains = 3;
    let block_size = 10;
    let specs = [VarSpec::real("x", &[]), VarSpec::real("v", &[2])];
    let mut writer =
        DrawWriter::create(&path, &RunMetadata::default(), &specs, n_chains, 1000).unwrap();
    for block_index in 0.. {
        let draws = block_index * block_size..(block_index + 1) * block_size;
        let mut x = Vec::new();
        let mut v = Vec::new();
        for c in 0..n_chains {
            for d in draws.clone() {
                x.push((c * 100_000 + d) as f64);
                v.extend([(c * 100_000 + d) as f64 + 0.25, -((c * 100_000 + d) as f64)]);
            }
        }
        writer
            .write_block(
                GroupKind::Posterior,
                0..n_chains,
                draws.clone(),
                &[Column::F64(&x), Column::F64(&v)],
            )
            .unwrap();
        // No pause: the kill should land in the middle of writing a block.
        println!("flushed {}", draws.end);
    }
}

#[test]
fn killed_writer_leaves_readable_file() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.h5");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["kill_child_writer", "--exact", "--ignored", "--nocapture"])
        .env("BAT_KILL_CHILD_PATH", &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = Instant::now();
    let mut flushed = 0;
    while flushed < 200 {
        let line = lines.next().expect("child still writing").unwrap();
        if let Some(n) = line.strip_prefix("flushed ") {
            flushed = n.trim().parse().unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "child too slow"
        );
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no close
    child.wait().unwrap();

    let arviz = arviz_report(&path, &["--values"]);
    let posterior = &arviz["posterior"];
    let n_draws = posterior["sizes"]["draw"].as_u64().unwrap() as usize;
    assert!(n_draws >= flushed, "{n_draws} draws < {flushed} flushed");
    assert_eq!(n_draws % 10, 0, "only whole blocks are visible");
    let x = posterior["values"]["x"].as_array().unwrap();
    let v = posterior["values"]["v"].as_array().unwrap();
    assert_eq!(x.len(), 3 * n_draws);
    for c in 0..3 {
        for d in 0..n_draws {
            let expected = (c * 100_000 + d) as f64;
            assert_eq!(x[c * n_draws + d].as_f64(), Some(expected), "x[{c},{d}]");
            assert_eq!(v[(c * n_draws + d) * 2].as_f64(), Some(expected + 0.25));
            assert_eq!(v[(c * n_draws + d) * 2 + 1].as_f64(), Some(-expected));
        }
    }
    // And our own reader agrees.
    let report = report_for_file(&path).unwrap();
    assert_eq!(report.n_draws, n_draws);
    assert_eq!(report.quantities.len(), 3);
}

#[test]
fn reads_files_written_by_arviz_itself() {
    let _serial = serial();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/python/make_arviz_file.py");
    for engine in ["netcdf4", "h5netcdf"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arviz.nc");
        let status = Command::new(venv_python())
            .arg(&script)
            .arg(&path)
            .arg(engine)
            .status()
            .expect("run python");
        assert!(status.success(), "make_arviz_file.py failed ({engine})");
        let report = report_for_file(&path).unwrap();
        let arviz = arviz_report(&path, &[]);
        let stats = arviz["stats"].as_object().unwrap();
        let ours: Vec<&QuantitySummary> = report
            .quantities
            .iter()
            .filter(|q| q.name != "lp__")
            .collect();
        let names: Vec<&str> = ours.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mu", "theta[1]", "theta[2]", "theta[3]", "L[1,1]", "L[1,2]", "L[2,1]", "L[2,2]"
            ],
            "{engine}"
        );
        for q in ours {
            let theirs = &stats[&q.name];
            let what = format!("{engine} {}", q.name);
            assert_close(q.r_hat, &theirs["r_hat"], &format!("{what} r_hat"));
            assert_close(q.ess_bulk, &theirs["ess_bulk"], &format!("{what} ess_bulk"));
            assert_close(q.ess_tail, &theirs["ess_tail"], &format!("{what} ess_tail"));
            assert_close(q.mcse, &theirs["mcse"], &format!("{what} mcse"));
        }
        assert_eq!(report.quantities[0].name, "lp__");
        let sampler = report.sampler.unwrap();
        assert_eq!(sampler.transitions, 1200);
        assert!(
            sampler.divergences > 0 && sampler.divergences < 40,
            "{engine}"
        );
    }
}
