//! The device executor of gradient programs ([`GradientDevice`]) against
//! backend-cpu's batched executor, lane by lane: through the stub libcuda
//! (device memory is host memory, launches run the kernels compiled with
//! the CUDA-on-CPU shim) with cudarc's unmodified host calls, for every
//! example and posteriordb model whose ops are all generated. A model with
//! an op the generator lacks must be refused with the op named, never run.
//! Every model is generated; the comparison runs on a representative
//! subset by default ([`DEFAULT_MODELS`]) and on all of them with
//! `BAT_FULL_SWEEP=1`. backend-cpu runs without GEMM, so both sum
//! matrix products in the interpreter's order.
//!
//! cudarc loads libcuda once per process, so the checks run in a child
//! process (this test binary again, running one `#[ignore]`d test) whose
//! `LD_LIBRARY_PATH` points at the stub. With `BAT_CUDA_DEVICE=real` they
//! run on a real GPU instead (see `common`), to `REAL_DEVICE_TOLERANCE`.

mod common;

use common::{device_close, run_child_on_the_device};
use std::path::{Path, PathBuf};

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use backend_cuda::gradient::{GradientDevice, GradientDeviceError, LaneGradient, device_program};
use language::data::DataFile;
use language::interp::{Model, Rng};

/// Lanes resident on the device.
const LANES: usize = 300;

/// Compared by default: scalars and vectors, AD stacks, loops with
/// `break`/`continue` (lanes leave loops at different times), recursive
/// user functions and a while loop whose trips differ by lane, GEMMs over
/// data matrices and their transposes, per-lane matrix products, bounds of
/// every kind, a Cholesky factor and triangular solves. (The 10,000 × 100 logistic regression is in the full sweep:
/// backend-cpu takes a minute for it in a debug build.)
const DEFAULT_MODELS: &[&str] = &[
    "examples/eight_schools_noncentered",
    "examples/loop_jumps",
    "examples/recursion_while",
    "examples/correlated_gaussian_100",
    "eight_schools-eight_schools_noncentered",
    "kidiq-kidscore_interaction",
    "sblrc-blr",
    "gp_pois_regr-gp_regr",
    "examples/sir_influenza",
    "hudson_lynx_hare-lotka_volterra",
];

/// Models that must be fully generated (a regression otherwise): all of
/// them (33 without the generated logistic regression data set).
const MIN_GENERATED: usize = 33;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus() -> PathBuf {
    let dir = std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/corpus"))
        .join("posteriordb");
    assert!(dir.is_dir(), "test corpus missing at {}", dir.display());
    dir
}

/// (name, model, data) of every example with data and posteriordb model.
fn cases() -> Vec<(String, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let data = path.with_extension("data.json");
        if path.extension().is_some_and(|e| e == "bat") && data.is_file() {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            out.push((format!("examples/{stem}"), path, data));
        }
    }
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("model.stan").is_file() {
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            out.push((name, dir.join("model.stan"), dir.join("data.json")));
        }
    }
    out.sort();
    if let Ok(only) = std::env::var("BAT_CUDA_ONLY") {
        out.retain(|(name, _, _)| name.contains(&only));
    }
    out
}

#[test]
fn device_gradients_match_backend_cpu_through_the_stub_driver() {
    let out = run_child_on_the_device("child_compares_every_generated_model");
    eprintln!("{out}");
}

/// A model compiled for both backends.
struct Case {
    cfg: language::batch::cfg::Program,
    model: Model,
}

fn load(name: &str, model: &Path, data: &Path) -> Result<Case, String> {
    let source = std::fs::read_to_string(model).map_err(|e| e.to_string())?;
    let program = match language::compile_model(&source, name) {
        (Some(p), _) => p,
        (None, ds) => return Err(format!("does not compile: {}", ds[0].message)),
    };
    let data = DataFile::parse(&std::fs::read_to_string(data).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let g = language::ad::gradient(&program).map_err(|ds| format!("AD: {}", ds[0].message))?;
    let cfg =
        language::batch::lower_gradient(&g).map_err(|ds| format!("CFG: {}", ds[0].message))?;
    let model = Model::new(&program, &data).map_err(|e| format!("data: {e}"))?;
    Ok(Case { cfg, model })
}

/// Lane `l`'s point: uniform(−2, 2) per coordinate, as Stan's inits.
fn theta(n: usize, lane: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed, lane as u32, 0);
    (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
}

/// 1e-12 relative on the stub (IEEE arithmetic and the C library's
/// functions on both sides).
fn close(a: f64, b: f64) -> bool {
    device_close(a, b, 1e-12)
}

/// backend-cpu as the reference: program-counter batching, products summed
/// in the interpreter's order (no GEMM), as the device sums them.
fn reference(case: &Case) -> Result<BatchedModel, backend_cpu::exec::ExecError> {
    BatchedModel::new(
        case.cfg.clone(),
        case.model.clone(),
        ExecConfig {
            batching: Batching::ProgramCounter,
            gemm: false,
            ..ExecConfig::default()
        },
    )
}

/// Evaluate a scattered, scrambled subset of the device's lanes and
/// compare each with backend-cpu at the same point: the lanes compared and
/// those with a gradient (a model whose lanes all fail compares nothing).
fn compare(name: &str, case: Case) -> Result<(usize, usize), String> {
    let cpu = reference(&case).map_err(|e| format!("backend-cpu: {e}"))?;
    let mut device = GradientDevice::new(&case.cfg, case.model.clone(), LANES)
        .map_err(|e| format!("device: {e}"))?;
    let n = case.model.num_unconstrained();
    let (mut compared, mut solved) = (0, 0);
    for (round, jacobian) in [(0u64, true), (1, false)] {
        // Every lane but multiples of 3, in a scrambled order.
        let mut lanes: Vec<usize> = (0..LANES).filter(|l| l % 3 != round as usize).collect();
        lanes.sort_by_key(|l| (l * 7919) % LANES);
        let points: Vec<Vec<f64>> = lanes.iter().map(|&l| theta(n, l, 11 + round)).collect();
        let mut flat = vec![0.0; n * lanes.len()];
        for (i, p) in points.iter().enumerate() {
            for (k, &x) in p.iter().enumerate() {
                flat[k * lanes.len() + i] = x;
            }
        }
        let got = device
            .evaluate(&lanes, &flat, jacobian)
            .map_err(|e| format!("device evaluation: {e}"))?;
        let want = cpu
            .log_density_gradient(&points, jacobian)
            .map_err(|e| format!("backend-cpu: {e}"))?;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let at = format!("{name}: lane {} (jacobian {jacobian})", lanes[i]);
            check_lane(&at, g, w)?;
            compared += 1;
            solved += usize::from(g.is_ok());
        }
    }
    if solved == 0 {
        return Err(format!("{name}: every lane failed"));
    }
    Ok((compared, solved))
}

fn check_lane(
    at: &str,
    got: &LaneGradient,
    want: &Result<(f64, Vec<f64>), language::interp::RuntimeError>,
) -> Result<(), String> {
    match (got, want) {
        (Ok((lp, grad)), Ok((lp0, grad0))) => {
            if !close(*lp, *lp0) {
                return Err(format!("{at}: lp {lp:e}, backend-cpu {lp0:e}"));
            }
            if grad.len() != grad0.len() {
                return Err(format!("{at}: gradient of {} values", grad.len()));
            }
            for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                if !close(*a, *b) {
                    return Err(format!("{at}: gradient[{k}] {a:e}, backend-cpu {b:e}"));
                }
            }
            Ok(())
        }
        (Err(a), Err(b)) if a.kind == b.kind => Ok(()),
        (a, b) => Err(format!("{at}: device {a:?}, backend-cpu {b:?}")),
    }
}

#[test]
#[ignore = "child process of device_gradients_match_backend_cpu_through_the_stub_driver"]
fn child_compares_every_generated_model() {
    let mut generated = Vec::new();
    let mut refused = Vec::new();
    let mut failures = Vec::new();
    let mut lanes = 0;
    let full = std::env::var_os("BAT_FULL_SWEEP").is_some();
    for (name, model, data) in cases() {
        let case = match load(&name, &model, &data) {
            Ok(case) => case,
            Err(why) => {
                refused.push(format!("{name}: {why}"));
                continue;
            }
        };
        let started = std::time::Instant::now();
        match device_program(&case.cfg, &case.model) {
            Err(GradientDeviceError::Refused(ops)) => {
                assert!(!ops.is_empty());
                let reasons: Vec<String> = ops
                    .iter()
                    .take(3)
                    .map(|op| format!("{} ({})", op.reason, op.at))
                    .collect();
                refused.push(format!(
                    "{name}: {} ops, e.g. {}",
                    ops.len(),
                    reasons.join("; ")
                ));
                continue;
            }
            Err(e) => {
                refused.push(format!("{name}: {e}"));
                continue;
            }
            Ok(_) => {}
        }
        if !full && !DEFAULT_MODELS.contains(&name.as_str()) {
            generated.push(format!(
                "{name} (generated; compared with BAT_FULL_SWEEP=1)"
            ));
            continue;
        }
        match compare(&name, case) {
            Ok((n, solved)) => {
                lanes += n;
                generated.push(format!(
                    "{name} ({:.1} s, {solved} of {n} lanes with a gradient)",
                    started.elapsed().as_secs_f64()
                ));
            }
            Err(e) => failures.push(e),
        }
    }
    println!(
        "{} models fully generated, {lanes} lanes equal backend-cpu's:\n  {}",
        generated.len(),
        generated.join("\n  ")
    );
    println!(
        "{} not run on the device:\n  {}",
        refused.len(),
        refused.join("\n  ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if std::env::var_os("BAT_CUDA_ONLY").is_none() {
        assert!(
            generated.len() >= MIN_GENERATED,
            "only {} models fully generated",
            generated.len()
        );
    }
    // Nothing is refused.
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

/// Write a model and its data into `dir`; load it.
fn case_from(dir: &Path, name: &str, model: &str, data: &str) -> Case {
    let path = dir.join(format!("{name}.stan"));
    std::fs::write(&path, model).unwrap();
    let data_path = dir.join(format!("{name}.json"));
    std::fs::write(&data_path, data).unwrap();
    load(name, &path, &data_path).unwrap()
}

/// Evaluate `points` (one per lane, lanes 0..) on the device and on
/// backend-cpu; return the device's results after checking them.
fn compare_points(name: &str, case: &Case, points: &[Vec<f64>]) -> Vec<LaneGradient> {
    compare_points_with(name, case, points).0
}

/// [`compare_points`], with the device's AD stack capacities afterwards.
fn compare_points_with(
    name: &str,
    case: &Case,
    points: &[Vec<f64>],
) -> (Vec<LaneGradient>, Vec<usize>) {
    let cpu = reference(case).unwrap();
    let mut device = GradientDevice::new(&case.cfg, case.model.clone(), points.len()).unwrap();
    let got = device.log_density_gradient(points, true).unwrap();
    let want = cpu.log_density_gradient(points, true).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        check_lane(&format!("{name}: lane {i}"), g, w).unwrap_or_else(|e| panic!("{e}"));
    }
    (got, device.stack_capacities().to_vec())
}

#[test]
fn lanes_fail_like_backend_cpu_through_the_stub_driver() {
    run_child_on_the_device("child_lanes_fail_like_backend_cpu");
}

/// A negative scale rejects the lane (an argument check); an index
/// computed from a parameter is out of range for some lanes; the other
/// lanes go on. Errors have the same kind as backend-cpu's.
#[test]
#[ignore = "child process of lanes_fail_like_backend_cpu_through_the_stub_driver"]
fn child_lanes_fail_like_backend_cpu() {
    use language::interp::ErrorKind;
    let dir = tempfile::tempdir().unwrap();
    let case = case_from(
        dir.path(),
        "failing",
        "data { int N; vector[N] y; }\nparameters { real mu; real s; real k; }\n\
         model { y ~ normal(mu, s); target += y[1 + (k > 1)]; }\n",
        r#"{"N": 1, "y": [0.5]}"#,
    );
    // (mu, s, k): fine; rejected (s < 0); index 2 out of range (k > 1).
    let points = [
        vec![0.1, 1.5, 0.0],
        vec![0.1, -1.0, 0.0],
        vec![0.2, 2.0, 3.0],
        vec![0.3, 0.5, -2.0],
    ];
    let got = compare_points("failing", &case, &points);
    let kinds: Vec<Option<ErrorKind>> = got
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            Some(ErrorKind::Rejection),
            Some(ErrorKind::IndexOutOfRange),
            None
        ]
    );
    // The failure names the statement.
    let err = got[2].as_ref().unwrap_err();
    assert!(
        err.message.contains("index out of range"),
        "{}",
        err.message
    );
    assert!(err.span.is_some());
}

#[test]
fn stacks_grow_when_a_lane_overflows_them_through_the_stub_driver() {
    run_child_on_the_device("child_stacks_grow_when_a_lane_overflows_them");
}

/// The AD stacks are sized from the interpreter at points in (−2, 2); a
/// lane far outside runs its loop many more times, overflows them, and is
/// run again with larger stacks, giving backend-cpu's result.
#[test]
#[ignore = "child process of stacks_grow_when_a_lane_overflows_them_through_the_stub_driver"]
fn child_stacks_grow_when_a_lane_overflows_them() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_from(
        dir.path(),
        "looping",
        "parameters { real<lower=0> a; }\nmodel {\n  real x = 0;\n  while (x < 10 * a) {\n    x = x + 1 + 0.001 * a;\n  }\n  target += -square(x) / 100 - a;\n}\n",
        "{}",
    );
    let (pc, _, capacities) = device_program(&case.cfg, &case.model).unwrap();
    assert!(
        pc.num_ad_stacks > 0 && capacities.iter().all(|&c| c < 200),
        "{capacities:?}"
    );
    // a = exp(4.5): about 900 trips; exp(0.5): 17.
    let points = [vec![0.5], vec![4.5], vec![-1.0]];
    let (got, grown) = compare_points_with("looping", &case, &points);
    assert!(got.iter().all(Result::is_ok), "{got:?}");
    assert!(
        grown.iter().zip(&capacities).any(|(g, c)| g > c),
        "the stacks did not grow: {capacities:?} -> {grown:?}"
    );
}

#[test]
fn dense_linear_algebra_and_per_call_site_functions_through_the_stub_driver() {
    run_child_on_the_device("child_dense_linear_algebra_and_per_call_site_functions");
}

/// A Cholesky factor, triangular solves (and their adjoints, which solve
/// with the general solver) on the device equal backend-cpu's; a matrix
/// that is not positive definite or not symmetric rejects the lane as
/// there. A user function called with vectors of two sizes runs as one
/// copy per call site, equal to backend-cpu's.
#[test]
#[ignore = "child process of dense_linear_algebra_and_per_call_site_functions_through_the_stub_driver"]
fn child_dense_linear_algebra_and_per_call_site_functions() {
    use language::interp::ErrorKind;
    let dir = tempfile::tempdir().unwrap();
    let dense = case_from(
        dir.path(),
        "dense",
        "data { int N; array[N] real x; vector[N] y; matrix[2, 2] B; }\n\
         parameters { real<lower=0> rho; real r; real a; }\n\
         model {\n\
           matrix[N, N] K = gp_exp_quad_cov(x, 1.5, rho) + diag_matrix(rep_vector(0.1, N));\n\
           matrix[2, 2] S = [[1, r], [r, 1]];\n\
           S[1, 2] = S[1, 2] + a;\n\
           matrix[2, 2] L = cholesky_decompose(S);\n\
           y ~ multi_normal_cholesky(rep_vector(0, N), cholesky_decompose(K));\n\
           target += sum(mdivide_left_tri_low(L, B)) + sum(mdivide_right_tri_low(B, L));\n\
         }\n",
        r#"{"N": 4, "x": [0.1, 0.7, 1.3, 2.9], "y": [0.3, -0.2, 0.5, 1.1], "B": [[1, 2], [3, 4]]}"#,
    );
    // (log rho, r, a): fine; S not positive definite; S not symmetric.
    let points = [
        vec![0.2, 0.3, 0.0],
        vec![-0.4, -0.6, 0.0],
        vec![0.1, 1.5, 0.0],
        vec![0.1, 0.2, 0.5],
    ];
    let got = compare_points("dense", &dense, &points);
    let kinds: Vec<Option<ErrorKind>> = got
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            None,
            Some(ErrorKind::Rejection),
            Some(ErrorKind::Rejection)
        ]
    );

    let sizes = case_from(
        dir.path(),
        "sizes",
        "functions {\n\
           vector scaled(vector v, real s) {\n\
             int n = rows(v);\n\
             vector[n] out;\n\
             for (i in 1:n) out[i] = s * v[i] + i;\n\
             return out;\n\
           }\n\
         }\n\
         data { int N; int M; vector[N] u; vector[M] w; }\n\
         parameters { real<lower=0> s; real mu; }\n\
         model {\n\
           u ~ normal(scaled(u, s), 1 + mu * mu);\n\
           w ~ normal(mu + scaled(w, s), 2);\n\
         }\n",
        r#"{"N": 3, "M": 5, "u": [1, 2, 3], "w": [0.5, -1, 2, 0, 1]}"#,
    );
    // One size per variable only with a copy per call site.
    let pc = language::batch::pc::build(&sizes.cfg).unwrap();
    let capacities = vec![1; pc.num_ad_stacks as usize];
    assert!(backend_cuda::codegen::program::layout(&pc, &sizes.model, &capacities).is_err());
    let (specialised, _, _) = device_program(&sizes.cfg, &sizes.model).unwrap();
    assert!(specialised.functions.len() > pc.functions.len());
    let points: Vec<Vec<f64>> = (0..6).map(|l| theta(2, l, 5)).collect();
    let got = compare_points("sizes", &sizes, &points);
    assert!(got.iter().all(Result::is_ok), "{got:?}");
}

/// The ODE program of [`child_ode_solves_match_backend_cpu`].
const ODE_MODEL: &str = "functions {\n\
           vector sys(real t, vector y, real k, vector c, real d, int p) {\n\
             real a = -k * y[1] + c[1] * sqrt(square(y[2]) + 1);\n\
             real b = c[2] * exp(-y[1] / d) - log(1 + square(y[2])) / p;\n\
             real u = a * b;\n\
             u = u / (1 + square(u));\n\
             return [a, b - u + t / 10]';\n\
           }\n\
         }\n\
         data { int T; array[T] real ts; real d; int p; int steps; }\n\
         parameters { real<lower=0> k; vector[2] c; vector[2] y0; }\n\
         transformed parameters {\n\
           array[T] vector[2] y = ode_rk45_tol(sys, [y0[1], exp(y0[2])]', 0.0, ts, 1e-6, 1e-6, steps, k, c, d, p);\n\
         }\n\
         model {\n\
           k ~ lognormal(0, 1); c ~ normal(0, 1); y0 ~ normal(0, 1);\n\
           for (t in 1:T) target += -0.5 * (square(y[t, 1]) + square(y[t, 2]));\n\
         }\n";

#[test]
fn ode_solves_match_backend_cpu_through_the_stub_driver() {
    let out = run_child_on_the_device("child_ode_solves_match_backend_cpu");
    eprintln!("{out}");
}

/// An `ode_rk45_tol` solve whose system uses every operation the tape
/// compiles (+ − · / unary minus, exp, log, sqrt, square, a reassigned
/// local, int and real data arguments) with the initial state and a
/// scalar and a vector argument as parameters (so the coupled system
/// carries ∂y/∂y₀ and ∂y/∂θ): lane by lane the device's log density and
/// gradient are backend-cpu's (1e-12 relative), and lanes whose solve
/// fails — too many steps for a fast system, a non-finite initial state —
/// are rejected with backend-cpu's message.
#[test]
#[ignore = "child process of ode_solves_match_backend_cpu_through_the_stub_driver"]
fn child_ode_solves_match_backend_cpu() {
    use language::interp::ErrorKind;
    let dir = tempfile::tempdir().unwrap();
    let case = case_from(
        dir.path(),
        "ode",
        ODE_MODEL,
        r#"{"T": 4, "ts": [0.5, 1.0, 1.0, 3.0], "d": 2.5, "p": 3, "steps": 12}"#,
    );
    // (log k, c, y0): slow systems; a fast one (k = e^5) that needs more
    // than 12 steps between outputs; an initial state exp(800) = inf.
    let mut points = vec![
        vec![-1.0, 0.3, -0.2, 0.5, 0.1],
        vec![0.2, -0.7, 0.4, -1.0, -0.3],
        vec![-0.5, 1.1, 0.9, 0.2, 0.6],
        vec![5.0, 0.3, -0.2, 0.5, 0.1],
        vec![0.0, 0.3, -0.2, 0.5, 800.0],
        vec![2.5, 0.3, -0.2, 0.5, 0.1],
        vec![3.0, 0.3, -0.2, 0.5, 0.1],
        vec![3.5, 0.3, -0.2, 0.5, 0.1],
        vec![4.0, 0.3, -0.2, 0.5, 0.1],
    ];
    for l in 0..40 {
        points.push(theta(5, l, 7));
    }
    let cpu = reference(&case).unwrap();
    let want = cpu.log_density_gradient(&points, true).unwrap();
    let got = compare_points("ode", &case, &points);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if let (Err(g), Err(w)) = (g, w) {
            assert_eq!(g.message, w.message, "lane {i}");
        }
    }
    let ok = got.iter().filter(|r| r.is_ok()).count();
    assert!(ok >= 30, "only {ok} lanes solved");
    for (i, r) in got.iter().enumerate() {
        if let Err(e) = r {
            eprintln!("lane {i}: {:?} {}", e.kind, e.message);
        }
    }
    for (lane, message) in [
        (
            3,
            "ode_rk45_tol: the solution became infinite or NaN at time 0.1",
        ),
        (
            4,
            "ode_rk45_tol: initial state[2] is inf, but must be finite!",
        ),
        (
            5,
            "ode_rk45_tol: Failed to integrate to next output time (0.5) in less than max_num_steps steps",
        ),
    ] {
        let err = got[lane].as_ref().unwrap_err();
        assert_eq!(err.kind, ErrorKind::Rejection);
        assert_eq!(err.message, message);
    }
    // Unsorted output times reject every lane, with Stan's message.
    let unsorted = case_from(
        dir.path(),
        "unsorted",
        ODE_MODEL,
        r#"{"T": 4, "ts": [0.5, 0.25, 1.0, 3.0], "d": 2.5, "p": 3, "steps": 12}"#,
    );
    for r in compare_points("unsorted", &unsorted, &points[..3]) {
        let err = r.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Rejection);
        assert_eq!(
            err.message,
            "ode_rk45_tol: times is not a valid sorted vector. The element at 2 is 0.25, but \
             should be greater than or equal to the previous element, 0.5"
        );
    }
}

/// Solves the device does not run — BDF, and a system function the tape
/// cannot compile (a loop: the CPU runs it in the interpreter, whose
/// Jacobians differ in rounding) — are refused naming the solver or the
/// system, at the solve's line, never run.
#[test]
fn ode_solves_not_on_the_device_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = |solver: &str, body: &str| {
        format!(
            "functions {{\n  vector f(real t, vector y, real k) {{\n{body}\n  }}\n}}\n\
             data {{ array[2] real ts; }}\nparameters {{ real<lower=0> k; }}\n\
             model {{\n  array[2] vector[1] y = {solver}(f, [1.0]', 0.0, ts, k);\n  target += -square(y[2, 1] - 0.5);\n}}\n"
        )
    };
    let straight = "    return [-k * y[1]]';";
    let looped = "    vector[1] d = -k * y;\n    for (i in 1:1) d[i] = d[i] + 0;\n    return d;";
    for (name, solver, body, reason) in [
        ("bdf", "ode_bdf", straight, "the ODE solver `ode_bdf` (BDF)"),
        (
            "ckrk",
            "ode_ckrk",
            straight,
            "the ODE solver `ode_ckrk` (Cash–Karp)",
        ),
        (
            "loop",
            "ode_rk45",
            looped,
            "the ODE system `f` of `ode_rk45`",
        ),
    ] {
        let case = case_from(
            dir.path(),
            name,
            &model(solver, body),
            r#"{"ts": [0.5, 1.0]}"#,
        );
        match device_program(&case.cfg, &case.model) {
            Err(GradientDeviceError::Refused(ops)) => {
                assert!(!ops.is_empty());
                for op in &ops {
                    assert!(op.reason.contains(reason), "{name}: {}", op.reason);
                    let span = op.span.expect("the solve's position");
                    let source = model(solver, body);
                    let line = source[..span.start as usize].lines().count();
                    let solve = source.lines().position(|l| l.contains("= ode_")).unwrap();
                    assert_eq!(line, solve + 1, "{name}: {span:?}");
                }
            }
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => panic!("{name}: generated"),
        }
    }
}
