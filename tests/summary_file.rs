//! `summarize_file`: the library entry behind `bat summary FILE`.

use bat::output::{Column, DrawWriter, GroupKind, OutputError, RunMetadata, VarSpec};
use bat::summary::{ChainDraws, Format, QuantitySummary, report_for_file, summarize_file};
use std::path::Path;

const CHAINS: usize = 4;
const DRAWS: usize = 100;

/// Deterministic, well-mixed values: a scrambled sequence per chain.
fn draws(seed: usize) -> Vec<f64> {
    (0..CHAINS * DRAWS)
        .map(|i| (((i + seed) * 7919 + seed * 104_729) % 1009) as f64 / 1009.0)
        .collect()
}

fn write_run(path: &Path, diverging_every: usize, max_depth_setting: u32) {
    let meta = RunMetadata {
        model_name: "m".into(),
        settings_json: format!(r#"{{"max_depth":{max_depth_setting}}}"#),
        ..Default::default()
    };
    let specs = [VarSpec::real("alpha", &[]), VarSpec::real("beta", &[2])];
    let mut writer = DrawWriter::create(path, &meta, &specs, CHAINS, DRAWS).unwrap();
    let alpha = draws(1);
    let beta: Vec<f64> = draws(2)
        .into_iter()
        .zip(draws(3))
        .flat_map(|(a, b)| [a, b])
        .collect();
    writer
        .write_block(
            GroupKind::Posterior,
            0..CHAINS,
            0..DRAWS,
            &[Column::F64(&alpha), Column::F64(&beta)],
        )
        .unwrap();
    let n = CHAINS * DRAWS;
    let lp: Vec<f64> = draws(4).iter().map(|v| -v).collect();
    let depth: Vec<i64> = (0..n).map(|i| (i % 6) as i64).collect();
    let diverging: Vec<bool> = (0..n).map(|i| i % diverging_every == 0).collect();
    let zeros = vec![0.0; n];
    writer
        .write_block(
            GroupKind::SampleStats,
            0..CHAINS,
            0..DRAWS,
            &[
                Column::F64(&lp),
                Column::F64(&zeros),
                Column::F64(&zeros),
                Column::I64(&depth),
                Column::I64(&depth),
                Column::Bool(&diverging),
                Column::F64(&zeros),
            ],
        )
        .unwrap();
    writer.finish().unwrap();
}

#[test]
fn report_lists_lp_then_every_element_with_direct_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.h5");
    write_run(&path, 50, 5);
    let report = report_for_file(&path).unwrap();
    let names: Vec<&str> = report.quantities.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["lp__", "alpha", "beta[1]", "beta[2]"]);
    // Each row equals the statistics of that element's draws computed directly.
    let beta2 = draws(3);
    let expected =
        QuantitySummary::compute("beta[2]", ChainDraws::new(&beta2, CHAINS, DRAWS).unwrap());
    assert_eq!(report.quantities[3], expected);
    let sampler = report.sampler.unwrap();
    assert_eq!(sampler.divergences, CHAINS * DRAWS / 50);
    assert_eq!(
        sampler.max_tree_depth, 5,
        "read from the settings attribute"
    );
    assert_eq!(
        sampler.tree_depth_saturated,
        (0..400).filter(|i| i % 6 == 5).count()
    );
}

#[test]
fn table_csv_and_json_render_the_same_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.h5");
    write_run(&path, 50, 10);
    let report = report_for_file(&path).unwrap();

    let table = summarize_file(&path, Format::Table).unwrap();
    assert!(
        table.starts_with("4 chains: each with 100 draws (400 total)."),
        "{table}"
    );
    assert!(table.contains("ESS_bulk  ESS_tail  R_hat"), "{table}");
    assert!(table.contains("\nbeta[2] "), "{table}");
    assert!(table.contains("Warning: 8 of 400 transitions (2.0%) ended with a divergence"));
    assert!(
        !table.contains("maximum tree depth"),
        "depth 5 < 10 never saturates"
    );

    let csv = summarize_file(&path, Format::Csv).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 1 + report.quantities.len());
    for (row, q) in rows[1..].iter().zip(&report.quantities) {
        assert_eq!(row[0], q.name);
        assert_eq!(row[1].parse::<f64>().unwrap(), q.mean);
        assert_eq!(row[9].parse::<f64>().unwrap(), q.r_hat);
    }

    let json: serde_json::Value =
        serde_json::from_str(&summarize_file(&path, Format::Json).unwrap()).unwrap();
    assert_eq!(json["quantities"][2]["name"], "beta[1]");
    assert_eq!(
        json["quantities"][2]["ess_bulk"],
        report.quantities[2].ess_bulk
    );
    assert_eq!(json["sampler"]["divergences"], 8);
}

#[test]
fn errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let err = summarize_file(dir.path().join("nope.h5"), Format::Table).unwrap_err();
    assert!(matches!(err, OutputError::FileMissing(_)));
    let not_hdf5 = dir.path().join("notes.txt");
    std::fs::write(&not_hdf5, "hello").unwrap();
    let err = summarize_file(&not_hdf5, Format::Table).unwrap_err();
    assert!(matches!(err, OutputError::NotHdf5(_)));
    let empty = dir.path().join("empty.h5");
    DrawWriter::create(&empty, &RunMetadata::default(), &[], 1, 1)
        .unwrap()
        .finish()
        .unwrap();
    let err = summarize_file(&empty, Format::Table).unwrap_err();
    assert!(matches!(err, OutputError::NoDraws { .. }), "{err:?}");
    // Variables declared but no draw flushed yet (a run killed early).
    let unwritten = dir.path().join("unwritten.h5");
    DrawWriter::create(
        &unwritten,
        &RunMetadata::default(),
        &[VarSpec::real("a", &[])],
        2,
        9,
    )
    .unwrap()
    .finish()
    .unwrap();
    let err = summarize_file(&unwritten, Format::Table).unwrap_err();
    assert!(
        err.to_string().contains("has no draws in `posterior`"),
        "{err}"
    );
}

/// A file on which libhdf5 itself crashes (found by the draws-file
/// fuzzer: a string's length and its heap object disagree): `bat summary`
/// says the file is damaged and exits 1 instead of dying of the signal.
#[test]
fn a_file_that_crashes_libhdf5_is_an_error() {
    let crasher = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/libhdf5-crashers/vlen-length-crash-a8edf39b");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bat"))
        .arg("summary")
        .arg(&crasher)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {stderr}", out.status);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("vlen-length-crash-a8edf39b"),
        "{stderr}"
    );
}
