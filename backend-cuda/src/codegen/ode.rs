//! ODE solves on the device: `ode_rk45` / `integrate_ode_rk45` (and
//! `ode_adams`, which bat runs with the same integrator), each lane's
//! thread integrating its own system.
//!
//! Why a mirror and not any Runge–Kutta: the device must give backend-cpu's
//! gradients to rounding (1e-12 relative), and an adaptive integrator's
//! result is only that close when it takes the same steps. So
//! [`ODE_SOURCE`] is `bat_math::ode::dopri5` operation for operation: the
//! same Butcher coefficients computed as the same double quotients, the
//! same stage sums in the same order, Boost's error norm, step-size
//! controller (`std::max` ignoring NaN), initial step 0.1, 500 tries per
//! step, the last step shortened to end on the last output time, Hairer's
//! dense output for the output times, `max_num_steps` counted between two
//! outputs, and a state that becomes non-finite stopping the solve. With
//! IEEE arithmetic and no fused multiply-adds (NVRTC `--fmad=false`, g++
//! `-ffp-contract=off`), step acceptance decisions are the CPU's: through
//! the CUDA-on-CPU shim (the same libm) bit for bit. On a GPU, libdevice's
//! `pow` (in the step-size controller) may move a step size in its last
//! bits, as its `exp` and `log` may move values: the steps then differ by
//! rounding, and the solution by far less than the tolerances.
//!
//! The right-hand side comes from the interpreter's own compiled form of
//! the system function, `language::interp::ode_tape::Tape`: [`System`]
//! emits its operations in order (values, then the forward-mode tangents
//! along the n states and m parameters), so f and both Jacobians are the
//! tape's to the bit, and the coupled sensitivity system is
//! `bat_math::ode::sensitivity::Coupled::derivative` with its sums in the
//! same order. A system the tape cannot compile runs in the interpreter on
//! the CPU (whose Jacobians differ in rounding): such a solve is refused on
//! the device, as are Cash–Karp (`ode_ckrk`), BDF and solves whose initial
//! time or output times are parameters.
//!
//! Stan's argument checks (`language::interp::ode`) run before the solve
//! with the same messages and kinds (rejections; an empty state or output
//! list is refused at generation, the sizes being fixed by the data). The
//! reverse mode's node (`adjoint=` in the PC IR) integrates the same
//! coupled system again (the CPU recalls the forward solve from its memo,
//! which is the same computation) and contracts the sensitivities with the
//! solution's adjoint at each output time as it is produced, summing in the
//! CPU's order.

use language::interp::ode_tape::{Op, Tape};
use language::mir::ode::{OdeMethod, OdeSolve};
use language::mir::{Expr, Program};
use language::value::Value;

use super::shape::{Inner, Shape};
use super::typing::{ShapeEnv, Unsupported, shape_of};

/// The integrator (a template over the right-hand side and the output
/// observer), in every kernel file's prelude.
pub const ODE_SOURCE: &str = r#"
// ---- ODE solves (codegen::ode): bat_math::ode::dopri5, operation for operation ----
#define BAT_ODE_MAX_STEPS 1
#define BAT_ODE_TOO_SMALL 2
#define BAT_ODE_NON_FINITE 3
#define BAT_DP_A2 (1.0 / 5.0)
#define BAT_DP_A3 (3.0 / 10.0)
#define BAT_DP_A4 (4.0 / 5.0)
#define BAT_DP_A5 (8.0 / 9.0)
#define BAT_DP_B21 (1.0 / 5.0)
#define BAT_DP_B31 (3.0 / 40.0)
#define BAT_DP_B32 (9.0 / 40.0)
#define BAT_DP_B41 (44.0 / 45.0)
#define BAT_DP_B42 (-56.0 / 15.0)
#define BAT_DP_B43 (32.0 / 9.0)
#define BAT_DP_B51 (19372.0 / 6561.0)
#define BAT_DP_B52 (-25360.0 / 2187.0)
#define BAT_DP_B53 (64448.0 / 6561.0)
#define BAT_DP_B54 (-212.0 / 729.0)
#define BAT_DP_B61 (9017.0 / 3168.0)
#define BAT_DP_B62 (-355.0 / 33.0)
#define BAT_DP_B63 (46732.0 / 5247.0)
#define BAT_DP_B64 (49.0 / 176.0)
#define BAT_DP_B65 (-5103.0 / 18656.0)
#define BAT_DP_C1 (35.0 / 384.0)
#define BAT_DP_C3 (500.0 / 1113.0)
#define BAT_DP_C4 (125.0 / 192.0)
#define BAT_DP_C5 (-2187.0 / 6784.0)
#define BAT_DP_C6 (11.0 / 84.0)
#define BAT_DP_DC1 (BAT_DP_C1 - 5179.0 / 57600.0)
#define BAT_DP_DC3 (BAT_DP_C3 - 7571.0 / 16695.0)
#define BAT_DP_DC4 (BAT_DP_C4 - 393.0 / 640.0)
#define BAT_DP_DC5 (BAT_DP_C5 - -92097.0 / 339200.0)
#define BAT_DP_DC6 (BAT_DP_C6 - 187.0 / 2100.0)
#define BAT_DP_DC7 (-1.0 / 40.0)
// Boost's less_eq_with_sign: t1 <= t2 up to machine epsilon, along dt.
__device__ inline bool bat_ode_leq(double t1, double t2, double dt) {
    if (dt > 0.0) return t1 - t2 <= 2.220446049250313e-16;
    return t2 - t1 <= 2.220446049250313e-16;
}
// std::max(a, b): b only if a < b (a NaN b is ignored).
__device__ inline double bat_ode_max(double a, double b) { return a < b ? b : a; }
// Rust's saturating `x as i64` (the deprecated interface's real max_num_steps).
__device__ inline long long bat_ode_steps(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return 9223372036854775807LL;
    if (x <= -9223372036854775808.0) return (-9223372036854775807LL - 1);
    return (long long)x;
}
// y' = f(t, y), y(t0) = z0 (n values) at the nt sorted times ts: calls
// observe(i, y(ts[i])) in order. w: 12 n doubles of work. Returns 0, or a
// BAT_ODE_* failure with its time in *fail_time.
template <class F, class O>
__device__ int bat_dopri5(F& f, O& observe, int n, double* w, const double* z0, double t0,
                          const double* ts, int nt, double rtol, double atol,
                          long long max_steps, double* fail_time) {
    double* x = w;
    double* dxdt = w + n;
    double* x_old = w + 2 * n;
    double* dxdt_old = w + 3 * n;
    double* k2 = w + 4 * n;
    double* k3 = w + 5 * n;
    double* k4 = w + 6 * n;
    double* k5 = w + 7 * n;
    double* k6 = w + 8 * n;
    double* x_tmp = w + 9 * n;
    double* xerr = w + 10 * n;
    double* out = w + 11 * n;
    for (int i = 0; i < 12 * n; ++i) w[i] = 0.0;
    for (int i = 0; i < n; ++i) x[i] = z0[i];
    double t = t0, t_old = t0, dt = 0.1;
    bool deriv_ready = false;
    const double last = ts[nt - 1];
    int next = 0;
    long long steps = 0;
    while (next < nt) {
        while (next < nt && bat_ode_leq(ts[next], t, dt)) {
            // Hairer's dense output of DOPRI5 in the last step.
            const double tt = ts[next];
            const double h = t - t_old;
            const double theta = (tt - t_old) / h;
            const double x1 = 5.0 * (2558722523.0 - 31403016.0 * theta) / 11282082432.0;
            const double x3 = 100.0 * (882725551.0 - 15701508.0 * theta) / 32700410799.0;
            const double x4 = 25.0 * (443332067.0 - 31403016.0 * theta) / 1880347072.0;
            const double x5 = 32805.0 * (23143187.0 - 3489224.0 * theta) / 199316789632.0;
            const double x6 = 55.0 * (29972135.0 - 7076736.0 * theta) / 822651844.0;
            const double x7 = 10.0 * (7414447.0 - 829305.0 * theta) / 29380423.0;
            const double theta_m_1 = theta - 1.0;
            const double theta_sq = theta * theta;
            const double a = theta_sq * (3.0 - 2.0 * theta);
            const double b = theta_sq * theta_m_1;
            const double c = theta_sq * theta_m_1 * theta_m_1;
            const double d = theta * theta_m_1 * theta_m_1;
            const double b1 = h * (a * BAT_DP_C1 - c * x1 + d);
            const double b3 = h * (a * BAT_DP_C3 + c * x3);
            const double b4 = h * (a * BAT_DP_C4 - c * x4);
            const double b5 = h * (a * BAT_DP_C5 + c * x5);
            const double b6 = h * (a * BAT_DP_C6 - c * x6);
            const double b7 = h * (b + c * x7);
            for (int i = 0; i < n; ++i)
                out[i] = x_old[i] + b1 * dxdt_old[i] + b3 * k3[i] + b4 * k4[i] + b5 * k5[i]
                    + b6 * k6[i] + b7 * dxdt[i];
            observe(next, (const double*)out);
            ++next;
            steps = 0;
        }
        if (next == nt) break;
        if (steps >= max_steps) { *fail_time = ts[next]; return BAT_ODE_MAX_STEPS; }
        ++steps;
        if (!bat_ode_leq(t + dt, last, dt)) {
            // The last step ends exactly on the last output time.
            dt = last - t;
            deriv_ready = false;
        }
        if (!deriv_ready) { f(t, (const double*)x, dxdt); deriv_ready = true; }
        t_old = t;
        int tries = 0;
        for (;;) {
            // The six stages: the new state into x_old, its derivative into
            // dxdt_old, the error into xerr (Boost's FSAL try_step).
            const double* dd = dxdt;
            for (int i = 0; i < n; ++i) x_tmp[i] = x[i] + dt * BAT_DP_B21 * dd[i];
            f(t + dt * BAT_DP_A2, (const double*)x_tmp, k2);
            for (int i = 0; i < n; ++i)
                x_tmp[i] = x[i] + dt * BAT_DP_B31 * dd[i] + dt * BAT_DP_B32 * k2[i];
            f(t + dt * BAT_DP_A3, (const double*)x_tmp, k3);
            for (int i = 0; i < n; ++i)
                x_tmp[i] = x[i] + dt * BAT_DP_B41 * dd[i] + dt * BAT_DP_B42 * k2[i]
                    + dt * BAT_DP_B43 * k3[i];
            f(t + dt * BAT_DP_A4, (const double*)x_tmp, k4);
            for (int i = 0; i < n; ++i)
                x_tmp[i] = x[i] + dt * BAT_DP_B51 * dd[i] + dt * BAT_DP_B52 * k2[i]
                    + dt * BAT_DP_B53 * k3[i] + dt * BAT_DP_B54 * k4[i];
            f(t + dt * BAT_DP_A5, (const double*)x_tmp, k5);
            for (int i = 0; i < n; ++i)
                x_tmp[i] = x[i] + dt * BAT_DP_B61 * dd[i] + dt * BAT_DP_B62 * k2[i]
                    + dt * BAT_DP_B63 * k3[i] + dt * BAT_DP_B64 * k4[i] + dt * BAT_DP_B65 * k5[i];
            f(t + dt, (const double*)x_tmp, k6);
            for (int i = 0; i < n; ++i)
                x_old[i] = x[i] + dt * BAT_DP_C1 * dd[i] + dt * BAT_DP_C3 * k3[i]
                    + dt * BAT_DP_C4 * k4[i] + dt * BAT_DP_C5 * k5[i] + dt * BAT_DP_C6 * k6[i];
            f(t + dt, (const double*)x_old, dxdt_old);
            for (int i = 0; i < n; ++i)
                xerr[i] = dt * BAT_DP_DC1 * dd[i] + dt * BAT_DP_DC3 * k3[i] + dt * BAT_DP_DC4 * k4[i]
                    + dt * BAT_DP_DC5 * k5[i] + dt * BAT_DP_DC6 * k6[i] + dt * BAT_DP_DC7 * dxdt_old[i];
            // Boost's error norm and step-size controller.
            const double a_dxdt = fabs(dt);
            double err = 0.0;
            for (int i = 0; i < n; ++i) {
                const double e = fabs(xerr[i]) / (atol + rtol * (fabs(x[i]) + a_dxdt * fabs(dd[i])));
                err = bat_ode_max(err, fabs(e));
            }
            bool accepted;
            if (err > 1.0) {
                const double exponent = -1.0 / 3.0;
                dt = dt * bat_ode_max(9.0 / 10.0 * pow(err, exponent), 1.0 / 5.0);
                accepted = false;
            } else {
                t += dt;
                if (err < 0.5) {
                    err = bat_ode_max(pow(5.0, -5.0), err);
                    const double exponent = -1.0 / 5.0;
                    dt = dt * (9.0 / 10.0 * pow(err, exponent));
                }
                accepted = true;
            }
            if (tries >= 500) { *fail_time = t; return BAT_ODE_TOO_SMALL; }
            ++tries;
            if (accepted) break;
        }
        double* s = x; x = x_old; x_old = s;
        s = dxdt; dxdt = dxdt_old; dxdt_old = s;
        for (int i = 0; i < n; ++i)
            if (!isfinite(x[i]) || !isfinite(dxdt[i])) { *fail_time = t; return BAT_ODE_NON_FINITE; }
    }
    return 0;
}
"#;

/// The shape of a solve's value: the solution (`array[T] vector[n]`, or
/// `array[T, n] real` for `integrate_ode_*`), or in reverse mode the tuple
/// of the autodiff inputs' adjoints (each of its input's shape).
pub fn solution_shape(env: &dyn ShapeEnv, call: &OdeSolve) -> Result<Shape, Unsupported> {
    let n = shape_of(env, &call.initial_state)?.len();
    let times = shape_of(env, &call.times)?.len();
    if call.solution_adjoint.is_none() {
        return Ok(if call.legacy {
            Shape {
                arrays: vec![times, n],
                ..Shape::REAL
            }
        } else {
            Shape {
                arrays: vec![times],
                ..Shape::of(Inner::Vector(n))
            }
        });
    }
    let components = call
        .autodiff_operands()
        .into_iter()
        .map(|e| shape_of(env, e).map(Shape::real))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Shape::tuple_of(components))
}

/// A solve the device runs: its sizes and its system's tape.
pub(crate) struct Solve {
    /// States n, sensitivity columns for the initial state n₀ and the
    /// parameters m.
    pub n: usize,
    pub n0: usize,
    pub m: usize,
    /// Output times.
    pub times: usize,
    /// Flattened length of each system argument.
    pub arg_lens: Vec<usize>,
    pub tape: Tape,
}

impl Solve {
    /// Length of the coupled state.
    pub fn coupled(&self) -> usize {
        self.n * (1 + self.n0 + self.m)
    }
}

/// The solve `call` as the device runs it, or why it stays on the CPU.
pub(crate) fn plan(
    program: &Program,
    env: &dyn ShapeEnv,
    call: &OdeSolve,
) -> Result<Solve, Unsupported> {
    let name = &call.name;
    match call.method {
        OdeMethod::Rk45 | OdeMethod::Adams => {}
        OdeMethod::Ckrk => {
            return Err(format!(
                "the ODE solver `{name}` (Cash–Karp) is not on the device (only ode_rk45/ode_adams are)"
            ));
        }
        OdeMethod::Bdf => {
            return Err(format!(
                "the ODE solver `{name}` (BDF) is not on the device (only ode_rk45/ode_adams are)"
            ));
        }
    }
    let inputs = call.autodiff_inputs();
    if inputs.initial_time || inputs.times {
        return Err(format!(
            "`{name}` with a parameter as initial time or output times is not on the device"
        ));
    }
    let n = shape_of(env, &call.initial_state)?.len();
    let times = shape_of(env, &call.times)?.len();
    if n == 0 || times == 0 {
        return Err(format!(
            "`{name}` with an empty initial state or no output times"
        ));
    }
    let arg_shapes = call
        .args
        .iter()
        .map(|a| shape_of(env, a))
        .collect::<Result<Vec<_>, _>>()?;
    let m: usize = arg_shapes
        .iter()
        .zip(&inputs.args)
        .filter(|(_, on)| **on)
        .map(|(s, _)| s.len())
        .sum();
    let n0 = if inputs.initial_state_sensitivity() {
        n
    } else {
        0
    };
    if n0 + m > 0 && call.sensitivity.is_none() {
        return Err(format!(
            "`{name}` has no derivative function for its system"
        ));
    }
    let system = &program.functions[call.system.0 as usize];
    // The tape is compiled from the arguments' values on the CPU; only
    // their shapes decide what it is.
    let dummies: Vec<Value> = arg_shapes.iter().map(dummy).collect();
    let tape = Tape::compile(system, &dummies, &inputs.args, n)
        .filter(|t| t.params() == m)
        .ok_or_else(|| {
            format!(
                "the ODE system `{}` of `{name}` is not straight-line scalar code (declarations of + - * / exp log sqrt square on indexed states and arguments, returning a literal): the CPU runs it in the interpreter",
                system.name
            )
        })?;
    Ok(Solve {
        n,
        n0,
        m,
        times,
        arg_lens: arg_shapes.iter().map(Shape::len).collect(),
        tape,
    })
}

/// A value of `shape` (zeros) with the structure the interpreter's would
/// have.
fn dummy(shape: &Shape) -> Value {
    let scalar = if shape.int {
        Value::Int(0)
    } else {
        Value::Real(0.0)
    };
    let inner = match shape.inner {
        Inner::Scalar => scalar,
        Inner::Vector(k) => Value::Vector(vec![0.0; k]),
        Inner::RowVector(k) => Value::RowVector(vec![0.0; k]),
        Inner::Matrix(r, c) => Value::Matrix {
            rows: r,
            cols: c,
            data: vec![0.0; r * c],
        },
    };
    shape
        .arrays
        .iter()
        .rev()
        .fold(inner, |v, &k| Value::Array(vec![v; k]))
}

/// C code of a solve's right-hand side: a lambda `rhs(t, z, dz)` over
/// thread-local slot arrays `v` (values) and `g` (tangents), and the lines
/// that set them up once per solve from the argument arrays `args[k]`.
pub(crate) struct System {
    /// Declarations and initialisation (before the lambda).
    pub setup: String,
    /// `auto NAME = [&](double t, const double* z, double* dz) { ... };`
    pub lambda: String,
}

/// The system of `solve` as C: `name` is the lambda, `prefix` names its
/// arrays, `args[k]` is the C array holding system argument k.
pub(crate) fn system(solve: &Solve, name: &str, prefix: &str, args: &[String]) -> System {
    let tape = &solve.tape;
    let (n, n0, m) = (solve.n, solve.n0, solve.m);
    let plain = n0 + m == 0;
    let slots = tape.slots();
    let d = tape.dirs();
    let (v, g) = (format!("{prefix}v"), format!("{prefix}g"));
    let mut setup =
        format!("double {v}[{slots}]; for (int i = 0; i < {slots}; ++i) {v}[i] = 0.0;\n");
    for (k, first) in tape.arg_slots().iter().enumerate() {
        if let Some(first) = first {
            let len = solve.arg_lens[k];
            setup.push_str(&format!(
                "for (int i = 0; i < {len}; ++i) {v}[{first} + i] = {}[i];\n",
                args[k]
            ));
        }
    }
    for (slot, x) in tape.constants() {
        setup.push_str(&format!("{v}[{slot}] = {};\n", super::real_literal(x)));
    }
    if !plain {
        setup.push_str(&format!(
            "double {g}[{}]; for (int i = 0; i < {}; ++i) {g}[i] = 0.0;\n",
            slots * d,
            slots * d
        ));
        for &(slot, dir) in tape.seeds() {
            setup.push_str(&format!("{g}[{}] = 1.0;\n", slot * d + dir));
        }
    }
    let mut body = format!("{v}[0] = t; for (int i = 0; i < {n}; ++i) {v}[1 + i] = z[i];\n");
    for &(r, op) in tape.ops() {
        let value = match op {
            Op::Add(a, b) => format!("{v}[{a}] + {v}[{b}]"),
            Op::Sub(a, b) => format!("{v}[{a}] - {v}[{b}]"),
            Op::Mul(a, b) => format!("{v}[{a}] * {v}[{b}]"),
            Op::Div(a, b) => format!("{v}[{a}] / {v}[{b}]"),
            Op::Neg(a) => format!("-{v}[{a}]"),
            Op::Exp(a) => format!("exp({v}[{a}])"),
            Op::Log(a) => format!("log({v}[{a}])"),
            Op::Sqrt(a) => format!("sqrt({v}[{a}])"),
            Op::Square(a) => format!("{v}[{a}] * {v}[{a}]"),
        };
        body.push_str(&format!("{v}[{r}] = {value};\n"));
    }
    if plain {
        for (i, &s) in tape.outputs().iter().enumerate() {
            body.push_str(&format!("dz[{i}] = {v}[{s}];\n"));
        }
    } else {
        // Forward-mode tangents, as Tape::eval_with_jacobians.
        for &(r, op) in tape.ops() {
            let row = |s: usize| format!("{g}[{} + k]", s * d);
            let out = row(r);
            let tangent = match op {
                Op::Add(a, b) => format!("{} + {}", row(a), row(b)),
                Op::Sub(a, b) => format!("{} - {}", row(a), row(b)),
                Op::Mul(a, b) => format!("{} * {v}[{b}] + {v}[{a}] * {}", row(a), row(b)),
                Op::Div(a, b) => {
                    format!("{} / {v}[{b}] - {v}[{r}] * {} / {v}[{b}]", row(a), row(b))
                }
                Op::Neg(a) => format!("-{}", row(a)),
                Op::Exp(a) => format!("{} * {v}[{r}]", row(a)),
                Op::Log(a) => format!("{} / {v}[{a}]", row(a)),
                Op::Sqrt(a) => format!("{} / (2.0 * {v}[{r}])", row(a)),
                Op::Square(a) => format!("2.0 * {v}[{a}] * {}", row(a)),
            };
            body.push_str(&format!(
                "for (int k = 0; k < {d}; ++k) {out} = {tangent};\n"
            ));
        }
        // Coupled::derivative: f, then S' = J_y S and P' = J_y P + J_θ,
        // with J_y[i][k] = g[out_i][k], J_θ[i][j] = g[out_i][n + j].
        for (i, &s) in tape.outputs().iter().enumerate() {
            body.push_str(&format!("dz[{i}] = {v}[{s}];\n"));
        }
        for (i, &s) in tape.outputs().iter().enumerate() {
            let jy = |k: &str| format!("{g}[{} + {k}]", s * d);
            body.push_str(&format!(
                "for (int j = 0; j < {n0}; ++j) {{ double acc = 0.0; for (int k = 0; k < {n}; ++k) acc += z[{n} + {n} * j + k] * {}; dz[{n} + {n} * j + {i}] = acc; }}\n",
                jy("k")
            ));
            body.push_str(&format!(
                "for (int j = 0; j < {m}; ++j) {{ double acc = {g}[{} + {n} + j]; for (int k = 0; k < {n}; ++k) acc += z[{} + {n} * j + k] * {}; dz[{} + {n} * j + {i}] = acc; }}\n",
                s * d,
                n + n * n0,
                jy("k"),
                n + n * n0,
            ));
        }
    }
    let lambda = format!(
        "auto {name} = [&](double t, const double* z, double* dz) {{\n{body}}};\n(void){name};\n"
    );
    System { setup, lambda }
}

/// The operand expressions of a solve, by role.
pub(crate) fn control(call: &OdeSolve) -> Option<[&Expr; 3]> {
    match call.control.as_slice() {
        [r, a, m] => Some([r, a, m]),
        _ => None,
    }
}
