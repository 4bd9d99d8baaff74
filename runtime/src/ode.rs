//! Running ODE solves ([`language::mir::ExprKind::Ode`]): Stan's argument
//! checks (with its messages), the system function (compiled to a
//! [`Tape`] when it is straight-line scalar code, else run by the
//! interpreter), the coupled sensitivity system, and the reverse mode's
//! contraction (see `language::mir::ode` for the semantics). The integrators
//! themselves are in `bat_math::ode`.
//!
//! Every failure Stan reports as a `std::domain_error` — a non-finite or
//! unsorted input, too many steps, a solution that blows up — is a
//! rejection here; sizes Stan rejects with `std::invalid_argument` (an
//! empty state or output list, a system returning the wrong number of
//! derivatives) are fatal. Output printed by the system function is not
//! kept (it would be printed at every stage of every step).

use super::error::{ErrorKind, Result, RuntimeError, mismatch};
use super::exec::Machine;
use super::grad::GradState;
use super::ode_tape::Tape;
use super::values::{flat, int, real, with_data};
use bat_math::ode::bdf::{self, StiffSystem};
use bat_math::ode::sensitivity::Coupled;
use bat_math::ode::{OdeError, Tolerances, cash_karp, dopri5};
use language::mir::ode::{OdeMethod, OdeSolve};
use language::mir::{FunId, Program};
use language::value::Value;

/// The value of `call` given its evaluated operands (in
/// [`OdeSolve::operands`] order): the solution, or in reverse mode the
/// tuple of the autodiff inputs' adjoints.
pub(crate) fn solve(program: &Program, call: &OdeSolve, operands: &[Value]) -> Result<Value> {
    let problem = Problem::read(call, operands)?;
    let coupled = coupled_system(call, problem.args, problem.y0.len());
    let mut system = System::new(program, call, problem.args, coupled)?;
    let inputs_len = operands.len() - usize::from(call.solution_adjoint.is_some());
    let inputs = &operands[..inputs_len];
    let solution = match memo::recall(program, call, inputs) {
        Some(solution) => solution,
        None => {
            let z0 = coupled.initial(&problem.y0);
            let (t0, ts, tol) = (problem.t0, &problem.ts, &problem.tolerances);
            let solution = match call.method {
                OdeMethod::Rk45 | OdeMethod::Adams => {
                    dopri5::integrate_times(|t, z, dz| system.rhs(t, z, dz), &z0, t0, ts, tol)
                }
                OdeMethod::Ckrk => {
                    cash_karp::integrate_times(|t, z, dz| system.rhs(t, z, dz), &z0, t0, ts, tol)
                }
                OdeMethod::Bdf => bdf::integrate_times(&mut system, &z0, t0, ts, tol),
            }
            .map_err(|e| integration_error(&call.name, e))?;
            let solution = std::rc::Rc::new(solution);
            if call.solution_adjoint.is_none() && !coupled.is_plain() {
                memo::store(program, call, inputs, solution.clone());
            }
            solution
        }
    };
    let ts = &problem.ts;
    match operands.last().filter(|_| call.solution_adjoint.is_some()) {
        None => Ok(Value::Array(
            solution
                .iter()
                .map(|z| system.state_value(&z[..coupled.states]))
                .collect(),
        )),
        Some(adjoint) => {
            let adjoint = match adjoint {
                Value::Array(items) if items.len() == ts.len() => {
                    items.iter().map(flat).collect::<Vec<_>>()
                }
                other => return Err(mismatch("the adjoint of an ODE solution", other)),
            };
            adjoints(&mut system, &problem, operands, &solution, &adjoint)
        }
    }
}

/// The shape of the coupled system of a solve with `states` states and
/// system arguments `args`.
fn coupled_system(call: &OdeSolve, args: &[Value], states: usize) -> Coupled {
    let inputs = call.autodiff_inputs();
    let params = args
        .iter()
        .zip(&inputs.args)
        .filter(|(_, on)| **on)
        .map(|(a, _)| flat(a).len())
        .sum();
    Coupled {
        states,
        initial_state: inputs.initial_state_sensitivity(),
        params,
    }
}

/// The inputs of a solve, checked as Stan checks them.
struct Problem<'v> {
    y0: Vec<f64>,
    t0: f64,
    ts: Vec<f64>,
    args: &'v [Value],
    tolerances: Tolerances,
}

impl<'v> Problem<'v> {
    fn read(call: &OdeSolve, operands: &'v [Value]) -> Result<Problem<'v>> {
        let name = call.name.as_str();
        let first_control = OdeSolve::FIRST_ARG + call.args.len();
        let args = &operands[OdeSolve::FIRST_ARG..first_control];
        let y0 = flat(&operands[0]);
        let t0 = real(&operands[1])?;
        let ts = flat(&operands[2]);
        check_finite(name, "initial state", &y0, true)?;
        check_finite(name, "initial time", &[t0], false)?;
        check_finite(name, "times", &ts, true)?;
        for a in args {
            check_finite(name, "ode parameters and data", &flat(a), !is_scalar(a))?;
        }
        check_nonzero_size(name, "initial state", y0.len())?;
        check_nonzero_size(name, "times", ts.len())?;
        for i in 1..ts.len() {
            if !(ts[i] >= ts[i - 1]) {
                return Err(RuntimeError::rejection(format!(
                    "{name}: times is not a valid sorted vector. The element at {} is {}, but \
                     should be greater than or equal to the previous element, {}",
                    i + 1,
                    stan_number(ts[i]),
                    stan_number(ts[i - 1])
                )));
            }
        }
        if !(t0 < ts[0]) {
            return Err(RuntimeError::rejection(format!(
                "{name}: initial time is {}, but must be less than {}",
                stan_number(t0),
                stan_number(ts[0])
            )));
        }
        let (mut rtol, mut atol, mut max_steps) = call.method.default_control();
        if let [r, a, m] = &operands[first_control..first_control + call.control.len()] {
            rtol = real(r)?;
            atol = real(a)?;
            // The deprecated interface passes a real (C++ truncates it).
            max_steps = match m {
                Value::Real(x) => *x as i64,
                other => int(other)?,
            };
        }
        for (what, x) in [("relative_tolerance", rtol), ("absolute_tolerance", atol)] {
            if !(x > 0.0 && x.is_finite()) {
                return Err(RuntimeError::rejection(format!(
                    "{name}: {what} is {}, but must be positive finite!",
                    stan_number(x)
                )));
            }
        }
        if max_steps <= 0 {
            return Err(RuntimeError::rejection(format!(
                "{name}: max_num_steps is {max_steps}, but must be positive!"
            )));
        }
        Ok(Problem {
            y0,
            t0,
            ts,
            args,
            tolerances: Tolerances {
                relative: rtol,
                absolute: atol,
                max_num_steps: max_steps as u64,
            },
        })
    }
}

/// A number as Stan's messages print it (`nan`, `inf`).
fn stan_number(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        x.to_string()
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Real(_))
}

/// Stan's `check_finite` (1-based indexes for containers).
fn check_finite(name: &str, what: &str, xs: &[f64], indexed: bool) -> Result<()> {
    match xs.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(i) => {
            let at = if indexed {
                format!("[{}]", i + 1)
            } else {
                String::new()
            };
            Err(RuntimeError::rejection(format!(
                "{name}: {what}{at} is {}, but must be finite!",
                stan_number(xs[i])
            )))
        }
    }
}

/// Stan's `check_nonzero_size` (an `invalid_argument`: fatal).
fn check_nonzero_size(name: &str, what: &str, size: usize) -> Result<()> {
    if size == 0 {
        return Err(RuntimeError::fatal(format!(
            "{name}: {what} has size 0, but must have a non-zero size"
        )));
    }
    Ok(())
}

fn integration_error(name: &str, e: OdeError<RuntimeError>) -> RuntimeError {
    match e {
        OdeError::System(e) => e,
        other => RuntimeError::rejection(format!("{name}: {other}")),
    }
}

/// The right-hand side as the integrators see it: the user's system
/// function, and (for the coupled system and BDF's Newton matrix) its
/// Jacobians — from the function's [`Tape`] when it compiles to one, else
/// from the interpreter and the AD-made reverse function.
struct System<'p, 'c, 'v> {
    machine: Machine<'p>,
    call: &'c OdeSolve,
    args: &'v [Value],
    coupled: Coupled,
    tape: Option<Tape>,
    /// f at the last evaluation (tape only).
    f: Vec<f64>,
    /// Row-major ∂f/∂y (n × n) and ∂f/∂θ (n × m) at the last evaluation.
    jy: Vec<f64>,
    jp: Vec<f64>,
}

#[cfg(test)]
thread_local! {
    static INTERPRETED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run ODE system functions in the interpreter even when they compile to a
/// tape (on this thread; for the tests comparing the two). Forgets the
/// thread's remembered solves.
#[cfg(test)]
fn interpret_ode_systems(on: bool) {
    INTERPRETED.with(|i| i.set(on));
    memo::clear();
}

/// Whether the tests asked for the interpreter (never outside tests).
fn interpreted() -> bool {
    #[cfg(test)]
    return INTERPRETED.with(|i| i.get());
    #[cfg(not(test))]
    false
}

impl<'p, 'c, 'v> System<'p, 'c, 'v> {
    fn new(
        program: &'p Program,
        call: &'c OdeSolve,
        args: &'v [Value],
        coupled: Coupled,
    ) -> Result<Self> {
        let mut machine = Machine::new(program);
        let needs_jacobian = !coupled.is_plain() || call.method == OdeMethod::Bdf;
        match call.sensitivity {
            Some(vjp) => {
                machine.grad = Some(GradState {
                    theta: Vec::new(),
                    gradient: Vec::new(),
                    stacks: vec![Vec::new(); vjp.num_stacks as usize],
                    max_depths: vec![0; vjp.num_stacks as usize],
                    layout: Vec::new(),
                });
            }
            None if needs_jacobian => {
                return Err(RuntimeError::fatal(format!(
                    "{}: the ODE solve has no derivative function for its system",
                    call.name
                )));
            }
            None => {}
        }
        let n = coupled.states;
        let tape = if interpreted() {
            None
        } else {
            Tape::compile(
                &program.functions[call.system.0 as usize],
                args,
                &call.autodiff_inputs().args,
                n,
            )
            .filter(|t| t.params() == coupled.params)
        };
        Ok(System {
            machine,
            call,
            args,
            coupled,
            tape,
            f: vec![0.0; n],
            jy: vec![0.0; n * n],
            jp: vec![0.0; n * coupled.params],
        })
    }

    /// The state as the system function takes it.
    fn state_value(&self, y: &[f64]) -> Value {
        if self.call.legacy {
            Value::Array(y.iter().map(|&x| Value::Real(x)).collect())
        } else {
            Value::Vector(y.to_vec())
        }
    }

    fn call_args(&self, t: f64, y: &[f64]) -> Vec<Value> {
        let mut args = Vec::with_capacity(self.args.len() + 3);
        args.push(Value::Real(t));
        args.push(self.state_value(y));
        args.extend(self.args.iter().cloned());
        args
    }

    /// f(t, y).
    fn derivative(&mut self, t: f64, y: &[f64]) -> Result<Vec<f64>> {
        if let Some(tape) = &mut self.tape {
            let mut f = vec![0.0; y.len()];
            tape.eval(t, y, &mut f);
            return Ok(f);
        }
        let args = self.call_args(t, y);
        let value = self
            .machine
            .call(self.call.system, args)?
            .ok_or_else(|| RuntimeError::fatal("an ODE system function returned nothing"))?;
        let f = flat(&value);
        if f.len() != y.len() {
            return Err(RuntimeError::new(
                ErrorKind::Fatal,
                format!(
                    "{}: Size of dy_dt ({}) and states ({}) must match in size",
                    self.call.name,
                    f.len(),
                    y.len()
                ),
            ));
        }
        Ok(f)
    }

    /// Rows of ∂f/∂y and ∂f/∂θ at (t, y), one reverse pass per state.
    fn jacobians(&mut self, t: f64, y: &[f64]) -> Result<()> {
        let vjp: FunId = match self.call.sensitivity {
            Some(s) => s.function,
            None => return Ok(()),
        };
        let n = y.len();
        let m = self.coupled.params;
        if let Some(tape) = &mut self.tape {
            tape.eval_with_jacobians(t, y, &mut self.f, &mut self.jy, &mut self.jp);
            return Ok(());
        }
        for i in 0..n {
            let mut unit = vec![0.0; n];
            unit[i] = 1.0;
            let mut args = self.call_args(t, y);
            args.push(self.state_value(&unit));
            let row = match self.machine.call(vjp, args)? {
                Some(Value::Tuple(items)) => items,
                other => {
                    return Err(RuntimeError::fatal(format!(
                        "an ODE system's reverse function returned {other:?}"
                    )));
                }
            };
            let mut parts = row.iter();
            let dy = parts.next().map(flat).unwrap_or_default();
            let dp: Vec<f64> = parts.flat_map(flat).collect();
            if dy.len() != n || dp.len() != m {
                return Err(RuntimeError::fatal(format!(
                    "an ODE system's reverse function gave {} + {} derivatives, expected {n} + {m}",
                    dy.len(),
                    dp.len()
                )));
            }
            self.jy[i * n..(i + 1) * n].copy_from_slice(&dy);
            self.jp[i * m..(i + 1) * m].copy_from_slice(&dp);
        }
        Ok(())
    }

    /// dz/dt of the (coupled) system.
    fn rhs(&mut self, t: f64, z: &[f64], dz: &mut [f64]) -> Result<()> {
        let n = self.coupled.states;
        if let Some(tape) = &mut self.tape {
            if self.coupled.is_plain() {
                tape.eval(t, &z[..n], dz);
            } else {
                tape.eval_with_jacobians(t, &z[..n], &mut self.f, &mut self.jy, &mut self.jp);
                self.coupled.derivative(z, &self.f, &self.jy, &self.jp, dz);
            }
            return Ok(());
        }
        let f = self.derivative(t, &z[..n])?;
        if self.coupled.is_plain() {
            dz.copy_from_slice(&f);
            return Ok(());
        }
        self.jacobians(t, &z[..n])?;
        self.coupled.derivative(z, &f, &self.jy, &self.jp, dz);
        Ok(())
    }
}

impl StiffSystem for System<'_, '_, '_> {
    type Error = RuntimeError;

    fn rhs(&mut self, t: f64, z: &[f64], dz: &mut [f64]) -> Result<()> {
        System::rhs(self, t, z, dz)
    }

    fn jacobian(&mut self, t: f64, z: &[f64], jac: &mut [f64]) -> Result<()> {
        let n = self.coupled.states;
        self.jacobians(t, &z[..n])?;
        jac.copy_from_slice(&self.jy);
        Ok(())
    }

    fn block(&self) -> usize {
        self.coupled.states
    }
}

/// Reverse mode: the adjoints of the autodiff inputs from the solution's
/// adjoint `ybar` (per output time) and the coupled states `zs`.
fn adjoints(
    system: &mut System,
    problem: &Problem,
    operands: &[Value],
    zs: &[Vec<f64>],
    ybar: &[Vec<f64>],
) -> Result<Value> {
    let call = system.call;
    let coupled = system.coupled;
    let n = coupled.states;
    let inputs = call.autodiff_inputs();
    // Σᵢ Σₖ ȳᵢ[k]·g(zᵢ, k)
    let contract = |g: &dyn Fn(&[f64], usize) -> f64| -> f64 {
        zs.iter()
            .zip(ybar)
            .map(|(z, yb)| (0..n).map(|k| yb[k] * g(z, k)).sum::<f64>())
            .sum()
    };
    let mut out = Vec::new();
    if inputs.initial_state {
        let g: Vec<f64> = (0..n)
            .map(|j| contract(&|z, k| coupled.wrt_initial(z, j, k)))
            .collect();
        out.push(with_data(&operands[0], &mut g.into_iter()));
    }
    if inputs.initial_time {
        let f0 = system.derivative(problem.t0, &problem.y0)?;
        let g = contract(&|z, k| {
            -(0..n)
                .map(|m| f0[m] * coupled.wrt_initial(z, m, k))
                .sum::<f64>()
        });
        out.push(Value::Real(g));
    }
    if inputs.times {
        let mut g = Vec::with_capacity(zs.len());
        for ((z, yb), &t) in zs.iter().zip(ybar).zip(&problem.ts) {
            let f = system.derivative(t, &z[..n])?;
            g.push((0..n).map(|k| yb[k] * f[k]).sum::<f64>());
        }
        out.push(with_data(&operands[2], &mut g.into_iter()));
    }
    let mut offset = 0;
    for (arg, on) in problem.args.iter().zip(&inputs.args) {
        if !on {
            continue;
        }
        let len = flat(arg).len();
        let g: Vec<f64> = (offset..offset + len)
            .map(|j| contract(&|z, k| coupled.wrt_param(z, j, k)))
            .collect();
        offset += len;
        out.push(with_data(arg, &mut g.into_iter()));
    }
    Ok(Value::Tuple(out))
}

#[cfg(test)]
mod tape_tests;

/// How many ODE solutions each thread remembers (the most recent ones, by
/// the solve's inputs): the gradient after a log density at the same point
/// reuses the forward solve. A benchmark that repeats points must cycle
/// through more than this many per thread to time real solves.
pub const MEMO_CAPACITY: usize = memo::CAPACITY;

/// The sensitivities a gradient program's reverse sweep needs are those its
/// forward sweep just computed: the solve of the reverse-mode node is the
/// same deterministic computation on the same inputs. A few recent forward
/// solves of the thread are kept so the reverse mode reuses them (halving
/// the cost of a gradient); a hit returns exactly what a new solve would.
mod memo {
    use language::mir::ode::{OdeMethod, OdeSolve};
    use language::mir::{FunId, Function, Program};
    use language::value::Value;
    use std::cell::RefCell;
    use std::collections::VecDeque;
    use std::rc::Rc;

    /// Solves remembered per thread.
    pub(crate) const CAPACITY: usize = 16;

    /// Everything a solve's result depends on: the solver and its inputs'
    /// values, and the code of the system and of its reverse function.
    struct Key {
        program: usize,
        name: String,
        method: OdeMethod,
        legacy: bool,
        system: Function,
        vjp: Option<Function>,
        inputs: Vec<Value>,
    }

    fn function(program: &Program, f: FunId) -> &Function {
        &program.functions[f.0 as usize]
    }

    impl Key {
        fn new(program: &Program, call: &OdeSolve, inputs: &[Value]) -> Key {
            Key {
                program: program as *const Program as usize,
                name: call.name.clone(),
                method: call.method,
                legacy: call.legacy,
                system: function(program, call.system).clone(),
                vjp: call
                    .sensitivity
                    .map(|s| function(program, s.function).clone()),
                inputs: inputs.to_vec(),
            }
        }

        /// Whether this is the key of `call` on `inputs`. Compares without
        /// building a key, and the inputs (which differ between solves of
        /// a chain) before the functions' code (which is long to compare).
        fn is(&self, program: &Program, call: &OdeSolve, inputs: &[Value]) -> bool {
            self.program == program as *const Program as usize
                && self.inputs == inputs
                && self.method == call.method
                && self.legacy == call.legacy
                && self.name == call.name
                && self.system == *function(program, call.system)
                && self.vjp.as_ref() == call.sensitivity.map(|s| function(program, s.function))
        }
    }

    type Solution = Rc<Vec<Vec<f64>>>;

    thread_local! {
        static RECENT: RefCell<VecDeque<(Key, Solution)>> = const { RefCell::new(VecDeque::new()) };
    }

    pub(super) fn recall(program: &Program, call: &OdeSolve, inputs: &[Value]) -> Option<Solution> {
        RECENT.with(|r| {
            r.borrow()
                .iter()
                .find(|(k, _)| k.is(program, call, inputs))
                .map(|(_, s)| s.clone())
        })
    }

    #[cfg(test)]
    pub(super) fn clear() {
        RECENT.with(|r| r.borrow_mut().clear());
    }

    pub(super) fn store(program: &Program, call: &OdeSolve, inputs: &[Value], solution: Solution) {
        let key = Key::new(program, call, inputs);
        RECENT.with(|r| {
            let mut r = r.borrow_mut();
            if r.len() == CAPACITY {
                r.pop_front();
            }
            r.push_back((key, solution));
        });
    }
}
