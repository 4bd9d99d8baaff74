//! Writer/reader round trips, layout details and typed errors, without Python.

use bat::output::{
    Column, DrawWriter, GroupKind, OutputError, RunMetadata, SampleStatsBlock, VarSpec,
    WriterOptions, attached_dimension_names, read_draws,
};
use std::path::Path;

fn meta() -> RunMetadata {
    RunMetadata {
        model_name: "eight_schools".into(),
        model_source: "data { int J; }".into(),
        data_path: None,
        seed: u64::MAX,
        settings_json: "{}".into(),
    }
}

fn value(chain: usize, draw: usize, element: usize) -> f64 {
    chain as f64 * 1000.0 + draw as f64 + element as f64 / 10.0
}

/// Writes `x` (scalar) and `z` (2×3) for 2 chains, 25 draws in uneven blocks, with the
/// chains written separately.
fn write_sample(path: &Path) {
    let specs = [VarSpec::real("x", &[]), VarSpec::real("z", &[2, 3])];
    let mut writer = DrawWriter::create(path, &meta(), &specs, 2, 25).unwrap();
    for draws in [0..10, 10..11, 11..25] {
        for chain in 0..2 {
            let x: Vec<f64> = draws.clone().map(|d| value(chain, d, 0)).collect();
            let z: Vec<f64> = draws
                .clone()
                .flat_map(|d| (0..6).map(move |e| value(chain, d, e)))
                .collect();
            writer
                .write_block(
                    GroupKind::Posterior,
                    chain..chain + 1,
                    draws.clone(),
                    &[Column::F64(&x), Column::F64(&z)],
                )
                .unwrap();
        }
    }
    assert_eq!(writer.n_draws(GroupKind::Posterior), Some(25));
    assert_eq!(writer.n_draws(GroupKind::SampleStats), Some(0));
    writer.finish().unwrap();
}

#[test]
fn round_trip_preserves_values_and_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    write_sample(&path);
    let file = read_draws(&path).unwrap();
    let names: Vec<&str> = file.posterior.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["x", "z"],
        "variables in creation order, scales skipped"
    );
    let z = &file.posterior[1];
    assert_eq!((z.n_chains, z.n_draws, z.dims.clone()), (2, 25, vec![2, 3]));
    for chain in 0..2 {
        for draw in 0..25 {
            for element in 0..6 {
                let index = (chain * 25 + draw) * 6 + element;
                assert_eq!(z.values[index], value(chain, draw, element));
            }
        }
    }
    assert_eq!(file.attributes["model_name"], "eight_schools");
    assert_eq!(file.attributes["seed"], u64::MAX.to_string());
    assert_eq!(file.attributes["inference_library"], "bat");
    let stats = file.sample_stats.unwrap();
    let stat_names: Vec<&str> = stats.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        stat_names,
        [
            "lp",
            "acceptance_rate",
            "step_size",
            "tree_depth",
            "n_steps",
            "diverging",
            "energy"
        ]
    );
}

#[test]
fn every_axis_has_its_dimension_scale() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    write_sample(&path);
    let file = hdf5::File::open(&path).unwrap();
    let z = file.group("posterior").unwrap().dataset("z").unwrap();
    let names = attached_dimension_names(&z);
    let names: Vec<&str> = names.iter().map(|n| n.as_deref().unwrap()).collect();
    assert_eq!(names, ["chain", "draw", "z_dim_0", "z_dim_1"]);
    let draw = file.group("posterior").unwrap().dataset("draw").unwrap();
    assert_eq!(
        draw.read_raw::<i64>().unwrap(),
        (0..25).collect::<Vec<i64>>()
    );
    // The draw axis is unlimited so a run can keep appending.
    assert!(z.is_resizable());
    assert_eq!(z.chunk().unwrap()[2..], [2, 3]);
    // One chain per chunk: each chain's blocks are written on their own.
    assert_eq!(z.chunk().unwrap()[0], 1);
}

#[test]
fn unwritten_draws_of_a_lagging_chain_are_nan() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    let mut writer = DrawWriter::create(&path, &meta(), &[VarSpec::real("x", &[])], 2, 4).unwrap();
    writer
        .write_block(GroupKind::Posterior, 0..1, 0..4, &[Column::F64(&[1.0; 4])])
        .unwrap();
    writer.finish().unwrap();
    let x = &read_draws(&path).unwrap().posterior[0];
    assert_eq!(x.values[..4], [1.0; 4]);
    assert!(x.values[4..].iter().all(|v| v.is_nan()));
}

#[test]
fn booleans_are_int8_marked_bool() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    let mut writer = DrawWriter::create(&path, &meta(), &[], 1, 3).unwrap();
    let zeros = [0.0; 3];
    let stats = SampleStatsBlock {
        lp: &[-1.0, -2.0, -3.0],
        acceptance_rate: &zeros,
        step_size: &zeros,
        tree_depth: &[1, 2, 3],
        n_steps: &[1, 3, 7],
        diverging: &[true, false, true],
        energy: &zeros,
    };
    writer
        .write_sample_stats(false, 0..1, 0..3, &stats)
        .unwrap();
    writer.finish().unwrap();
    let file = hdf5::File::open(&path).unwrap();
    let diverging = file
        .group("sample_stats")
        .unwrap()
        .dataset("diverging")
        .unwrap();
    assert_eq!(diverging.read_raw::<i8>().unwrap(), [1, 0, 1]);
    let lp = file.group("sample_stats").unwrap().dataset("lp").unwrap();
    assert_eq!(lp.read_raw::<f64>().unwrap(), [-1.0, -2.0, -3.0]);
    assert_eq!(diverging.dtype().unwrap().size(), 1);
    let dtype: hdf5::types::VarLenUnicode = diverging.attr("dtype").unwrap().read_scalar().unwrap();
    assert_eq!(dtype.as_str(), "bool");
}

#[test]
fn warmup_groups_only_when_requested() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    let options = WriterOptions {
        n_chains: 1,
        n_draws_planned: 5,
        n_warmup_planned: Some(5),
    };
    let specs = [VarSpec::real("x", &[])];
    let mut writer = DrawWriter::create_with(&path, &meta(), &specs, &options).unwrap();
    writer
        .write_block(
            GroupKind::WarmupPosterior,
            0..1,
            0..2,
            &[Column::F64(&[3.0, 4.0])],
        )
        .unwrap();
    writer.finish().unwrap();
    let file = hdf5::File::open(&path).unwrap();
    let warmup = file
        .group("warmup_posterior")
        .unwrap()
        .dataset("x")
        .unwrap();
    assert_eq!(warmup.read_raw::<f64>().unwrap(), [3.0, 4.0]);

    let plain = dir.path().join("plain.h5");
    let mut writer = DrawWriter::create(&plain, &meta(), &specs, 1, 5).unwrap();
    let err = writer
        .write_block(
            GroupKind::WarmupPosterior,
            0..1,
            0..1,
            &[Column::F64(&[1.0])],
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("no `warmup_posterior` group"),
        "{err}"
    );
}

#[test]
fn bad_blocks_are_rejected_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("draws.h5");
    let specs = [VarSpec::real("x", &[2])];
    let mut writer = DrawWriter::create(&path, &meta(), &specs, 2, 5).unwrap();
    let too_short = writer
        .write_block(GroupKind::Posterior, 0..2, 0..1, &[Column::F64(&[1.0; 3])])
        .unwrap_err();
    assert!(
        too_short.to_string().contains("expected 4 values"),
        "{too_short}"
    );
    let wrong_type = writer
        .write_block(GroupKind::Posterior, 0..2, 0..1, &[Column::I64(&[1; 4])])
        .unwrap_err();
    assert!(wrong_type.to_string().contains("I64"), "{wrong_type}");
    let bad_chain = writer
        .write_block(GroupKind::Posterior, 1..3, 0..1, &[Column::F64(&[1.0; 4])])
        .unwrap_err();
    assert!(
        bad_chain.to_string().contains("out of range"),
        "{bad_chain}"
    );
    let missing_column = writer
        .write_block(GroupKind::Posterior, 0..2, 0..1, &[])
        .unwrap_err();
    assert!(
        missing_column
            .to_string()
            .contains("1 variables but 0 columns")
    );
    assert!(matches!(
        DrawWriter::create(dir.path().join("none.h5"), &meta(), &specs, 0, 5),
        Err(OutputError::InvalidWrite(_))
    ));
}

#[test]
fn reader_errors_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.h5");
    let err = read_draws(&missing).unwrap_err();
    assert!(matches!(err, OutputError::FileMissing(_)), "{err:?}");
    assert!(err.to_string().starts_with("file not found:"));

    let text = dir.path().join("draws.csv");
    std::fs::write(&text, "lp__,theta\n-7.1,0.2\n").unwrap();
    let err = read_draws(&text).unwrap_err();
    assert!(matches!(err, OutputError::NotHdf5(_)), "{err:?}");
    assert!(err.to_string().ends_with("is not an HDF5 file"));

    let empty = dir.path().join("empty.h5");
    hdf5::File::create(&empty)
        .unwrap()
        .create_group("other")
        .unwrap();
    let err = read_draws(&empty).unwrap_err();
    assert!(
        matches!(&err, OutputError::MissingGroup { group, .. } if group == "posterior"),
        "{err:?}"
    );
    assert!(err.to_string().contains("no `posterior` group"));

    // An HDF5 file cut short (a copy interrupted): the file is named.
    let bytes = std::fs::read(&empty).unwrap();
    let cut = dir.path().join("cut.h5");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = read_draws(&cut).unwrap_err();
    assert!(matches!(err, OutputError::Unreadable { .. }), "{err:?}");
    assert!(err.to_string().contains("cut.h5"), "{err}");
}

#[test]
fn thousands_of_variables_fit_one_group() {
    // Past ~4000 attachments a scale's REFERENCE_LIST outgrows compact attribute
    // storage; the writer must still attach every variable.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.h5");
    let specs: Vec<VarSpec> = (0..4500)
        .map(|i| VarSpec::real(format!("v{i}"), &[]))
        .collect();
    let mut writer = DrawWriter::create(&path, &meta(), &specs, 1, 2).unwrap();
    let values: Vec<Vec<f64>> = (0..4500).map(|i| vec![i as f64, -(i as f64)]).collect();
    let columns: Vec<Column> = values.iter().map(|v| Column::F64(v)).collect();
    writer
        .write_block(GroupKind::Posterior, 0..1, 0..2, &columns)
        .unwrap();
    writer.finish().unwrap();
    let file = read_draws(&path).unwrap();
    assert_eq!(file.posterior.len(), 4500);
    assert_eq!(file.posterior[4499].name, "v4499");
    assert_eq!(file.posterior[4499].values, [4499.0, -4499.0]);
}
