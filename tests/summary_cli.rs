//! `bat summary` and `bat run` as commands: nested R-hat with
//! `--superchains`, stuck chains named in the summary and recorded in the
//! file, and no chain named stuck in healthy runs.

use bat::output::{Column, DrawWriter, GroupKind, RunMetadata, VarSpec};
use bat::summary::{ChainDraws, report_for_file};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// These tests run one at a time: a child process inherits the descriptors
/// (and HDF5's file locks) of the files other threads have open, and would
/// keep another test's file locked while it runs.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn bat(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(args)
        .output()
        .unwrap()
}

/// A file of `chains` chains of `draws` draws of one scalar `x` (given by
/// `x(chain, draw)`), with sample stats whose lp is `lp(chain, draw)` and
/// step size `step(chain)`.
fn write_chains(
    path: &Path,
    chains: usize,
    draws: usize,
    x: impl Fn(usize, usize) -> f64,
    lp: impl Fn(usize, usize) -> f64,
    step: impl Fn(usize) -> f64,
) -> Vec<f64> {
    let mut writer = DrawWriter::create(
        path,
        &RunMetadata::default(),
        &[VarSpec::real("x", &[])],
        chains,
        draws,
    )
    .unwrap();
    let cell = |f: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
        (0..chains * draws)
            .map(|i| f(i / draws, i % draws))
            .collect()
    };
    let xs = cell(&x);
    writer
        .write_block(
            GroupKind::Posterior,
            0..chains,
            0..draws,
            &[Column::F64(&xs)],
        )
        .unwrap();
    let n = chains * draws;
    let lps = cell(&lp);
    let steps = cell(&|c, _| step(c));
    let ones = vec![1.0; n];
    let depth = vec![2_i64; n];
    let no = vec![false; n];
    writer
        .write_block(
            GroupKind::SampleStats,
            0..chains,
            0..draws,
            &[
                Column::F64(&lps),
                Column::F64(&ones),
                Column::F64(&steps),
                Column::I64(&depth),
                Column::I64(&depth),
                Column::Bool(&no),
                Column::F64(&lps),
            ],
        )
        .unwrap();
    writer.finish().unwrap();
    xs
}

/// Scrambled values in [0, 1), different for every (chain, draw, salt).
fn scrambled(chain: usize, draw: usize, salt: usize) -> f64 {
    let i = chain * 1000 + draw + salt * 7;
    ((i * 7919 + salt * 104_729) % 1009) as f64 / 1009.0
}

#[test]
fn superchains_add_nested_r_hat_to_table_csv_and_json() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested.h5");
    // 7 chains: superchains of 3 are chains 0..3 and 3..6; chain 6 is left out.
    // Superchain 1 is shifted by 0.3.
    let x = write_chains(
        &path,
        7,
        50,
        |c, d| scrambled(c, d, 1) + if (3..6).contains(&c) { 0.3 } else { 0.0 },
        |c, d| -scrambled(c, d, 2),
        |_| 0.5,
    );
    let p = path.to_str().unwrap();
    let grouping = bat::summary::Superchains::of(2, 7).unwrap();
    let expected = bat::summary::nested_r_hat(ChainDraws::new(&x, 7, 50).unwrap(), grouping);
    // The formula by hand on the same draws.
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var =
        |v: &[f64], m: f64| v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / (v.len() - 1) as f64;
    let chain_means: Vec<f64> = (0..6).map(|c| mean(&x[c * 50..(c + 1) * 50])).collect();
    let chain_vars: Vec<f64> = (0..6)
        .map(|c| var(&x[c * 50..(c + 1) * 50], chain_means[c]))
        .collect();
    let super_means = [mean(&chain_means[..3]), mean(&chain_means[3..])];
    let within = ((var(&chain_means[..3], super_means[0]) + mean(&chain_vars[..3]))
        + (var(&chain_means[3..], super_means[1]) + mean(&chain_vars[3..])))
        / 2.0;
    let between = var(&super_means, mean(&super_means));
    let by_hand = (1.0 + between / within).sqrt();
    assert!(
        (expected - by_hand).abs() < 1e-12,
        "{expected} vs {by_hand}"
    );
    assert!(expected > 1.1, "a shifted superchain: {expected}");

    let csv = bat(&["summary", p, "--superchains", "2", "--format", "csv"]);
    assert!(
        csv.status.success(),
        "{}",
        String::from_utf8_lossy(&csv.stderr)
    );
    let csv = String::from_utf8(csv.stdout).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0].last(), Some(&"nR_hat"));
    assert_eq!(rows[0][9], "R_hat");
    let x_row = rows.iter().find(|r| r[0] == "x").unwrap();
    assert_eq!(x_row[10].parse::<f64>().unwrap(), expected);

    let table = String::from_utf8(bat(&["summary", p, "--superchains", "2"]).stdout).unwrap();
    assert!(table.contains("R_hat  nR_hat"), "{table}");
    assert!(
        table.contains("nR_hat: 2 superchains of 3 consecutive chains (chains 1-3 form the first); chain 7 fills no superchain and is left out of nR_hat."),
        "{table}"
    );

    let json = bat(&["summary", p, "--superchains", "2", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["quantities"][1]["name"], "x");
    assert_eq!(json["quantities"][1]["nested_r_hat"], expected);
    assert_eq!(json["superchains"]["chains_left_out"], 1);

    // Without the flag nothing about superchains appears.
    let plain = String::from_utf8(bat(&["summary", p]).stdout).unwrap();
    assert!(!plain.contains("nR_hat"), "{plain}");
    let plain_json = bat(&["summary", p, "--format", "json"]);
    let plain_json: serde_json::Value = serde_json::from_slice(&plain_json.stdout).unwrap();
    assert!(plain_json.get("superchains").is_none());
    assert!(plain_json["quantities"][1].get("nested_r_hat").is_none());
}

#[test]
fn a_superchain_count_out_of_range_is_an_error() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("four.h5");
    write_chains(
        &path,
        4,
        20,
        |c, d| scrambled(c, d, 1),
        |c, d| -scrambled(c, d, 2),
        |_| 0.5,
    );
    let p = path.to_str().unwrap();
    let one = bat(&["summary", p, "--superchains", "1"]);
    assert_eq!(one.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&one.stderr).contains("nested R-hat needs at least 2 superchains"),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let five = bat(&["summary", p, "--superchains", "5"]);
    let err = String::from_utf8_lossy(&five.stderr);
    assert_eq!(five.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot group the 4 chains of") && err.contains("into 5 superchains"),
        "{err}"
    );
}

#[test]
fn a_chain_stuck_far_below_the_others_is_named() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stuck.h5");
    // Chain index 6 (chain 7 in bat's messages) sits at lp ≈ −41,000 with a
    // step size of 1e-12, as a chain started at an explosive point of an
    // ARMA(1,1) model did; the others sit near 257.
    write_chains(
        &path,
        16,
        100,
        |c, d| scrambled(c, d, 1) + if c == 6 { 50.0 } else { 0.0 },
        |c, d| {
            if c == 6 {
                -41_000.0 + 1e-9 * d as f64
            } else {
                257.0 + 3.0 * scrambled(c, d, 2)
            }
        },
        |c| if c == 6 { 1e-12 } else { 0.3 },
    );
    let p = path.to_str().unwrap();
    let table = String::from_utf8(bat(&["summary", p]).stdout).unwrap();
    assert!(
        table.contains(
            "Warning: chain 7 is stuck: its median lp -41000.0 is far from the median chain's 258."
        ) && table.contains("its step size 1.00e-12 vs the median chain's 3.00e-1")
            && table.contains("idata.posterior.drop_sel(chain=[6])"),
        "{table}"
    );
    assert_eq!(table.matches("is stuck").count(), 1, "{table}");
    let json = bat(&["summary", p, "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let stuck = json["stuck_chains"].as_array().unwrap();
    assert_eq!(stuck.len(), 1);
    assert_eq!(stuck[0]["chain"], 6);

    // What `bat run` stores at the end of a run: 0-based indices, on the
    // root and on each group, replacing an earlier record.
    bat::output::record_stuck_chains(&path, &[3]).unwrap();
    bat::output::record_stuck_chains(&path, &[6]).unwrap();
    let file = hdf5::File::open(&path).unwrap();
    for location in [file.as_group().unwrap(), file.group("posterior").unwrap()] {
        let recorded: Vec<i64> = location.attr("stuck_chains").unwrap().read_raw().unwrap();
        assert_eq!(recorded, [6]);
    }
}

/// No false alarms on healthy runs of 16 chains: eight schools, centered
/// (its funnel makes chains differ) and non-centered, and a normal model,
/// with a short warmup too.
#[test]
fn healthy_runs_of_sixteen_chains_name_no_stuck_chain() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let normal = dir.path().join("normal.bat");
    std::fs::write(
        &normal,
        "parameters { real mu; real<lower=0> sigma; }\n\
         model { mu ~ normal(1, 2); sigma ~ lognormal(0, 1); }\n",
    )
    .unwrap();
    let centered = examples.join("eight_schools_centered.bat");
    let noncentered = examples.join("eight_schools_noncentered.bat");
    let runs: [(&Path, Option<&str>, &str); 4] = [
        (&centered, Some("eight_schools_centered.data.json"), "1000"),
        (&centered, Some("eight_schools_centered.data.json"), "150"),
        (
            &noncentered,
            Some("eight_schools_noncentered.data.json"),
            "1000",
        ),
        (&normal, None, "150"),
    ];
    for (i, (model, data, warmup)) in runs.into_iter().enumerate() {
        let output = dir.path().join(format!("run{i}.h5"));
        let mut args = vec![
            "run".to_string(),
            model.to_str().unwrap().into(),
            "--chains".into(),
            "16".into(),
            "--warmup".into(),
            warmup.into(),
            "--seed".into(),
            "5".into(),
            "-o".into(),
            output.to_str().unwrap().into(),
        ];
        if let Some(data) = data {
            args.extend([
                "--data".into(),
                examples.join(data).to_str().unwrap().into(),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = bat(&args);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let report = report_for_file(&output).unwrap();
        assert_eq!(report.n_chains, 16);
        // `bat run` recorded that it found none.
        let file = hdf5::File::open(&output).unwrap();
        let recorded: Vec<i64> = file.attr("stuck_chains").unwrap().read_raw().unwrap();
        assert!(recorded.is_empty(), "{recorded:?}");
        assert!(
            report.stuck_chains.is_empty(),
            "{}: {:?}",
            model.display(),
            report.stuck_chains
        );
    }
}
