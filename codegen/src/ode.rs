//! ODE solves on the device: `ode_rk45` / `integrate_ode_rk45` (and
//! `ode_adams`, which bat runs with the same integrator), `ode_ckrk` and
//! `ode_bdf` / `integrate_ode_bdf`, each lane's thread integrating its own
//! system.
//!
//! Why a mirror and not any Runge–Kutta: the device must give backend-cpu's
//! gradients to rounding (1e-12 relative), and an adaptive integrator's
//! result is only that close when it takes the same steps. So
//! [`ODE_SOURCE`] (`super::ode_integrators`) is `bat_math::ode::dopri5`
//! and `bat_math::ode::cash_karp` operation for operation (and
//! `super::ode_bdf` is `bat_math::ode::bdf`, see there): the same
//! Butcher coefficients computed as the same double quotients, the same
//! stage sums in the same order, Boost's error norm, step-size controller
//! (`std::max` ignoring NaN), initial step 0.1, 500 tries per step, each
//! solver's way to the output times (Dormand–Prince: the last step
//! shortened to end on the last output time and Hairer's dense output;
//! Cash–Karp: each step cut to end on the next output time),
//! `max_num_steps` counted between two outputs as each solver counts it,
//! and a state that becomes non-finite stopping the solve. With IEEE
//! arithmetic and no fused multiply-adds (NVRTC `--fmad=false`, g++
//! `-ffp-contract=off`), step acceptance decisions are the CPU's: through
//! the CUDA-on-CPU shim (the same libm) bit for bit. On a GPU, libdevice's
//! `pow` (in the step-size controller) may move a step size in its last
//! bits, as its `exp` and `log` may move values: the steps then differ by
//! rounding, and the solution by far less than the tolerances.
//!
//! The right-hand side comes from the interpreter's own compiled form of
//! the system function, `runtime::ode_tape::Tape`: [`System`]
//! emits its operations in order (values, then the forward-mode tangents
//! along the n states and m parameters), so f and both Jacobians are the
//! tape's to the bit, and the coupled sensitivity system is
//! `bat_math::ode::sensitivity::Coupled::derivative` with its sums in the
//! same order; BDF's Newton matrix takes ∂f/∂y from the same tangents
//! (`NAME_jac`, as `StiffSystem::jacobian`). A system the tape cannot
//! compile runs in the interpreter on the CPU (whose Jacobians differ in
//! rounding): such a solve is refused on the device.
//!
//! Stan's argument checks (`runtime::ode`) run before the solve
//! with the same messages and kinds (rejections; an empty state or output
//! list is refused at generation, the sizes being fixed by the data). The
//! reverse mode's node (`adjoint=` in the PC IR) integrates the same
//! coupled system again (the CPU recalls the forward solve from its memo,
//! which is the same computation) and contracts the sensitivities with the
//! solution's adjoint at each output time as it is produced, summing in the
//! CPU's order (`runtime::ode::adjoints`): ∂/∂y₀ and ∂/∂θ from the
//! sensitivity columns; an initial time that is a parameter gets
//! Σᵢ Σₖ ȳᵢ[k]·(−Σⱼ f(t₀, y₀)ⱼ·∂y_k/∂y₀ⱼ) (the coupled system then carries
//! ∂y/∂y₀, as Stan's does); output times that are parameters get
//! Σₖ ȳᵢ[k]·f(tᵢ, y(tᵢ))ₖ, f evaluated by the tape's values alone.

use language::mir::ode::{OdeMethod, OdeSolve};
use language::mir::{Expr, Program};
use language::value::Value;
use runtime::ode_tape::{Op, Tape};

use super::shape::{Inner, Shape};
use super::typing::{ShapeEnv, Unsupported, shape_of};

pub use super::ode_integrators::ODE_SOURCE;

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

/// The device integrator of a solve (see [`ODE_SOURCE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Integrator {
    DormandPrince,
    CashKarp,
    /// Also takes the Jacobian of the states (`bat_bdf`).
    Bdf,
}

impl Integrator {
    /// The C function template.
    pub fn function(self) -> &'static str {
        match self {
            Integrator::DormandPrince => "bat_dopri5",
            Integrator::CashKarp => "bat_cash_karp",
            Integrator::Bdf => "bat_bdf",
        }
    }

    /// Work doubles for `coupled` states in blocks of `n` (`BAT_*_WORK`
    /// in the source).
    pub fn work(self, coupled: usize, n: usize) -> usize {
        match self {
            Integrator::DormandPrince => 12 * coupled,
            Integrator::CashKarp => 10 * coupled,
            Integrator::Bdf => 17 * coupled + 2 * n * n + n,
        }
    }
}

/// A solve the device runs: its integrator, sizes and its system's tape.
pub(crate) struct Solve {
    pub integrator: Integrator,
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
    let integrator = match call.method {
        OdeMethod::Rk45 | OdeMethod::Adams => Integrator::DormandPrince,
        OdeMethod::Ckrk => Integrator::CashKarp,
        OdeMethod::Bdf => Integrator::Bdf,
    };
    let inputs = call.autodiff_inputs();
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
    // BDF's Newton matrix needs the Jacobian even of a plain system (the
    // CPU refuses to run without the system's derivative function).
    if (n0 + m > 0 || integrator == Integrator::Bdf) && call.sensitivity.is_none() {
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
        integrator,
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
    /// `NAME_f`: f(t, y) alone into dz (the tape's values, as its `eval`),
    /// for the adjoints of parameter times.
    pub values: String,
    /// BDF: `NAME_jac`, ∂f/∂y (n × n, row-major) into dz.
    pub jacobian: Option<String>,
}

/// The system of `solve` as C: `name` is the lambda, `prefix` names its
/// arrays, `args[k]` is the C array holding system argument k.
pub(crate) fn system(solve: &Solve, name: &str, prefix: &str, args: &[String]) -> System {
    let tape = &solve.tape;
    let (n, n0, m) = (solve.n, solve.n0, solve.m);
    let plain = n0 + m == 0;
    let with_jacobian = solve.integrator == Integrator::Bdf;
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
    if !plain || with_jacobian {
        setup.push_str(&format!(
            "double {g}[{}]; for (int i = 0; i < {}; ++i) {g}[i] = 0.0;\n",
            slots * d,
            slots * d
        ));
        for &(slot, dir) in tape.seeds() {
            setup.push_str(&format!("{g}[{}] = 1.0;\n", slot * d + dir));
        }
    }
    let mut values = format!("{v}[0] = t; for (int i = 0; i < {n}; ++i) {v}[1 + i] = z[i];\n");
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
        values.push_str(&format!("{v}[{r}] = {value};\n"));
    }
    let outputs = |body: &mut String| {
        for (i, &s) in tape.outputs().iter().enumerate() {
            body.push_str(&format!("dz[{i}] = {v}[{s}];\n"));
        }
    };
    // Forward-mode tangents, as Tape::eval_with_jacobians.
    let mut tangents = String::new();
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
        tangents.push_str(&format!(
            "for (int k = 0; k < {d}; ++k) {out} = {tangent};\n"
        ));
    }
    let mut body = values.clone();
    if plain {
        outputs(&mut body);
    } else {
        body.push_str(&tangents);
        // Coupled::derivative: f, then S' = J_y S and P' = J_y P + J_θ,
        // with J_y[i][k] = g[out_i][k], J_θ[i][j] = g[out_i][n + j].
        outputs(&mut body);
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
    // BDF's Newton matrix: J_y alone (StiffSystem::jacobian), row-major.
    let mut jacobian = values.clone();
    jacobian.push_str(&tangents);
    for (i, &s) in tape.outputs().iter().enumerate() {
        jacobian.push_str(&format!(
            "for (int k = 0; k < {n}; ++k) dz[{i} * {n} + k] = {g}[{} + k];\n",
            s * d
        ));
    }
    outputs(&mut values);
    let lambda = |name: &str, body: &str| {
        format!(
            "auto {name} = [&](double t, const double* z, double* dz) {{\n{body}}};\n(void){name};\n"
        )
    };
    System {
        setup,
        lambda: lambda(name, &body),
        values: lambda(&format!("{name}_f"), &values),
        jacobian: with_jacobian.then(|| lambda(&format!("{name}_jac"), &jacobian)),
    }
}

/// The operand expressions of a solve, by role.
pub(crate) fn control(call: &OdeSolve) -> Option<[&Expr; 3]> {
    match call.control.as_slice() {
        [r, a, m] => Some([r, a, m]),
        _ => None,
    }
}
