//! ODE solves on the device against backend-cpu, lane by lane through the
//! stub libcuda (see `gradient_device` for how the children run), and the
//! solves still refused.

mod common;

use common::lanes::{case_from, compare_points, reference, theta};
use common::run_child_on_the_device;

use backend_cuda::gradient::{GradientDeviceError, device_program};

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
