//! The CFG IR lowered from every posteriordb model's gradient program (and
//! the examples') keeps its invariants, and running it block by block
//! gives exactly — bit for bit — the structured interpreter's log density
//! and gradient. Models whose gradient program cannot be built yet (see
//! ad_gradients_exceptions.txt) are skipped by name here, and that list
//! must not grow.

mod common;

use std::path::Path;

fn check(name: &str, model: &Path, data: &Path) -> Result<(), String> {
    let loaded = common::load(name, model, data, Path::new("/nonexistent"))?;
    check_generated_quantities(&loaded)?;
    let g = language::ad::gradient(&loaded.program).map_err(|ds| {
        ds.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let cfg = language::batch::lower_gradient(&g).map_err(|ds| format!("{ds:?}"))?;
    cfg.validate()?;
    let n = loaded.model.num_unconstrained();
    for k in 0..3 {
        let theta: Vec<f64> = (0..n)
            .map(|i| ((i * 7 + k * 13) % 19) as f64 / 10.0 - 0.9)
            .collect();
        for jacobian in [true, false] {
            let structured = loaded.model.log_density_gradient(&g, &theta, jacobian);
            let blocks = loaded
                .model
                .log_density_gradient_cfg(&cfg, &theta, jacobian);
            match (structured, blocks) {
                (Ok((lp1, g1)), Ok((lp2, g2))) => {
                    if lp1.to_bits() != lp2.to_bits() && !(lp1.is_nan() && lp2.is_nan()) {
                        return Err(format!("lp {lp1} vs cfg {lp2} at point {k}"));
                    }
                    for (i, (a, b)) in g1.iter().zip(&g2).enumerate() {
                        if a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()) {
                            return Err(format!("grad[{i}] {a} vs cfg {b} at point {k}"));
                        }
                    }
                }
                (Err(a), Err(b)) if a.message == b.message => {}
                (a, b) => return Err(format!("structured {a:?} vs cfg {b:?}")),
            }
        }
    }
    Ok(())
}

/// Generated quantities (with user functions, `_rng` and loops) through the
/// CFG give the same draw as the structured interpreter, same random stream.
fn check_generated_quantities(loaded: &common::Loaded) -> Result<(), String> {
    let cfg = language::batch::lower_generated_quantities(&loaded.program)
        .map_err(|ds| format!("{ds:?}"))?;
    cfg.validate()?;
    let n = loaded.model.num_unconstrained();
    let theta: Vec<f64> = (0..n).map(|i| (i % 5) as f64 / 5.0 - 0.4).collect();
    let rng = || runtime::Rng::new(7, 3, 11);
    let structured = loaded.model.generated_quantities(&theta, rng());
    let blocks = loaded.model.generated_quantities_cfg(&cfg, &theta, rng());
    match (structured, blocks) {
        (Ok(a), Ok(b)) if format!("{:?}", a.values) == format!("{:?}", b.values) => Ok(()),
        (Err(a), Err(b)) if a.message == b.message => Ok(()),
        (a, b) => Err(format!("generated quantities differ: {a:?} vs cfg {b:?}")),
    }
}

#[test]
fn cfg_runs_like_the_structured_interpreter() {
    let exceptions = common::ad_exceptions();
    let mut failures = Vec::new();
    let mut checked = 0;
    let dirs = common::posteriordb_dirs();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        if exceptions.contains(&name) {
            continue;
        }
        checked += 1;
        if let Err(e) = check(&name, &dir.join("model.stan"), &dir.join("data.json")) {
            failures.push(format!("{name}: {e}"));
        }
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bat") {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let data = path.with_extension("data.json");
            if exceptions.contains(&format!("examples/{stem}")) || !data.is_file() {
                continue;
            }
            checked += 1;
            if let Err(e) = check(&stem, &path, &data) {
                failures.push(format!("examples/{stem}: {e}"));
            }
        }
    }
    assert!(checked >= 20, "only {checked} models checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Recursion, mutual recursion, `while` with `break`/`continue`, early
/// `return` and calls inside conditions: the CFG run gives the structured
/// interpreter's draw.
#[test]
fn functions_and_control_flow_match_the_structured_interpreter() {
    let source = "
      functions {
        int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }
        int is_even(int n);
        int is_odd(int n) { if (n == 0) return 0; return is_even(n - 1); }
        int is_even(int n) { if (n == 0) return 1; return is_odd(n - 1); }
        real walk_rng(real x) {
          real s = x; int k = 0;
          while (1) {
            k += 1;
            if (k > 50) break;
            if (k % 3 == 0) continue;
            s += normal_rng(0, 1);
            if (s > 3) return s;
          }
          return -s;
        }
      }
      parameters { real mu; }
      model { mu ~ normal(0, 1); }
      generated quantities {
        int f = fib(12);
        int e = is_even(7) || is_odd(fib(5));
        real w = walk_rng(mu) + (e ? walk_rng(1) : 0);
        array[4] real ws;
        for (i in 1:4) ws[i] = fib(i) > 1 ? walk_rng(i) : mu;
      }";
    let (mir, diags) = language::compile_model(source, "t");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = language::batch::lower_generated_quantities(&mir).unwrap();
    cfg.validate().unwrap();
    let data = language::data::DataFile::parse("{}").unwrap();
    let model = runtime::Model::new(&mir, &data).unwrap();
    for chain in 0..5 {
        let theta = [chain as f64 * 0.7 - 1.0];
        let rng = || runtime::Rng::new(42, chain, 3);
        let a = model.generated_quantities(&theta, rng()).unwrap();
        let b = model.generated_quantities_cfg(&cfg, &theta, rng()).unwrap();
        assert_eq!(a.values, b.values);
    }
}
