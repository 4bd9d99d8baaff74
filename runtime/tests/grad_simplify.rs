//! The simplification of gradient programs (`language::simplify`):
//! - the simplified program computes exactly what the transformation's
//!   own output computes — the same log density and gradient, or the same
//!   error — on the interpreter, for every posteriordb model and example
//!   that differentiates, with and without the Jacobian;
//! - a check of data that fails still fails at every evaluation reaching
//!   it, with the same error, and only there;
//! - the programs shrink: a table of statements and operations before and
//!   after (`-- --nocapture` prints it), with a floor on the reduction.

mod common;

use language::data::DataFile;
use language::mir::GradProgram;
use language::simplify::{OpCount, count_ops};
use runtime::{Model, RuntimeError};
use std::path::{Path, PathBuf};

struct Case {
    name: String,
    program: language::mir::Program,
    model: Model,
}

/// Every posteriordb model and example with data that compiles and
/// differentiates.
fn cases() -> Vec<Case> {
    let mut files: Vec<(String, PathBuf, PathBuf)> = common::posteriordb_dirs()
        .into_iter()
        .map(|d| {
            let name = d.file_name().unwrap().to_string_lossy().to_string();
            (name, d.join("model.stan"), d.join("data.json"))
        })
        .collect();
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut stems: Vec<_> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bat"))
        .collect();
    stems.sort();
    for path in stems {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let data = examples.join(format!("{stem}.data.json"));
        if data.exists() {
            files.push((format!("examples/{stem}"), path, data));
        }
    }
    files
        .into_iter()
        .filter_map(|(name, model, data)| {
            let loaded = common::load(&name, &model, &data, Path::new("no-oracle")).ok()?;
            Some(Case {
                name,
                program: loaded.program,
                model: loaded.model,
            })
        })
        .collect()
}

/// Deterministic points in (-2, 2), and one far out (where densities
/// overflow or checks fail).
fn points(n: usize) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = (0..3)
        .map(|k| {
            (0..n)
                .map(|i| ((i * 7 + k * 13) % 19) as f64 / 5.0 - 1.8)
                .collect()
        })
        .collect();
    out.push(
        (0..n)
            .map(|i| if i % 2 == 0 { 40.0 } else { -40.0 })
            .collect(),
    );
    out
}

type Outcome = Result<(f64, Vec<f64>), RuntimeError>;

fn same_number(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

fn same_outcome(a: &Outcome, b: &Outcome) -> bool {
    match (a, b) {
        (Ok((lp_a, g_a)), Ok((lp_b, g_b))) => {
            same_number(*lp_a, *lp_b)
                && g_a.len() == g_b.len()
                && g_a.iter().zip(g_b).all(|(x, y)| same_number(*x, *y))
        }
        (Err(a), Err(b)) => a == b,
        _ => false,
    }
}

fn compare(name: &str, model: &Model, raw: &GradProgram, simple: &GradProgram) -> Vec<String> {
    let mut problems = Vec::new();
    for (k, theta) in points(model.num_unconstrained()).iter().enumerate() {
        for jacobian in [true, false] {
            let before = model.log_density_gradient(raw, theta, jacobian);
            let after = model.log_density_gradient(simple, theta, jacobian);
            if !same_outcome(&before, &after) {
                problems.push(format!(
                    "{name} point {k} (jacobian {jacobian}): before {before:?}, after {after:?}"
                ));
            }
        }
    }
    problems
}

#[test]
fn simplified_programs_compute_exactly_the_same() {
    let cases = cases();
    assert!(cases.len() >= 25, "only {} models load", cases.len());
    let (mut compared, mut problems) = (0, Vec::new());
    for case in &cases {
        let Ok(raw) = language::ad::gradient_unsimplified(&case.program) else {
            continue;
        };
        let simple = language::ad::gradient(&case.program).expect("simplifies what differentiates");
        compared += 1;
        problems.extend(compare(&case.name, &case.model, &raw, &simple));
    }
    assert!(compared >= 25, "only {compared} models differentiate");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn model_of(source: &str, data: &str) -> (language::mir::Program, Model) {
    let (program, diagnostics) = language::compile_model(source, "t");
    let program = program.unwrap_or_else(|| panic!("does not compile: {diagnostics:?}"));
    let model = Model::new(&program, &DataFile::parse(data).unwrap()).unwrap();
    (program, model)
}

/// A check of data in the model block is hoisted (computed once) behind a
/// guard: when the data fails it, every evaluation that reaches it still
/// fails there with Stan's error, and one that does not reach it succeeds.
#[test]
fn a_failing_check_of_data_fails_where_it_did() {
    let source = "
        data { real s; vector[2] y; }
        parameters { real mu; }
        model {
          mu ~ normal(0, 1);
          if (mu > 0) y ~ normal(mu, s);
        }";
    let (program, model) = model_of(source, r#"{"s": -1.5, "y": [0.5, 1.0]}"#);
    let raw = language::ad::gradient_unsimplified(&program).unwrap();
    let simple = language::ad::gradient(&program).unwrap();
    assert!(
        !simple.program.hoisted.is_empty() && simple.program.hoisted.iter().any(|h| h.ok.is_some()),
        "the check of `s` is hoisted with a guard:\n{}",
        language::ad::print_grad_program(&simple)
    );
    for mu in [0.7, -0.7] {
        for _ in 0..2 {
            let before = model.log_density_gradient(&raw, &[mu], true);
            let after = model.log_density_gradient(&simple, &[mu], true);
            assert!(same_outcome(&before, &after), "{before:?} vs {after:?}");
            assert_eq!(after.is_err(), mu > 0.0, "{after:?}");
        }
    }
    // With valid data the same hoisted program succeeds everywhere.
    let (_, good) = model_of(source, r#"{"s": 1.5, "y": [0.5, 1.0]}"#);
    for mu in [0.7, -0.7] {
        let before = good.log_density_gradient(&raw, &[mu], true);
        let after = good.log_density_gradient(&simple, &[mu], true);
        assert!(after.is_ok() && same_outcome(&before, &after));
    }
}

fn add(a: OpCount, b: OpCount) -> OpCount {
    OpCount {
        statements: a.statements + b.statements,
        operations: a.operations + b.operations,
    }
}

/// Statements and operations per gradient program before and after, with
/// a floor on the reduction.
#[test]
fn gradient_programs_shrink() {
    let (mut total_before, mut total_after) = (OpCount::default(), OpCount::default());
    println!("{:<44} {:>18} {:>18}", "model", "statements", "operations");
    let mut grew = Vec::new();
    for case in cases() {
        let Ok(raw) = language::ad::gradient_unsimplified(&case.program) else {
            continue;
        };
        let simple = language::ad::gradient(&case.program).unwrap();
        let (b, a) = (count_ops(&raw), count_ops(&simple));
        println!(
            "{:<44} {:>7} → {:>7} {:>7} → {:>7}",
            case.name, b.statements, a.statements, b.operations, a.operations
        );
        if a.statements > b.statements || a.operations > b.operations {
            grew.push(case.name.clone());
        }
        total_before = add(total_before, b);
        total_after = add(total_after, a);
    }
    println!(
        "{:<44} {:>7} → {:>7} {:>7} → {:>7}",
        "total",
        total_before.statements,
        total_after.statements,
        total_before.operations,
        total_after.operations
    );
    assert!(grew.is_empty(), "programs grew: {grew:?}");
    let ratio = |a: usize, b: usize| a as f64 / b as f64;
    let statements = ratio(total_after.statements, total_before.statements);
    let operations = ratio(total_after.operations, total_before.operations);
    // Measured: 0.35 and 0.60 (see `language::simplify` docs).
    assert!(
        statements <= 0.45 && operations <= 0.7,
        "statements at {statements:.2}, operations at {operations:.2} of before"
    );
}

#[test]
#[ignore]
fn print_example() {
    let name = std::env::var("EX").unwrap();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/{name}.bat"));
    let source = std::fs::read_to_string(path).unwrap();
    let (program, _) = language::compile_model(&source, &name);
    let g = language::ad::gradient(&program.unwrap()).unwrap();
    println!("{}", language::ad::print_grad_program(&g));
}
