//! ODE solves on the device against backend-cpu, lane by lane through the
//! stub libcuda (see `gradient_device` for how the children run): each
//! solver the device runs (Dormand–Prince, Cash–Karp, BDF), initial and output
//! times that are parameters, Stan's failures with backend-cpu's messages,
//! and the solves still refused.

mod common;

use common::lanes::{case_from, compare_points, reference, theta};
use common::ode_models::{LEGACY_BDF_MODEL, TIMES_DATA, TIMES_MODEL, solver_model};
use common::run_child_on_the_device;

use codegen::gradient::{GeneratedCodeError, device_program};
use runtime::ErrorKind;

#[test]
fn ode_solves_match_backend_cpu_through_the_stub_driver() {
    let out = run_child_on_the_device("child_ode_solves_match_backend_cpu");
    eprintln!("{out}");
}

/// For `ode_rk45_tol`, `ode_ckrk_tol` and `ode_bdf_tol` ([`solver_model`]): lane by lane
/// the device's log density and gradient are backend-cpu's (1e-12
/// relative), and lanes whose solve fails — a system that blows up, too
/// many steps for a fast system, a non-finite initial state, unsorted
/// output times — are rejected with backend-cpu's message.
#[test]
#[ignore = "child process of ode_solves_match_backend_cpu_through_the_stub_driver"]
fn child_ode_solves_match_backend_cpu() {
    // (log k, c, y0): slow systems; a fast one (k = e^5); an initial state
    // exp(800) = inf; faster ones that need more than 12 steps between
    // outputs; a system whose derivative is infinite (exp(2000 / 2.5)).
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
        vec![0.0, 0.3, -0.2, -2000.0, 0.1],
    ];
    for l in 0..40 {
        points.push(theta(5, l, 7));
    }
    let dir = tempfile::tempdir().unwrap();
    for (solver, steps, failures) in [
        (
            "ode_rk45_tol",
            12,
            [
                (3, "the solution became infinite or NaN at time 0.1"),
                (4, "initial state[2] is inf, but must be finite!"),
                (
                    5,
                    "Failed to integrate to next output time (0.5) in less than max_num_steps steps",
                ),
            ],
        ),
        (
            "ode_ckrk_tol",
            12,
            [
                (
                    3,
                    "Failed to integrate to next output time (0.5) in less than max_num_steps steps",
                ),
                (4, "initial state[2] is inf, but must be finite!"),
                (9, "the solution became infinite or NaN at time 0.1"),
            ],
        ),
        (
            "ode_bdf_tol",
            200,
            [
                (4, "initial state[2] is inf, but must be finite!"),
                (9, "the solution became infinite or NaN at time 0"),
                (
                    12,
                    "Failed to integrate to next output time (3) in less than max_num_steps steps",
                ),
            ],
        ),
    ] {
        let model = solver_model(solver);
        let case = case_from(
            dir.path(),
            solver,
            &model,
            &format!(
                r#"{{"T": 4, "ts": [0.5, 1.0, 1.0, 3.0], "d": 2.5, "p": 3, "steps": {steps}}}"#
            ),
        );
        let cpu = reference(&case).unwrap();
        let want = cpu.log_density_gradient(&points, true).unwrap();
        let got = compare_points(solver, &case, &points);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            if let (Err(g), Err(w)) = (g, w) {
                assert_eq!(g.message, w.message, "{solver}: lane {i}");
            }
        }
        for (i, r) in got.iter().enumerate() {
            if let Err(e) = r {
                eprintln!("{solver}: lane {i}: {:?} {}", e.kind, e.message);
            }
        }
        let ok = got.iter().filter(|r| r.is_ok()).count();
        assert!(ok >= 30, "{solver}: only {ok} lanes solved");
        for (lane, message) in failures {
            let err = got[lane].as_ref().unwrap_err();
            assert_eq!(err.kind, ErrorKind::Rejection);
            assert_eq!(err.message, format!("{solver}: {message}"));
        }
        // Unsorted output times reject every lane, with Stan's message.
        let unsorted = case_from(
            dir.path(),
            &format!("{solver}_unsorted"),
            &model,
            r#"{"T": 4, "ts": [0.5, 0.25, 1.0, 3.0], "d": 2.5, "p": 3, "steps": 12}"#,
        );
        for r in compare_points("unsorted", &unsorted, &points[..3]) {
            let err = r.unwrap_err();
            assert_eq!(err.kind, ErrorKind::Rejection);
            assert_eq!(
                err.message,
                format!(
                    "{solver}: times is not a valid sorted vector. The element at 2 is 0.25, but \
                     should be greater than or equal to the previous element, 0.5"
                )
            );
        }
    }
}

#[test]
fn ode_parameter_times_match_backend_cpu_through_the_stub_driver() {
    let out = run_child_on_the_device("child_ode_parameter_times_match_backend_cpu");
    eprintln!("{out}");
}

/// [`TIMES_MODEL`]: initial and output times that are parameters, with
/// every other input a parameter, with only the times, and through the
/// deprecated interface, for every solver, and [`LEGACY_BDF_MODEL`]. Lane
/// by lane the device's log density and gradient are backend-cpu's (1e-12
/// relative), the derivatives along the times (τ scales them, t₀ is the
/// initial time) included.
#[test]
#[ignore = "child process of ode_parameter_times_match_backend_cpu_through_the_stub_driver"]
fn child_ode_parameter_times_match_backend_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_from(dir.path(), "times", TIMES_MODEL, TIMES_DATA);
    // (log k, c, y0, log τ, log(−t₀)).
    let mut points = vec![
        vec![-0.3, 0.4, -0.2, 0.5, 0.1, -0.5, -1.0],
        vec![0.2, -0.7, 0.4, -1.0, -0.3, 0.3, 0.2],
    ];
    for l in 0..40 {
        points.push(theta(7, l, 5));
    }
    let got = compare_points("times", &case, &points);
    let solved: Vec<&(f64, Vec<f64>)> = got.iter().filter_map(|r| r.as_ref().ok()).collect();
    for (i, r) in got.iter().enumerate() {
        if let Err(e) = r {
            eprintln!("lane {i}: {:?} {}", e.kind, e.message);
        }
    }
    assert!(solved.len() >= 30, "only {} lanes solved", solved.len());
    // The times' derivatives are there (the comparison covers them).
    for (_, grad) in &solved {
        assert!(grad[5] != 0.0 && grad[6] != 0.0, "{grad:?}");
    }
    let legacy = case_from(dir.path(), "legacy_bdf", LEGACY_BDF_MODEL, TIMES_DATA);
    let points: Vec<Vec<f64>> = (0..20).map(|l| theta(4, l, 9)).collect();
    let got = compare_points("legacy_bdf", &legacy, &points);
    let solved: Vec<&(f64, Vec<f64>)> = got.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert!(solved.len() >= 15, "only {} lanes solved", solved.len());
    for (_, grad) in &solved {
        assert!(grad[2] != 0.0 && grad[3] != 0.0, "{grad:?}");
    }
}

/// Solves the device does not run — a system function the tape cannot
/// compile (a loop: the CPU runs it in the interpreter, whose Jacobians
/// differ in rounding), with any solver — are refused naming the system
/// and the solver, at the solve's line, never run.
#[test]
fn ode_solves_not_on_the_device_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = |solver: &str, body: &str| {
        let control = if solver.ends_with("_tol") {
            "1e-6, 1e-6, 1000, "
        } else {
            ""
        };
        format!(
            "functions {{\n  vector f(real t, vector y, real k) {{\n{body}\n  }}\n}}\n\
             data {{ array[2] real ts; }}\nparameters {{ real<lower=0> k; }}\n\
             model {{\n  array[2] vector[1] y = {solver}(f, [1.0]', 0.0, ts, {control}k);\n  target += -square(y[2, 1] - 0.5);\n}}\n"
        )
    };
    let looped = "    vector[1] d = -k * y;\n    for (i in 1:1) d[i] = d[i] + 0;\n    return d;";
    for (name, solver, body, reason) in [
        (
            "loop",
            "ode_rk45",
            looped,
            "the ODE system `f` of `ode_rk45`",
        ),
        (
            "loop_ckrk",
            "ode_ckrk_tol",
            looped,
            "the ODE system `f` of `ode_ckrk_tol`",
        ),
        (
            "loop_bdf",
            "ode_bdf",
            looped,
            "the ODE system `f` of `ode_bdf`",
        ),
    ] {
        let case = case_from(
            dir.path(),
            name,
            &model(solver, body),
            r#"{"ts": [0.5, 1.0]}"#,
        );
        match device_program(&case.cfg, &case.model) {
            Err(GeneratedCodeError::Refused(ops)) => {
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
