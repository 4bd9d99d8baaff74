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

/// How many of the larger posteriordb-models corpus lower (never below
/// what already works), and the most common gaps (run with --nocapture).
#[test]
fn posteriordb_models_corpus_gaps() {
    let lowered = corpus_gaps(&corpus().join("posteriordb-models"));
    assert!(
        lowered >= 70,
        "only {lowered} posteriordb-models lower (70 did before)"
    );
}

/// The same over stanc3's `good` test programs.
#[test]
fn stanc3_good_corpus_gaps() {
    let lowered = corpus_gaps(&corpus().join("stanc3/good"));
    assert!(
        lowered >= 331,
        "only {lowered} stanc3 good programs lower (331 did before)"
    );
}

fn stan_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            stan_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "stan") {
            out.push(path);
        }
    }
}

fn corpus_gaps(dir: &std::path::Path) -> usize {
    let mut paths = Vec::new();
    stan_files(dir, &mut paths);
    paths.sort();
    let mut lowered = 0;
    let mut front_end_errors = 0;
    let mut gaps: std::collections::BTreeMap<String, usize> = Default::default();
    for path in &paths {
        let source = std::fs::read_to_string(path).unwrap();
        let fe = language::compile_front_end(&source);
        if fe.diagnostics.iter().any(|d| d.is_error()) {
            front_end_errors += 1;
            continue;
        }
        match mir::lower(&fe.program, fe.checked.as_ref().unwrap(), "m") {
            Ok(_) => lowered += 1,
            Err(diags) => {
                let mut seen = std::collections::BTreeSet::new();
                for d in diags {
                    assert_eq!(
                        d.code,
                        mir::NOT_YET_SUPPORTED,
                        "{}: {}",
                        path.display(),
                        d.message
                    );
                    seen.insert(d.message);
                }
                for m in seen {
                    *gaps.entry(m).or_default() += 1;
                }
            }
        }
    }
    println!(
        "{}: {lowered} of {} lower ({front_end_errors} rejected by the front end)",
        dir.display(),
        paths.len()
    );
    let mut gaps: Vec<_> = gaps.into_iter().collect();
    gaps.sort_by_key(|g| std::cmp::Reverse(g.1));
    for (gap, n) in gaps.iter().take(40) {
        println!("  {n:3}  {gap}");
    }
    assert_eq!(
        front_end_errors, 0,
        "the front end rejected corpus programs it accepts elsewhere"
    );
    lowered
}

/// A parameter whose tuple has constrained components is refused when the
/// model is lowered (no transform rule for tuples yet), pointing at its
/// type; a tuple parameter without constraints lowers.
#[test]
fn constrained_tuple_parameters_are_refused_at_their_type() {
    let source = "parameters { real a; tuple(real<lower=0>, simplex[3]) t; }\n\
                  model { a ~ normal(0, 1); }";
    let diags = lower_source(source, "tuple").expect_err("refused");
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(d.code, mir::NOT_YET_SUPPORTED);
    assert!(d.message.contains("tuple parameter `t`"), "{}", d.message);
    let span = d.primary.span;
    assert_eq!(
        &source[span.start as usize..span.end as usize],
        "tuple(real<lower=0>, simplex[3])"
    );
    let plain = "parameters { tuple(real, vector[2]) t; } model { t.1 ~ normal(0, 1); }";
    assert!(lower_source(plain, "plain").is_ok());
}
