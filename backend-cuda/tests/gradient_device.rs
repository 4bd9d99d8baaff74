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

use common::lanes::{
    Case, case_from, check_lane, compare_points, compare_points_with, load, reference, theta,
};
use common::models::model_files;
use common::run_child_on_the_device;
use std::path::PathBuf;

use backend_cuda::gradient::GradientDevice;
use codegen::gradient::{GeneratedCodeError, device_program};

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

/// (name, model, data) of every example with data and posteriordb model
/// (`BAT_CUDA_ONLY` keeps the names containing it).
fn cases() -> Vec<(String, PathBuf, PathBuf)> {
    let mut out = model_files("examples/");
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
            Err(GeneratedCodeError::Refused(ops)) => {
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
    use runtime::ErrorKind;
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
    use runtime::ErrorKind;
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
    assert!(codegen::program::layout(&pc, &sizes.model, &capacities).is_err());
    let (specialised, _, _) = device_program(&sizes.cfg, &sizes.model).unwrap();
    assert!(specialised.functions.len() > pc.functions.len());
    let points: Vec<Vec<f64>> = (0..6).map(|l| theta(2, l, 5)).collect();
    let got = compare_points("sizes", &sizes, &points);
    assert!(got.iter().all(Result::is_ok), "{got:?}");
}
