//! Lowering real models to MIR: every posteriordb model either lowers or
//! names what is not supported yet; none panics.

use language::mir;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    assert!(
        dir.is_dir(),
        "test corpus missing at {}: clone the repository beside shared/",
        dir.display()
    );
    dir
}

fn lower_source(source: &str, name: &str) -> Result<mir::Program, Vec<language::Diagnostic>> {
    let fe = language::compile_front_end(source);
    let errors: Vec<_> = fe
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect();
    assert!(
        errors.is_empty(),
        "{name}: front end rejected a corpus model: {errors:?}"
    );
    mir::lower(&fe.program, fe.checked.as_ref().expect("checked"), name)
}

#[test]
fn posteriordb_models_lower_or_name_the_gap() {
    let dir = corpus().join("posteriordb");
    let mut lowered = Vec::new();
    let mut gaps = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let source = std::fs::read_to_string(path.join("model.stan")).unwrap();
        match lower_source(&source, &name) {
            Ok(p) => {
                mir::print::print_program(&p);
                lowered.push(name)
            }
            Err(diags) => {
                for d in &diags {
                    assert_eq!(d.code, mir::NOT_YET_SUPPORTED, "{name}: {}", d.message);
                    assert!(
                        d.message.starts_with("not yet supported: "),
                        "{name}: {}",
                        d.message
                    );
                }
                gaps.push(format!(
                    "{name}: {}",
                    diags
                        .iter()
                        .map(|d| d.message.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        }
    }
    println!("lowered {} models; not yet: {}", lowered.len(), gaps.len());
    for g in &gaps {
        println!("  {g}");
    }
    assert!(
        lowered
            .iter()
            .any(|n| n == "eight_schools-eight_schools_noncentered")
    );
}

#[test]
fn eight_schools_mir() {
    let source = std::fs::read_to_string(
        corpus().join("posteriordb/eight_schools-eight_schools_noncentered/model.stan"),
    )
    .unwrap();
    let p = lower_source(&source, "eight_schools_noncentered").unwrap_or_else(|d| panic!("{d:?}"));
    insta::assert_snapshot!(mir::print::print_program(&p));
}

#[test]
fn eight_schools_gradient_program() {
    let source = std::fs::read_to_string(
        corpus().join("posteriordb/eight_schools-eight_schools_noncentered/model.stan"),
    )
    .unwrap();
    let p = lower_source(&source, "eight_schools_noncentered").unwrap_or_else(|d| panic!("{d:?}"));
    let g = language::ad::gradient(&p).unwrap_or_else(|d| panic!("{d:?}"));
    insta::assert_snapshot!(language::ad::print_grad_program(&g));
}

#[test]
fn loop_gradient_program() {
    let source = "data { int N; array[N] real y; } parameters { real mu; real<lower=0> sigma; } \
        model { real acc = 0; mu ~ normal(0, 1); for (n in 1:N) { real z = y[n] - mu; target += normal_lpdf(z | 0, sigma); } \
        for (n in 1:N) { acc = acc + mu * mu; } while (acc > 1) { acc = acc / 2; } target += acc; }";
    let p = lower_source(source, "loops").unwrap_or_else(|d| panic!("{d:?}"));
    let g = language::ad::gradient(&p).unwrap_or_else(|d| panic!("{d:?}"));
    insta::assert_snapshot!(language::ad::print_grad_program(&g));
}
