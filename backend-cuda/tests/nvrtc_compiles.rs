//! The device code generated for the examples and the posteriordb models:
//! every program compiles with NVRTC (PTX for compute_80 and compute_90,
//! an sm_90 cubin), including the blocks of programs not fully generated;
//! ops without code are reported with their source position and a
//! `// not generated` comment, never as code that computes something else.
//! (That the code computes what backend-cpu computes is
//! `tests/gradient_device.rs`.)
//!
//! To keep the cost small, the models' kernels go into one translation
//! unit (one NVRTC compile per target), and by default only those of
//! [`DEFAULT_MODELS`] (all models with `BAT_FULL_SWEEP=1`: NVRTC then takes
//! minutes).

mod common;

use std::path::Path;

use backend_cuda::nvrtc::{CHECKED_TARGETS, compile};
use codegen::{self, DeviceProgram, gradient, program};
use language::batch::pc;
use language::data::DataFile;
use runtime::Model;

use common::models::{corpus, model_files, repo_root};
use common::ode_models::{TIMES_DATA, TIMES_MODEL};

/// Compiled by default: loops, AD stacks, GEMM and per-lane matrix
/// products, every bound transform, recursive user functions, ODE solves
/// (the vector and the deprecated array interface), and a partly generated
/// program.
const DEFAULT_MODELS: &[&str] = &[
    "eight_schools_noncentered",
    "loop_jumps",
    "correlated_gaussian_100",
    "arK-arK",
    "sblrc-blr",
    "recursive_functions",
    "diamonds-diamonds",
    "gp_pois_regr-gp_regr",
    "sir_influenza",
    "hudson_lynx_hare-lotka_volterra",
];

struct Case {
    name: String,
    source: String,
    pc: pc::Program,
    program: DeviceProgram,
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn load(name: &str, model_path: &Path, data_path: &Path) -> Result<Case, String> {
    let source = std::fs::read_to_string(model_path).map_err(|e| e.to_string())?;
    let mir = match language::compile_model(&source, name) {
        (Some(p), _) => p,
        (None, d) => return Err(format!("does not compile: {}", d[0].message)),
    };
    let g = language::ad::gradient(&mir).map_err(|d| format!("no gradient: {}", d[0].message))?;
    let cfg =
        language::batch::lower_gradient(&g).map_err(|d| format!("no CFG: {}", d[0].message))?;
    let data = DataFile::parse(&std::fs::read_to_string(data_path).unwrap_or("{}".into()))
        .map_err(|e| e.to_string())?;
    let model = Model::new(&mir, &data).map_err(|e| format!("data: {e}"))?;
    let (pc, generated, capacities) =
        gradient::generate(&cfg, &model).map_err(|e| e.to_string())?;
    // The same program, named for a shared translation unit.
    let layout = program::layout(&pc, &model, &capacities).unwrap();
    let named = program::generate_named(&pc, layout, &format!("m{}", sanitize(name)));
    assert_eq!(named.not_generated, generated.not_generated);
    Ok(Case {
        name: name.to_string(),
        source,
        pc,
        program: named,
    })
}

#[test]
fn every_program_compiles_with_nvrtc_for_every_checked_target() {
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    for (name, model, data) in model_files("") {
        match load(&name, &model, &data) {
            Ok(case) => cases.push(case),
            Err(why) => skipped.push(format!("{name}: {why}")),
        }
    }
    let (mut total, mut with_code, mut complete) = (0, 0, 0);
    for case in &cases {
        let (t, w) = case.program.op_counts(&case.pc);
        total += t;
        with_code += w;
        complete += usize::from(case.program.not_generated.is_empty());
    }
    eprintln!(
        "{} programs ({complete} complete) with code for {with_code} of {total} ops; {} without a program:\n  {}",
        cases.len(),
        skipped.len(),
        skipped.join("\n  ")
    );
    assert!(cases.len() >= 25, "too few models reach code generation");
    assert!(complete >= 33, "only {complete} programs are complete");
    // Every model is complete.
    assert_eq!(complete, cases.len(), "incomplete programs");
    assert!(skipped.is_empty(), "{skipped:?}");

    let full = std::env::var_os("BAT_FULL_SWEEP").is_some();
    let mut source = codegen::prelude();
    let mut compiled = Vec::new();
    for case in &cases {
        if full || DEFAULT_MODELS.contains(&case.name.as_str()) {
            source.push_str(&case.program.kernels_source);
            compiled.push(case.name.as_str());
        }
    }
    assert!(
        full || compiled.len() == DEFAULT_MODELS.len(),
        "{compiled:?}"
    );
    if let Some(path) = std::env::var_os("BAT_CUDA_DUMP") {
        std::fs::write(path, &source).unwrap();
    }
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        let compiles: Vec<_> = CHECKED_TARGETS
            .into_iter()
            .map(|target| {
                let source = &source;
                scope.spawn(move || (target, compile(source, target)))
            })
            .collect();
        for handle in compiles {
            let (target, result) = handle.join().unwrap();
            if let Err(e) = result {
                panic!("{target:?}: {e}");
            }
        }
    });
    eprintln!(
        "NVRTC, {} models in {} lines for compute_80, compute_90 and sm_90: {:.1} s",
        compiled.len(),
        source.lines().count(),
        started.elapsed().as_secs_f64()
    );
}

/// The ODE forms beyond Dormand–Prince with data times ([`TIMES_MODEL`]:
/// `ode_ckrk_tol`, `ode_ckrk`, `ode_bdf_tol`, initial and output times
/// that are parameters, with and without other autodiff inputs, also
/// through the deprecated interface) generate completely and compile with
/// NVRTC for every checked target. (One model: BDF's integrator is large
/// for ptxas.)
#[test]
fn ode_solvers_and_parameter_times_compile_with_nvrtc() {
    let dir = tempfile::tempdir().unwrap();
    let model_path = dir.path().join("ode_times.stan");
    let data_path = dir.path().join("ode_times.json");
    std::fs::write(&model_path, TIMES_MODEL).unwrap();
    std::fs::write(&data_path, TIMES_DATA).unwrap();
    let case = load("ode_times", &model_path, &data_path).unwrap();
    assert!(
        case.program.not_generated.is_empty(),
        "{:?}",
        case.program.not_generated
    );
    let mut source = codegen::prelude();
    source.push_str(&case.program.kernels_source);
    for integrator in ["bat_dopri5(", "bat_cash_karp(", "bat_bdf("] {
        assert!(
            case.program.kernels_source.contains(integrator),
            "{integrator}"
        );
    }
    // The adjoints of the times evaluate the system alone.
    assert!(source.contains("_rhs_f("));
    for target in CHECKED_TARGETS {
        if let Err(e) = compile(&source, target) {
            panic!("{target:?}: {e}");
        }
    }
}

/// What the generator lacks is reported with where it is, and the source
/// says so; every other op has code.
#[test]
fn ops_without_code_are_reported_with_their_source_position() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("gamma_p.stan");
    std::fs::write(
        &model,
        "parameters {\n  real<lower=0, upper=1> x;\n}\nmodel {\n  target += gamma_p(2, x);\n}\n",
    )
    .unwrap();
    let case = load("gamma_p", &model, &dir.path().join("none.json")).unwrap();
    let missing = &case.program.not_generated;
    assert!(!missing.is_empty());
    // gamma_p has no device code yet: named in the report and the source.
    assert!(
        missing.iter().any(|n| n.reason == "primitive gamma_p"),
        "{missing:?}"
    );
    assert!(
        case.program.kernels_source.contains("// not generated: ")
            && case.program.kernels_source.contains("(primitive gamma_p)")
    );
    // Ops have spans inside the source.
    for n in missing.iter().filter_map(|n| n.span) {
        assert!((n.end as usize) <= case.source.len(), "{n:?}");
        let (line, _) = program::position(&case.source, n);
        assert!(line >= 1 && line <= case.source.lines().count());
    }
    let (total, with_code) = case.program.op_counts(&case.pc);
    assert_eq!(
        total - with_code,
        missing.iter().filter(|n| n.at.contains("/op")).count()
    );

    // A complete program has no such comment: recursive user functions
    // included (and inc_beta's continued fraction on dual numbers).
    let root = repo_root().join("examples");
    let complete = load(
        "recursive_functions",
        &root.join("recursive_functions.bat"),
        &root.join("recursive_functions.data.json"),
    )
    .unwrap();
    assert!(
        complete.program.not_generated.is_empty(),
        "{:?}",
        complete.program.not_generated
    );
    assert!(!complete.program.kernels_source.contains("not generated"));
    let dir = corpus().join("diamonds-diamonds");
    let diamonds = load(
        "diamonds-diamonds",
        &dir.join("model.stan"),
        &dir.join("data.json"),
    )
    .unwrap();
    assert!(
        diamonds.program.not_generated.is_empty(),
        "{:?}",
        diamonds.program.not_generated
    );
    // Decompositions and solves; a function called with arguments of two
    // sizes (one copy per call site).
    for name in ["gp_pois_regr-gp_regr", "mcycle_gp-accel_gp"] {
        let dir = corpus().join(name);
        let case = load(name, &dir.join("model.stan"), &dir.join("data.json")).unwrap();
        assert!(
            case.program.not_generated.is_empty(),
            "{name}: {:?}",
            case.program.not_generated
        );
    }
}
