//! Stan's ODE solvers through the whole pipeline (lowering, interpreter,
//! AD): every solver and interface against the closed form of
//! y' = −k·y, gradients (initial state, parameters, initial time, output
//! times) against the closed form's derivatives, and Stan's errors.

mod common;

use language::data::DataFile;
use language::{ad, mir};
use runtime::{ErrorKind, Model, RuntimeError};

const DATA: &str = r#"{"ts": [1.0, 2.5, 4.0]}"#;
const WEIGHTS: [f64; 3] = [1.5, 2.5, 3.5];

/// A model whose log density (without the Jacobian) is
/// Σᵢ wᵢ·y(tᵢ) for y' = −k·y, y(t0) = y0, solved by `solve` (an expression
/// of `y0v` (vector), `t0`, `ts`, `k`; `k` > 0 is a parameter, `y0` and,
/// with `free_times`, t0 and a shift s of the output times too).
fn decay_model(solve: &str, free_times: bool) -> String {
    let (times_params, t0, ts) = if free_times {
        (
            "real<upper=0.9> t0p;\n  real<lower=-0.5, upper=0.5> s;",
            "t0p",
            "ts_shifted",
        )
    } else {
        ("", "0.5", "ts")
    };
    let solve = solve.replace("T0", t0).replace("TS", ts);
    format!(
        r#"
functions {{
  vector decay(real t, vector y, real k) {{
    return -k * y;
  }}
  array[] real decay_old(real t, array[] real y, array[] real theta,
                         array[] real x_r, array[] int x_i) {{
    return {{-theta[1] * y[1]}};
  }}
}}
data {{
  array[3] real ts;
}}
parameters {{
  real<lower=0> k;
  real y0;
  {times_params}
}}
transformed parameters {{
  vector[1] y0v = [y0]';
  array[3] real ts_shifted;
  for (i in 1:3) ts_shifted[i] = ts[i] + {shift};
}}
model {{
  array[3] vector[1] y = {solve};
  for (i in 1:3) target += {w}[i] * y[i][1];
}}
"#,
        shift = if free_times { "s" } else { "0" },
        w = "{1.5, 2.5, 3.5}",
    )
}

/// The same solves through the deprecated interface return arrays.
fn legacy(name: &str, tol: &str) -> String {
    format!(
        "to_vectors({name}(decay_old, {{y0}}, T0, TS, {{k}}, rep_array(0.0, 0), rep_array(0, 0){tol}))"
    )
}

fn load(source: &str) -> (Model, mir::GradProgram) {
    let program = common::compile(source, "decay").unwrap_or_else(|e| panic!("{e}\n{source}"));
    let model = Model::new(&program, &DataFile::parse(DATA).unwrap()).unwrap();
    let grad = ad::gradient(&program).unwrap();
    (model, grad)
}

/// Closed form: (lp, d lp/d(k, y0, t0, s)) at k, y0, t0, s.
fn exact(k: f64, y0: f64, t0: f64, s: f64) -> (f64, [f64; 4]) {
    let ts = [1.0 + s, 2.5 + s, 4.0 + s];
    let mut lp = 0.0;
    let mut g = [0.0; 4];
    for (w, t) in WEIGHTS.iter().zip(ts) {
        let e = (-k * (t - t0)).exp();
        lp += w * y0 * e;
        g[0] += -w * y0 * (t - t0) * e;
        g[1] += w * e;
        g[2] += w * y0 * k * e;
        g[3] += -w * y0 * k * e;
    }
    (lp, g)
}

/// Every solver, both interfaces, default and given tolerances.
fn solves() -> Vec<String> {
    let mut out = Vec::new();
    for name in ["ode_rk45", "ode_ckrk", "ode_bdf", "ode_adams"] {
        out.push(format!("{name}(decay, y0v, T0, TS, k)"));
        out.push(format!(
            "{name}_tol(decay, y0v, T0, TS, 1e-9, 1e-9, 100000, k)"
        ));
    }
    for name in [
        "integrate_ode_rk45",
        "integrate_ode_bdf",
        "integrate_ode_adams",
    ] {
        out.push(legacy(name, ""));
        out.push(legacy(name, ", 1e-9, 1e-9, 1e5"));
    }
    out
}

/// `to_vectors` turns the deprecated interface's array[,] real into
/// array[] vector.
fn with_to_vectors(source: &str) -> String {
    source.replacen(
        "functions {",
        "functions {\n  array[] vector to_vectors(array[,] real a) {\n    array[size(a)] vector[1] out;\n    for (i in 1:size(a)) out[i] = to_vector(a[i]);\n    return out;\n  }",
        1,
    )
}

#[test]
fn every_solver_matches_the_closed_form_and_its_derivatives() {
    let (k, y0) = (0.7_f64, 2.0);
    let theta = [k.ln(), y0];
    let (lp_exact, g_exact) = exact(k, y0, 0.5, 0.0);
    for solve in solves() {
        let (model, grad) = load(&with_to_vectors(&decay_model(&solve, false)));
        let lp = model.log_density(&theta, false).unwrap();
        assert!(
            (lp - lp_exact).abs() < 1e-5 * lp_exact.abs(),
            "{solve}: lp {lp} vs {lp_exact}"
        );
        let (lp_ad, g) = model.log_density_gradient(&grad, &theta, false).unwrap();
        assert_eq!(lp_ad, lp, "{solve}");
        // d/d log k = k · d/dk
        let want = [k * g_exact[0], g_exact[1]];
        for (i, (a, b)) in g.iter().zip(want).enumerate() {
            assert!(
                (a - b).abs() < 1e-5 * b.abs().max(1.0),
                "{solve}: gradient[{i}] {a} vs {b}"
            );
        }
    }
}

#[test]
fn initial_time_and_output_times_are_differentiated() {
    let (k, y0, t0, s): (f64, f64, f64, f64) = (0.7, 2.0, 0.3, 0.2);
    // t0 < 0.9: t0 = 0.9 − exp(u); s in (−0.5, 0.5): logit scale.
    let u_t0 = (0.9 - t0).ln();
    let u_s = ((s + 0.5) / (0.5 - s)).ln();
    let theta = [k.ln(), y0, u_t0, u_s];
    let (lp_exact, g) = exact(k, y0, t0, s);
    let chain = [k, 1.0, -(0.9 - t0), (s + 0.5) * (0.5 - s)];
    for solve in solves() {
        let (model, grad) = load(&with_to_vectors(&decay_model(&solve, true)));
        let (lp, ours) = model.log_density_gradient(&grad, &theta, false).unwrap();
        assert!((lp - lp_exact).abs() < 1e-5 * lp_exact.abs(), "{solve}");
        for i in 0..4 {
            let want = g[i] * chain[i];
            assert!(
                (ours[i] - want).abs() < 1e-5 * want.abs().max(1.0),
                "{solve}: gradient[{i}] {} vs {want}",
                ours[i]
            );
        }
    }
}

/// The error `solve` gives at (k, y0) = (0.7, 2), run through the log
/// density and the gradient program (which must agree).
fn error_of(source: &str) -> RuntimeError {
    let (model, grad) = load(source);
    let theta = [0.7_f64.ln(), 2.0];
    let err = model.log_density(&theta, false).unwrap_err();
    let err_ad = model
        .log_density_gradient(&grad, &theta, false)
        .unwrap_err();
    assert_eq!(err.message, err_ad.message);
    err
}

#[test]
fn stan_errors_are_rejections_with_stans_messages() {
    let cases = [
        (
            "ode_rk45(decay, y0v, 2.5, ts, k)",
            "ode_rk45: initial time is 2.5, but must be less than 1",
        ),
        (
            "ode_bdf(decay, y0v, 0.5, {1.0, 3.0, 2.0}, k)",
            "ode_bdf: times is not a valid sorted vector. The element at 3 is 2, but should be \
             greater than or equal to the previous element, 3",
        ),
        (
            "ode_rk45_tol(decay, y0v, 0.5, ts, 1e-12, 1e-12, 3, k)",
            "ode_rk45_tol: Failed to integrate to next output time (1) in less than \
             max_num_steps steps",
        ),
        (
            "ode_ckrk_tol(decay, y0v, 0.5, ts, -1, 1e-6, 100, k)",
            "ode_ckrk_tol: relative_tolerance is -1, but must be positive finite!",
        ),
        (
            "ode_rk45(decay, y0v, 0.5, ts, k / 0.0)",
            "ode_rk45: ode parameters and data is inf, but must be finite!",
        ),
        (
            "ode_rk45(decay, y0v, 0.5, ts, k * sqrt(-1))",
            "ode_rk45: ode parameters and data is nan, but must be finite!",
        ),
    ];
    for (solve, message) in cases {
        let err = error_of(&decay_model(solve, false));
        assert!(err.is_rejection(), "{solve}: {err:?}");
        assert_eq!(err.message, message, "{solve}");
    }
    // A blow-up inside the integration: y' = y·(t − 1)/(1.5 − t)... is
    // not finite past t = 1.5.
    let blow_up = decay_model("ode_rk45(decay, y0v, 0.5, ts, k)", false)
        .replace("return -k * y;", "return -k * y * sqrt(1.5 - t);");
    let err = error_of(&blow_up);
    assert!(err.is_rejection(), "{err:?}");
    assert!(err.message.contains("infinite or NaN"), "{}", err.message);
}

#[test]
fn a_system_returning_the_wrong_size_is_fatal() {
    let source = decay_model("ode_rk45(decay, y0v, 0.5, ts, k)", false)
        .replace("return -k * y;", "return append_row(-k * y, 0);");
    let err = error_of(&source);
    assert_eq!(err.kind, ErrorKind::Fatal);
    assert_eq!(
        err.message,
        "ode_rk45: Size of dy_dt (2) and states (1) must match in size"
    );
}

#[test]
fn data_only_solves_need_no_derivatives_and_match_the_closed_form() {
    // In generated quantities everything is data: no sensitivities, and BDF
    // gets its Newton matrix from the system's reverse function.
    for name in ["ode_rk45", "ode_bdf", "ode_ckrk", "ode_adams"] {
        let source = format!(
            r#"
functions {{
  vector decay(real t, vector y, real k) {{ return -k * y; }}
}}
data {{ array[3] real ts; }}
parameters {{ real<lower=0> k; }}
generated quantities {{
  array[3] vector[1] y = {name}_tol(decay, [2.0]', 0.5, ts, 1e-10, 1e-10, 1000000, k);
}}
"#
        );
        let program = common::compile(&source, "gq").unwrap();
        let model = Model::new(&program, &DataFile::parse(DATA).unwrap()).unwrap();
        let draw = model
            .generated_quantities(&[0.7_f64.ln()], runtime::Rng::new(1, 0, 0))
            .unwrap();
        let (_, y) = draw.values.iter().find(|(n, _)| n == "y").unwrap();
        let mut got = Vec::new();
        y.flatten_reals(&mut got);
        for (t, v) in [1.0, 2.5, 4.0].iter().zip(got) {
            let want = 2.0 * (-0.7 * (t - 0.5_f64)).exp();
            assert!((v - want).abs() < 1e-8, "{name}: y({t}) = {v} vs {want}");
        }
    }
}

#[test]
fn solves_inside_user_functions_are_differentiated() {
    // The solve's inputs are the function's arguments; the gradient flows
    // through the function's reverse function into the solve's.
    let source = r#"
functions {
  vector decay(real t, vector y, real k) { return -k * y; }
  real weighted_solution(real y0, real k, array[] real ts) {
    array[3] vector[1] y = ode_bdf_tol(decay, [y0]', 0.5, ts, 1e-10, 1e-10, 1000000, k);
    return 1.5 * y[1][1] + 2.5 * y[2][1] + 3.5 * y[3][1];
  }
}
data { array[3] real ts; }
parameters { real<lower=0> k; real y0; }
model { target += weighted_solution(y0, k, ts); }
"#;
    let (model, grad) = load(source);
    let (k, y0) = (0.7_f64, 2.0);
    let (lp_exact, g) = exact(k, y0, 0.5, 0.0);
    let (lp, ours) = model
        .log_density_gradient(&grad, &[k.ln(), y0], false)
        .unwrap();
    assert!(
        (lp - lp_exact).abs() < 1e-7 * lp_exact.abs(),
        "{lp} vs {lp_exact}"
    );
    assert!(
        (ours[0] - k * g[0]).abs() < 1e-6,
        "{} vs {}",
        ours[0],
        k * g[0]
    );
    assert!((ours[1] - g[1]).abs() < 1e-6, "{} vs {}", ours[1], g[1]);
}
