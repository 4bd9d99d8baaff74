//! Small ODE models the device tests run (`ode_device`) and compile with
//! NVRTC (`codegen`).

/// A solve with `solver` (an `ode_*_tol` taking `(rtol, atol, steps)`)
/// whose system uses every operation the tape compiles (+ − · / unary
/// minus, exp, log, sqrt, square, a reassigned local, int and real data
/// arguments), with the initial state and a scalar and a vector argument
/// as parameters (so the coupled system carries ∂y/∂y₀ and ∂y/∂θ).
/// Data: `T`, `ts`, `d`, `p`, `steps`.
pub fn solver_model(solver: &str) -> String {
    "functions {\n\
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
       array[T] vector[2] y = SOLVER(sys, [y0[1], exp(y0[2])]', 0.0, ts, 1e-6, 1e-6, steps, k, c, d, p);\n\
     }\n\
     model {\n\
       k ~ lognormal(0, 1); c ~ normal(0, 1); y0 ~ normal(0, 1);\n\
       for (t in 1:T) target += -0.5 * (square(y[t, 1]) + square(y[t, 2]));\n\
     }\n"
        .replace("SOLVER", solver)
}

/// Solves whose initial time and output times are parameters: `ya`
/// (`ode_ckrk_tol`) differentiates every input; `yb` (`ode_ckrk`) only its
/// initial time and times (the coupled system carries ∂y/∂y₀ for the
/// initial time without an adjoint of the data initial state); `yc`
/// (`ode_bdf_tol`) only its times (the plain system, whose Jacobian BDF's
/// Newton iterations still use); `yl` (`integrate_ode_rk45`, the
/// deprecated interface) its times and parameters. Data: [`TIMES_DATA`].
/// (One BDF solve: its integrator is large for ptxas.)
pub const TIMES_MODEL: &str = "functions {\n\
       vector sys(real t, vector y, real k, vector c) {\n\
         real a = -k * y[1] + c[1] * y[2];\n\
         real b = c[2] * exp(-y[1] / 2) - y[2] * t / 10;\n\
         return [a, b]';\n\
       }\n\
       array[] real sysl(real t, array[] real y, array[] real th, array[] real xr, array[] int xi) {\n\
         real a = -th[1] * y[1] + xr[1] * y[2];\n\
         real b = th[2] * y[1] - y[2] / xi[1];\n\
         return {a, b};\n\
       }\n\
     }\n\
     data { int T; vector[2] yd; real kd; vector[2] cd; array[1] real xr; array[1] int xi; }\n\
     parameters { real<lower=0> k; vector[2] c; vector[2] y0; real<lower=0> tau; real<upper=0> t0; }\n\
     transformed parameters {\n\
       array[T] real ts;\n\
       array[T] vector[2] ya;\n\
       array[T] vector[2] yb;\n\
       array[T] vector[2] yc;\n\
       array[T, 2] real yl;\n\
       for (t in 1:T) ts[t] = tau * t;\n\
       ya = ode_ckrk_tol(sys, y0, t0, ts, 1e-6, 1e-6, 1000, k, c);\n\
       yb = ode_ckrk(sys, yd, t0, ts, kd, cd);\n\
       yc = ode_bdf_tol(sys, yd, 0.0, ts, 1e-7, 1e-7, 1000, kd, cd);\n\
       yl = integrate_ode_rk45(sysl, {1.0, 0.5}, 0.0, ts, {k, c[1]}, xr, xi);\n\
     }\n\
     model {\n\
       k ~ lognormal(0, 1); c ~ normal(0, 1); y0 ~ normal(0, 1);\n\
       tau ~ lognormal(0, 0.5); t0 ~ normal(0, 1);\n\
       for (t in 1:T) target += -0.5 * (square(ya[t, 1]) + square(ya[t, 2]) + square(yb[t, 1] - 1)\n\
         + square(yc[t, 2]) + square(yl[t, 1]));\n\
     }\n";

/// The data of [`TIMES_MODEL`].
pub const TIMES_DATA: &str =
    r#"{"T": 3, "yd": [1.0, 0.5], "kd": 0.7, "cd": [0.3, -0.4], "xr": [0.2], "xi": [3]}"#;

/// `integrate_ode_bdf` (the deprecated interface) with its initial time,
/// output times and parameters autodiff. Data: [`TIMES_DATA`].
pub const LEGACY_BDF_MODEL: &str = "functions {\n\
       array[] real sysl(real t, array[] real y, array[] real th, array[] real xr, array[] int xi) {\n\
         real a = -th[1] * y[1] + xr[1] * y[2];\n\
         real b = th[2] * y[1] - y[2] / xi[1];\n\
         return {a, b};\n\
       }\n\
     }\n\
     data { int T; vector[2] yd; real kd; vector[2] cd; array[1] real xr; array[1] int xi; }\n\
     parameters { real<lower=0> k; real c; real<lower=0> tau; real<upper=0> t0; }\n\
     transformed parameters {\n\
       array[T] real ts;\n\
       array[T, 2] real y;\n\
       for (t in 1:T) ts[t] = tau * t;\n\
       y = integrate_ode_bdf(sysl, {1.0, 0.5}, t0, ts, {k, c}, xr, xi);\n\
     }\n\
     model {\n\
       k ~ lognormal(0, 1); c ~ normal(0, 1); tau ~ lognormal(0, 0.5); t0 ~ normal(0, 1);\n\
       for (t in 1:T) target += -0.5 * (square(y[t, 1]) + square(y[t, 2] - 0.5));\n\
     }\n";
