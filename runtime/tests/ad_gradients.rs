//! The gradient programs made by source-to-source AD, run by the reference
//! interpreter, against Stan's own gradients (`stan_oracle.json`, with the
//! Jacobian, 1e-6 relative) and against central finite differences of the interpreter's
//! log density, for every posteriordb model, with and without the Jacobian
//! (models with ODE solves: finite differences at tightened solver
//! tolerances, see `check_files`).
//! Models whose gradient cannot be computed yet are listed with the reason
//! in `ad_gradients_exceptions.txt`; a listed model that now passes fails
//! the test too.

mod common;

use common::numbers;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    common::posteriordb()
}

/// Models whose oracle was made with another simplex transform (Stan 2.35's
/// stick-breaking; bat follows Stan >= 2.37): the unconstrained
/// coordinates differ, so only finite differences check their gradients.
const ORACLE_SIMPLEX_DIFFERS: &[&str] = &["hmm_example-hmm_example"];

fn close(ours: f64, truth: f64, rel: f64) -> bool {
    (ours - truth).abs() <= rel * truth.abs().max(1.0)
}

/// Check one posteriordb model; `Err` says what failed first.
fn check_model(dir: &Path) -> Result<(), String> {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    check_files(
        &name,
        &dir.join("model.stan"),
        &dir.join("data.json"),
        &dir.join("stan_oracle.json"),
    )
}

fn check_files(
    name: &str,
    model_path: &Path,
    data_path: &Path,
    oracle_path: &Path,
) -> Result<(), String> {
    let loaded = common::load(name, model_path, data_path, oracle_path)?;
    let model = &loaded.model;
    let differentiate = |program: &language::mir::Program| {
        language::ad::gradient(program).map_err(|ds| {
            ds.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        })
    };
    let grad = differentiate(&loaded.program)?;
    // Finite differences of a log density with ODE solves approximate its
    // gradient only when the solutions are far more accurate than the
    // model asks (Stan's own gradient of hudson_lynx_hare-lotka_volterra
    // differs from finite differences of its log density by up to 6e-4 at
    // the model's rtol 1e-5): they are compared with the gradient of the
    // model solved at rtol = atol = 1e-8 instead (`mir::ode::with_tolerances`).
    let tight_program = language::mir::ode::with_tolerances(&loaded.program, 1e-8, 1e-8);
    let tight = if tight_program != loaded.program {
        let data = std::fs::read_to_string(data_path).map_err(|e| e.to_string())?;
        let data = language::data::DataFile::parse(&data).map_err(|e| e.to_string())?;
        let tight_model = runtime::Model::new(&tight_program, &data).map_err(|e| e.to_string())?;
        Some((tight_model, differentiate(&tight_program)?))
    } else {
        None
    };
    let oracle = loaded
        .oracle
        .filter(|_| !ORACLE_SIMPLEX_DIFFERS.contains(&name));
    // Stan's oracle holds the gradient with the Jacobian.
    let points: Vec<(Vec<f64>, Option<Vec<f64>>)> = match &oracle {
        Some(o) => o["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let theta = numbers(&p["unconstrained"]);
                (theta, Some(numbers(&p["grad_jacobian"])))
            })
            .collect(),
        None => {
            // No oracle: a few deterministic points in (-1, 1).
            let n = model.num_unconstrained();
            (0..3)
                .map(|k| {
                    (
                        (0..n)
                            .map(|i| ((i * 7 + k * 13) % 19) as f64 / 10.0 - 0.9)
                            .collect(),
                        None,
                    )
                })
                .collect()
        }
    };
    for (k, (theta, stan)) in points.iter().enumerate() {
        for jacobian in [true, false] {
            let lp = model
                .log_density(theta, jacobian)
                .map_err(|e| format!("point {k}: log density: {e}"))?;
            let (lp_ad, g) = model
                .log_density_gradient(&grad, theta, jacobian)
                .map_err(|e| format!("point {k}: gradient program: {e}"))?;
            if !close(lp_ad, lp, 1e-12) {
                return Err(format!(
                    "point {k} (jacobian {jacobian}): gradient program lp {lp_ad} vs log density {lp}"
                ));
            }
            if let (Some(truth), true) = (stan, jacobian) {
                for (i, (&ours, &s)) in g.iter().zip(truth).enumerate() {
                    if !close(ours, s, 1e-6) {
                        return Err(format!(
                            "point {k} (jacobian {jacobian}): d/dθ[{i}] = {ours}, Stan {s}"
                        ));
                    }
                }
            }
            // Finite differences of the interpreter's own log density (for
            // models with ODE solves, whose tightened solves are slow in
            // debug builds, at the first two points with the Jacobian; all
            // four points are compared with Stan's gradient above).
            if tight.is_some() && (k >= 2 || !jacobian) {
                continue;
            }
            let (fd_model, g, lp) = match &tight {
                Some((m, tg)) => {
                    let (lp, g) = m
                        .log_density_gradient(tg, theta, jacobian)
                        .map_err(|e| format!("point {k}: tightened gradient program: {e}"))?;
                    (m, g, lp)
                }
                None => (model, g, lp),
            };
            for (i, &ours) in g.iter().enumerate() {
                let h = 1e-6 * theta[i].abs().max(1.0);
                let (mut up, mut down) = (theta.clone(), theta.clone());
                up[i] += h;
                down[i] -= h;
                let f = |t: &[f64]| {
                    fd_model
                        .log_density(t, jacobian)
                        .map_err(|e| format!("finite difference: {e}"))
                };
                let fd = (f(&up)? - f(&down)?) / (2.0 * h);
                let tol = 1e-5 * ours.abs().max(1.0) + 1e-14 * lp.abs().max(1.0) / h;
                if (fd - ours).abs() > tol {
                    return Err(format!(
                        "point {k} (jacobian {jacobian}): d/dθ[{i}] = {ours}, finite difference {fd}"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn exceptions() -> BTreeMap<String, String> {
    include_str!("ad_gradients_exceptions.txt")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            l.split_once(": ")
                .map(|(a, b)| (a.to_string(), b.to_string()))
        })
        .collect()
}

/// The example models shipped in `examples/` (finite differences only).
#[test]
fn example_gradients_match_finite_differences() {
    let listed = exceptions();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut models: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bat"))
        .collect();
    models.sort();
    let (mut checked, mut problems) = (0, Vec::new());
    for path in &models {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let name = format!("examples/{stem}");
        let data = dir.join(format!("{stem}.data.json"));
        if !data.exists() {
            // logistic_regression's data is generated at setup time (large).
            continue;
        }
        checked += 1;
        match (
            check_files(&name, path, &data, &dir.join("no-oracle")),
            listed.get(&name),
        ) {
            (Ok(()), Some(_)) => {
                problems.push(format!("{name}: listed as an exception but now passes"))
            }
            (Err(e), None) => problems.push(format!("{name}: {e}")),
            _ => {}
        }
    }
    assert!(
        checked >= 4,
        "only {checked} examples with data found in {}",
        dir.display()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn gradients_match_stan_and_finite_differences() {
    let listed = exceptions();
    let mut entries: Vec<_> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let (mut passed, mut problems) = (0, Vec::new());
    for dir in &entries {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let result = check_model(dir);
        match (&result, listed.get(&name)) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(_)) => {
                problems.push(format!("{name}: listed as an exception but now passes"))
            }
            (Err(e), None) => problems.push(format!("{name}: {e}")),
            (Err(e), Some(_)) => println!("known gap {name}: {e}"),
        }
    }
    println!(
        "gradients verified for {passed} of {} posteriordb models",
        entries.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
