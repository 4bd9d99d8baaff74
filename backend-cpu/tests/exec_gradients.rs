//! Log-density gradients of every posteriordb model and example through
//! both executors: each lane's log density and gradient (or error) at its
//! own random θ equals the structured interpreter's
//! (`Model::log_density_gradient`) exactly — through the per-lane and the
//! column API (`log_density_gradient_columns`) — bit for bit, with and
//! without the batched shared-matrix product — for Z = 7 (and 1, 64 with
//! BAT_FULL_SWEEP=1; on two examples always). Models the
//! AD cannot differentiate yet are those of
//! `runtime/tests/ad_gradients_exceptions.txt`, and only those.

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig, MostWaiting};
use language::data::DataFile;
use runtime::{Model, Rng, RuntimeError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn corpus() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/posteriordb");
    assert!(dir.is_dir(), "test corpus missing at {}", dir.display());
    dir
}

/// (name, model, data) of every posteriordb model and example.
fn cases() -> Vec<(String, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("model.stan").is_file() {
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            out.push((name, dir.join("model.stan"), dir.join("data.json")));
        }
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    for entry in std::fs::read_dir(examples).unwrap() {
        let path = entry.unwrap().path();
        let data = path.with_extension("data.json");
        if path.extension().is_some_and(|e| e == "bat") && data.is_file() {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            out.push((format!("examples/{stem}"), path, data));
        }
    }
    out.sort();
    out
}

fn ad_exceptions() -> Vec<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/tests/ad_gradients_exceptions.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split(':').next().unwrap().trim().to_string())
        .collect()
}

/// Random inits as Stan's: uniform(−2, 2) per coordinate, per lane.
fn thetas(n: usize, z: usize, seed: u64) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(seed, l as u32, 0);
            (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect()
}

fn same(a: f64, b: f64, rel: f64) -> bool {
    a.to_bits() == b.to_bits()
        || (a.is_nan() && b.is_nan())
        || (rel > 0.0 && (a - b).abs() <= rel * a.abs().max(b.abs()))
}

fn same_error(a: &RuntimeError, b: &RuntimeError) -> bool {
    a.kind == b.kind && a.message == b.message && a.span == b.span
}

fn configs() -> Vec<(ExecConfig, f64)> {
    let mut out = Vec::new();
    for batching in [Batching::Local, Batching::ProgramCounter] {
        out.push((
            ExecConfig {
                batching,
                gemm: false,
                ..ExecConfig::default()
            },
            0.0,
        ));
        out.push((
            ExecConfig {
                batching,
                gemm: true,
                gather_below: 0.9,
                choice: Arc::new(MostWaiting),
                ..ExecConfig::default()
            },
            0.0,
        ));
    }
    out
}

fn check(name: &str, model: &Path, data: &Path, sizes: &[usize]) -> Result<(), String> {
    let source = std::fs::read_to_string(model).map_err(|e| e.to_string())?;
    let program = match language::compile_model(&source, name) {
        (Some(p), _) => p,
        (None, ds) => return Err(format!("does not compile: {}", ds[0].message)),
    };
    let data =
        DataFile::parse(&std::fs::read_to_string(data).unwrap()).map_err(|e| e.to_string())?;
    let g = language::ad::gradient(&program).map_err(|ds| format!("AD: {}", ds[0].message))?;
    let cfg = language::batch::lower_gradient(&g).map_err(|ds| format!("{ds:?}"))?;
    for (config, rel) in configs() {
        let model = Model::new(&program, &data).map_err(|e| e.to_string())?;
        let batched = BatchedModel::new(cfg.clone(), model, config.clone())
            .map_err(|e| format!("setup: {e}"))?;
        let model = batched.model();
        let n = model.num_unconstrained();
        for &z in sizes {
            let th = thetas(n, z, 7 + z as u64);
            for jacobian in [true, false] {
                let ours = batched
                    .log_density_gradient(&th, jacobian)
                    .map_err(|e| format!("executor: {e}"))?;
                // The same through the column API (θ and gradient as
                // `[coordinate][lane]`), back to one result per lane.
                let mut columns = vec![0.0; n * z];
                for (l, t) in th.iter().enumerate() {
                    for (k, x) in t.iter().enumerate() {
                        columns[k * z + l] = *x;
                    }
                }
                let by_columns = batched
                    .log_density_gradient_columns(&columns, z, jacobian)
                    .map_err(|e| format!("executor (columns): {e}"))?;
                let by_columns = (0..z).map(|l| match &by_columns.errors[l] {
                    Some(e) => Err(e.clone()),
                    None => Ok((
                        by_columns.lp[l],
                        (0..n).map(|k| by_columns.gradient[k * z + l]).collect(),
                    )),
                });
                let lanes = ours
                    .iter()
                    .cloned()
                    .enumerate()
                    .map(|(l, r)| ("lanes", l, r));
                let columns = by_columns.enumerate().map(|(l, r)| ("columns", l, r));
                for (api, l, got) in lanes.chain(columns) {
                    let got = &got;
                    let truth = model.log_density_gradient(&g, &th[l], jacobian);
                    let at = format!("{api}: Z={z} lane {l} jacobian={jacobian} {config:?}");
                    match (got, &truth) {
                        (Ok((lp, grad)), Ok((lp0, grad0))) => {
                            if !same(*lp, *lp0, rel) {
                                return Err(format!("{at}: lp {lp} != {lp0}"));
                            }
                            for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                                if !same(*a, *b, rel) {
                                    return Err(format!("{at}: gradient[{k}] {a} != {b}"));
                                }
                            }
                        }
                        (Err(a), Err(b)) if same_error(a, b) => {}
                        (a, b) => return Err(format!("{at}: {a:?} but the interpreter: {b:?}")),
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn every_gradient_program_matches_the_interpreter_lane_by_lane() {
    let exceptions = ad_exceptions();
    let mut failures = Vec::new();
    let mut checked = 0;
    let full = std::env::var("BAT_FULL_SWEEP").is_ok();
    for (name, model, data) in cases() {
        let sizes: &[usize] = if full { &[1, 7, 64] } else { &[7] };
        match check(&name, &model, &data, sizes) {
            Ok(()) if exceptions.contains(&name) => {
                failures.push(format!("{name}: listed as an AD exception but runs"))
            }
            Ok(()) => checked += 1,
            Err(_) if exceptions.contains(&name) => {}
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!("{checked} gradient programs match lane by lane");
    assert!(checked >= 20, "only {checked} models checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Z = 1 and 64 on a few models in the default run (all models with
/// BAT_FULL_SWEEP=1 above).
#[test]
fn wide_batches_match_the_interpreter() {
    for name in ["eight_schools_noncentered", "hierarchical_radon"] {
        let model = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/{name}.bat"));
        let data = model.with_extension("data.json");
        check(name, &model, &data, &[1, 64]).unwrap();
    }
}

/// A lane whose θ has the wrong length fails with a message naming both
/// lengths; the other lanes of its batch are the interpreter's. The column
/// API refuses a θ of the wrong size as a whole.
#[test]
fn a_lane_with_the_wrong_number_of_parameters_fails_alone() {
    let source = "parameters { real a; real b; }\nmodel { a ~ normal(0, 1); b ~ normal(a, 2); }\n";
    let program = match language::compile_model(source, "two") {
        (Some(p), _) => p,
        (None, ds) => panic!("does not compile: {}", ds[0].message),
    };
    let data = DataFile::parse("{}").unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    let thetas = vec![vec![0.3, -0.2], vec![1.0], vec![-0.7, 0.4]];
    for (config, _) in configs() {
        let model = Model::new(&program, &data).unwrap();
        let batched = BatchedModel::new(cfg.clone(), model, config.clone()).unwrap();
        let got = batched.log_density_gradient(&thetas, true).unwrap();
        let err = got[1].as_ref().unwrap_err();
        assert!(
            err.message
                .contains("expected 2 unconstrained parameters, found 1"),
            "{config:?}: {}",
            err.message
        );
        for l in [0, 2] {
            let (lp, grad) = got[l].as_ref().unwrap();
            let (lp0, grad0) = batched
                .model()
                .log_density_gradient(&g, &thetas[l], true)
                .unwrap();
            assert_eq!(lp.to_bits(), lp0.to_bits(), "{config:?} lane {l}");
            assert_eq!(grad, &grad0, "{config:?} lane {l}");
        }
        let wrong = batched.log_density_gradient_columns(&[0.0; 5], 3, true);
        assert!(wrong.is_err(), "{config:?}: 5 values for 3 lanes of 2");
    }
}

/// The lane slots a gradient's blocks ran over and the useful ones
/// (`GradientValues::work`): every slot is useful in straight-line code;
/// a loop whose trip count differs between lanes runs masked blocks in
/// which the lanes that left the loop are wasted slots.
#[test]
fn gradient_blocks_count_their_useful_lane_slots() {
    let work = |source: &str, batching: Batching| {
        let (program, diags) = language::compile_model(source, "work");
        let program = program.unwrap_or_else(|| panic!("{diags:?}"));
        let grad = language::ad::gradient(&program).unwrap();
        let cfg = language::batch::lower_gradient(&grad).unwrap();
        let model = Model::new(&program, &DataFile::parse("{}").unwrap()).unwrap();
        let config = ExecConfig {
            batching,
            ..ExecConfig::default()
        };
        let batched = BatchedModel::new(cfg, model, config).unwrap();
        // x = -2, -1, 0, 1, 2 (one coordinate, five lanes).
        let theta = [-2.0, -1.0, 0.0, 1.0, 2.0];
        let out = batched
            .log_density_gradient_columns(&theta, 5, true)
            .unwrap();
        assert!(out.errors.iter().all(Option::is_none), "{:?}", out.errors);
        out.work
    };
    let straight = "parameters { real x; } model { x ~ normal(0, 1); }";
    // exp(x) + 0.5 per trip until s ≥ 3: 1 trip at x = 2, 5 at x = -2.
    let looped = "parameters { real x; } model {
        real s = 0;
        while (s < 3) { s += exp(x) + 0.5; }
        target += -0.5 * square(x) + s;
    }";
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let w = work(straight, batching);
        assert!(w.slots >= 5, "{batching:?}: {w:?}");
        assert_eq!(w.useful, w.slots, "{batching:?}");
        let w = work(looped, batching);
        assert!(w.useful < w.slots, "{batching:?}: {w:?}");
        assert!(w.useful > 0, "{batching:?}: {w:?}");
        let u = w.utilization().unwrap();
        assert!(u > 0.3 && u < 0.95, "{batching:?}: {u}");
    }
}

/// Sub-batches shared between the calling thread and the pool (more
/// sub-batches than threads, taken as threads come free): every lane's lp,
/// gradient and error are those of one thread, bit for bit, in lane order,
/// through both APIs.
#[test]
fn sub_batches_over_threads_give_the_one_thread_columns() {
    let source = r#"parameters { vector[3] x; } model {
        x ~ normal(0, 1);
        if (x[1] >= 3) reject("x[1] too big: ", x[1]);
    }"#;
    let (program, diags) = language::compile_model(source, "split");
    let program = program.unwrap_or_else(|| panic!("{diags:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&grad).unwrap();
    let z = 37;
    // Coordinate-major θ; lanes 5 and 30 fail (x[1] ≥ 3).
    let theta: Vec<f64> = (0..3 * z)
        .map(|i| match i {
            5 | 30 => 3.5,
            _ => ((i * 7) % 11) as f64 * 0.3 - 1.5,
        })
        .collect();
    let run = |threads: usize, max_sub_batch: usize, batching: Batching| {
        let model = Model::new(&program, &DataFile::parse("{}").unwrap()).unwrap();
        let config = ExecConfig {
            batching,
            threads,
            max_sub_batch,
            ..ExecConfig::default()
        };
        let batched = BatchedModel::new(cfg.clone(), model, config).unwrap();
        let per_lane: Vec<Vec<f64>> = (0..z)
            .map(|l| (0..3).map(|k| theta[k * z + l]).collect())
            .collect();
        let lanes = batched.log_density_gradient(&per_lane, true).unwrap();
        let columns = batched
            .log_density_gradient_columns(&theta, z, true)
            .unwrap();
        (format!("{lanes:?}"), columns)
    };
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let (one_lanes, one) = run(1, 0, batching);
        assert_eq!(one.errors.iter().filter(|e| e.is_some()).count(), 2);
        assert!(one.errors[5].is_some() && one.errors[30].is_some());
        for (threads, max_sub_batch) in [(2, 0), (2, 3), (3, 5), (0, 4)] {
            let (lanes, got) = run(threads, max_sub_batch, batching);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let what = format!("{batching:?}, {threads} threads, sub-batches of {max_sub_batch}");
            assert_eq!(bits(&got.lp), bits(&one.lp), "{what}");
            assert_eq!(bits(&got.gradient), bits(&one.gradient), "{what}");
            assert_eq!(got.errors, one.errors, "{what}");
            // The per-lane API's results in lane order.
            assert_eq!(lanes, one_lanes, "{what}");
        }
    }
}
