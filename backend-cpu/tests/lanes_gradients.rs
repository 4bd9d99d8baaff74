//! Lane-by-lane equality of batched gradient programs with the scalar
//! interpreter: for every posteriordb model and every example, the
//! gradient program runs on a batch of Z lanes (Z = 1, 7, 64), each with
//! its own random θ, through the batched ops and the structured test
//! driver; each lane's log density and gradient (or error) must equal
//! `Model::log_density_gradient` on that lane's θ exactly (bit for bit,
//! also when products with shared matrices run as one batched product).
//! Models that cannot run are listed with the reason in
//! `lanes_gradients_exceptions.txt`; a listed model that runs fails the test.

use backend_cpu::structured::{self, Branching, Options};
use language::data::DataFile;
use runtime::{Model, Rng, RuntimeError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/posteriordb");
    assert!(dir.is_dir(), "test corpus missing at {}", dir.display());
    dir
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

struct Case {
    name: String,
    model: PathBuf,
    data: PathBuf,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let dir = entry.unwrap().path();
        out.push(Case {
            name: dir.file_name().unwrap().to_string_lossy().into(),
            model: dir.join("model.stan"),
            data: dir.join("data.json"),
        });
    }
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bat") {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            out.push(Case {
                name: format!("examples/{stem}"),
                data: path.with_extension("data.json"),
                model: path,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn exceptions() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lanes_gradients_exceptions.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, why) = l.split_once(':').expect("NAME: reason");
            (name.trim().to_string(), why.trim().to_string())
        })
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
    if rel == 0.0 {
        a == b || (a.is_nan() && b.is_nan())
    } else {
        a == b || (a - b).abs() <= rel * a.abs().max(b.abs())
    }
}

fn same_error(a: &RuntimeError, b: &RuntimeError) -> bool {
    a.kind == b.kind && a.message == b.message && a.span == b.span
}

/// Run one model at the given batch sizes; `Err` says what differed.
fn check(case: &Case, sizes: &[usize]) -> Result<(), String> {
    let source = std::fs::read_to_string(&case.model).map_err(|e| e.to_string())?;
    let program = match language::compile_model(&source, &case.name) {
        (Some(p), _) => p,
        (None, ds) => return Err(format!("does not compile: {}", ds[0].message)),
    };
    let data_text = std::fs::read_to_string(&case.data).unwrap_or_else(|_| "{}".into());
    let data = DataFile::parse(&data_text).map_err(|e| format!("data: {e}"))?;
    let model = Model::new(&program, &data).map_err(|e| format!("data: {e}"))?;
    let g = language::ad::gradient(&program).map_err(|ds| format!("AD: {}", ds[0].message))?;
    let n = model.num_unconstrained();
    for &z in sizes {
        let thetas = thetas(n, z, 20261122 + z as u64);
        for jacobian in [true, false] {
            let truth: Vec<_> = thetas
                .iter()
                .map(|th| model.log_density_gradient(&g, th, jacobian))
                .collect();
            for (options, rel) in [
                (
                    Options {
                        branching: Branching::Mask,
                        gemm: false,
                    },
                    0.0,
                ),
                (
                    Options {
                        branching: Branching::Gather,
                        gemm: false,
                    },
                    0.0,
                ),
                (
                    Options {
                        branching: Branching::Mask,
                        gemm: true,
                    },
                    0.0,
                ),
            ] {
                let ours = structured::log_density_gradient(&model, &g, &thetas, jacobian, options)
                    .map_err(|e| format!("batched run: {e}"))?;
                for (l, (ours, truth)) in ours.iter().zip(&truth).enumerate() {
                    let at = format!("Z={z} lane {l} jacobian={jacobian} {options:?}");
                    match (ours, truth) {
                        (Ok((lp, grad)), Ok((lp0, grad0))) => {
                            if !same(*lp, *lp0, rel) {
                                return Err(format!("{at}: lp {lp} != {lp0}"));
                            }
                            // With GEMM, relative to the gradient's norm: a
                            // component that is a sum cancelling to a small
                            // value carries the rounding of its large terms.
                            let scale = grad0.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                            for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                                let ok = if rel == 0.0 {
                                    same(*a, *b, 0.0)
                                } else {
                                    a == b || (a - b).abs() <= rel * scale
                                };
                                if !ok {
                                    return Err(format!("{at}: gradient[{k}] {a} != {b}"));
                                }
                            }
                        }
                        (Err(a), Err(b)) if same_error(a, b) => {}
                        (a, b) => {
                            return Err(format!("{at}: {a:?} but the interpreter gives {b:?}"));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// A representative slice for the default run: hierarchical models,
/// loops with per-lane values, AD stacks, bounded and simplex parameters.
const FAST_SLICE: &[&str] = &[
    "eight_schools-eight_schools_noncentered",
    "examples/eight_schools_centered",
    "garch-garch11",
    "kidiq-kidscore_momiq",
    "kilpisjarvi_mod-kilpisjarvi",
    "examples/hierarchical_radon",
    "sblrc-blr",
];

/// Every model with `BAT_FULL_SWEEP=1`, else [`FAST_SLICE`].
#[test]
fn models_match_the_interpreter_lane_by_lane() {
    let full = std::env::var("BAT_FULL_SWEEP").is_ok_and(|v| v == "1");
    let exceptions = exceptions();
    let mut failures = Vec::new();
    let mut passed = 0;
    for case in cases() {
        if !full && !FAST_SLICE.contains(&case.name.as_str()) {
            continue;
        }
        let start = std::time::Instant::now();
        let result = check(&case, &[1, 7, 64]);
        eprintln!(
            "{}: {:?} in {:.1?}",
            case.name,
            result.as_ref().map(|_| "ok"),
            start.elapsed()
        );
        match (result, exceptions.get(&case.name)) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(_)) => {
                failures.push(format!("{}: listed as an exception but passes", case.name))
            }
            (Err(e), None) => failures.push(format!("{}: {e}", case.name)),
            (Err(_), Some(_)) => {}
        }
    }
    eprintln!("{passed} models match lane by lane");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if !full {
        assert_eq!(passed, FAST_SLICE.len());
    }
}
