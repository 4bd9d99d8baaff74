//! ODE solves in a statement: the operands read into thread-local arrays,
//! Stan's argument checks as `runtime::ode` makes them (same
//! order, kinds and messages), the system's right-hand side and the call
//! of the device integrator ([`super::super::ode`]), and the solution (or,
//! in reverse mode, the contracted adjoints) copied into the destination.

use language::mir::ode::{AutodiffInputs, OdeSolve};

use super::super::ode;
use super::super::typing::Unsupported;
use super::{Dest, Emitter, FailKind, LOCAL_LIMIT, MessagePart, for_each};

/// A piece of a failure message: text, or a C expression whose value the
/// lane stores for the host to print (a real, or an int).
enum Part {
    Text(String),
    Real(String),
    Int(String),
}

/// The arrays a reverse-mode solve's adjoints are made of.
struct Adjoint<'a> {
    /// The solution's adjoint ȳ (output time by output time).
    yb: &'a str,
    y0: &'a str,
    t0: &'a str,
    ts: &'a str,
}

/// Where the reverse mode's tuple (flattened) holds each autodiff input's
/// adjoint: initial state, initial time, output times, then the system's
/// parameters (`OdeSolve::autodiff_operands`' order).
struct AdjointLayout {
    initial_state: Option<usize>,
    initial_time: Option<usize>,
    times: Option<usize>,
    params: usize,
    len: usize,
}

impl AdjointLayout {
    fn new(inputs: &AutodiffInputs, n: usize, nt: usize, m: usize) -> AdjointLayout {
        let mut at = 0;
        let mut place = |on: bool, len: usize| {
            let here = at;
            if on {
                at += len;
            }
            on.then_some(here)
        };
        let initial_state = place(inputs.initial_state, n);
        let initial_time = place(inputs.initial_time, 1);
        let times = place(inputs.times, nt);
        AdjointLayout {
            initial_state,
            initial_time,
            times,
            params: at,
            len: at + m,
        }
    }
}

/// Largest thread-local array of a solve (work space, outputs, tangents).
const ODE_LOCAL_LIMIT: usize = 8 * LOCAL_LIMIT;

impl Emitter<'_> {
    /// `dest op= call` over `len` values.
    pub(crate) fn ode_into(
        &mut self,
        dest: &Dest,
        len: usize,
        call: &OdeSolve,
        op: &str,
    ) -> Result<(), Unsupported> {
        if self.in_branch > 0 {
            return Err(format!("`{}` inside a conditional expression", call.name));
        }
        let solve = ode::plan(self.program, self.layout, call)?;
        let (n, nt, big_n) = (solve.n, solve.times, solve.coupled());
        let inputs = call.autodiff_inputs();
        let out_len = if call.solution_adjoint.is_some() {
            AdjointLayout::new(&inputs, n, nt, solve.m).len
        } else {
            nt * n
        };
        if out_len != len {
            return Err(format!("`{}` into {len} values", call.name));
        }
        let tape_len = solve.tape.slots() * solve.tape.dirs();
        let work = solve.integrator.work(big_n, n);
        if work > ODE_LOCAL_LIMIT || nt * n > ODE_LOCAL_LIMIT || tape_len > ODE_LOCAL_LIMIT {
            return Err(format!(
                "`{}` of {big_n} coupled states at {nt} times is too large for a thread",
                call.name
            ));
        }
        let name = call.name.clone();
        let p = self.fresh("ode");
        // The operands, in the interpreter's order.
        let y0 = self.ode_array(&call.initial_state, &format!("{p}_y0"))?;
        let t0_array = format!("{p}_t0");
        let v = self.elem(&call.initial_time, "0")?;
        self.lines
            .push(format!("double {t0_array}[1] = {{ {v} }};"));
        let t0 = format!("{t0_array}[0]");
        let ts = self.ode_array(&call.times, &format!("{p}_ts"))?;
        let mut args = Vec::new();
        for (k, a) in call.args.iter().enumerate() {
            args.push(self.ode_array(a, &format!("{p}_a{k}"))?);
        }
        let (rtol, atol, steps) = (
            format!("{p}_rtol"),
            format!("{p}_atol"),
            format!("{p}_steps"),
        );
        match ode::control(call) {
            Some([r, a, m]) => {
                let (r, a) = (self.elem(r, "0")?, self.elem(a, "0")?);
                let int = self.shape(m)?.int;
                let m = self.elem(m, "0")?;
                // The deprecated interface passes a real (truncated).
                let m = if int {
                    format!("(long long)({m})")
                } else {
                    format!("bat_ode_steps({m})")
                };
                self.lines.push(format!(
                    "const double {rtol} = {r}; const double {atol} = {a}; const long long {steps} = {m};"
                ));
            }
            None => {
                let (r, a, m) = call.method.default_control();
                self.lines.push(format!(
                    "const double {rtol} = {}; const double {atol} = {}; const long long {steps} = {m}LL;",
                    super::real_literal(r),
                    super::real_literal(a)
                ));
            }
        }
        let yb = match &call.solution_adjoint {
            Some(adjoint) => {
                if self.shape(adjoint)?.len() != nt * n {
                    return Err(format!("the adjoint of `{name}` of another size"));
                }
                Some(self.ode_array(adjoint, &format!("{p}_yb"))?)
            }
            None => None,
        };
        // Stan's checks, as Problem::read makes them.
        self.check_finite(&name, "initial state", &y0, n, true);
        self.check_finite(&name, "initial time", &t0_array, 1, false);
        self.check_finite(&name, "times", &ts, nt, true);
        for (k, a) in call.args.iter().enumerate() {
            let scalar = self.shape(a)?.is_scalar();
            self.check_finite(
                &name,
                "ode parameters and data",
                &args[k],
                solve.arg_lens[k],
                !scalar,
            );
        }
        let unsorted = self.ode_fail(
            FailKind::Rejection,
            vec![
                Part::Text(format!(
                    "{name}: times is not a valid sorted vector. The element at "
                )),
                Part::Int("e + 1".to_string()),
                Part::Text(" is ".to_string()),
                Part::Real(format!("{ts}[e]")),
                Part::Text(
                    ", but should be greater than or equal to the previous element, ".to_string(),
                ),
                Part::Real(format!("{ts}[e - 1]")),
            ],
        );
        self.lines.push(format!(
            "for (int e = 1; e < {nt}; ++e) if (!({ts}[e] >= {ts}[e - 1])) {unsorted}"
        ));
        let late = self.ode_fail(
            FailKind::Rejection,
            vec![
                Part::Text(format!("{name}: initial time is ")),
                Part::Real(t0.clone()),
                Part::Text(", but must be less than ".to_string()),
                Part::Real(format!("{ts}[0]")),
            ],
        );
        self.lines.push(format!("if (!({t0} < {ts}[0])) {late}"));
        for (what, x) in [("relative_tolerance", &rtol), ("absolute_tolerance", &atol)] {
            let fail = self.ode_fail(
                FailKind::Rejection,
                vec![
                    Part::Text(format!("{name}: {what} is ")),
                    Part::Real(x.clone()),
                    Part::Text(", but must be positive finite!".to_string()),
                ],
            );
            self.lines
                .push(format!("if (!({x} > 0.0 && isfinite({x}))) {fail}"));
        }
        let fail = self.ode_fail(
            FailKind::Rejection,
            vec![
                Part::Text(format!("{name}: max_num_steps is ")),
                Part::Int(steps.clone()),
                Part::Text(", but must be positive!".to_string()),
            ],
        );
        self.lines.push(format!("if ({steps} <= 0) {fail}"));
        // The coupled initial state: y0, the identity (∂y/∂y0), zeros.
        let z0 = format!("{p}_z0");
        self.lines.push(format!(
            "double {z0}[{big_n}]; for (int i = 0; i < {big_n}; ++i) {z0}[i] = 0.0;\nfor (int i = 0; i < {n}; ++i) {z0}[i] = {y0}[i];\nfor (int j = 0; j < {}; ++j) {z0}[{n} + {n} * j + j] = 1.0;",
            solve.n0
        ));
        let system = ode::system(&solve, &format!("{p}_rhs"), &format!("{p}_"), &args);
        self.lines.push(system.setup);
        self.lines.push(system.lambda);
        self.lines.push(system.values);
        let jacobian = match system.jacobian {
            Some(lambda) => {
                self.lines.push(lambda);
                format!("{p}_rhs_jac, ")
            }
            None => String::new(),
        };
        let block = if jacobian.is_empty() {
            String::new()
        } else {
            format!("{n}, ")
        };
        let out = format!("{p}_out");
        self.lines
            .push(format!("double {out}[{}];", out_len.max(1)));
        let adjoint = match &yb {
            None => {
                self.lines.push(format!(
                    "auto {p}_obs = [&](int i, const double* z) {{ for (int k = 0; k < {n}; ++k) {out}[i * {n} + k] = z[k]; }};"
                ));
                None
            }
            Some(yb) => Some(self.ode_adjoint_observer(
                &p,
                &inputs,
                &solve,
                &out,
                Adjoint {
                    yb,
                    y0: &y0,
                    t0: &t0,
                    ts: &ts,
                },
            )),
        };
        let (w, ft, rc) = (format!("{p}_w"), format!("{p}_ft"), format!("{p}_rc"));
        self.lines.push(format!(
            "double {w}[{work}]; double {ft} = 0.0;\nconst int {rc} = {}({p}_rhs, {jacobian}{p}_obs, {big_n}, {block}{w}, {z0}, {t0}, {ts}, {nt}, {rtol}, {atol}, {steps}, &{ft});",
            solve.integrator.function()
        ));
        for (code, text) in [
            (
                "BAT_ODE_MAX_STEPS",
                format!("{name}: Failed to integrate to next output time ("),
            ),
            (
                "BAT_ODE_TOO_SMALL",
                format!("{name}: the step size became too small to meet the tolerances at time "),
            ),
            (
                "BAT_ODE_NON_FINITE",
                format!("{name}: the solution became infinite or NaN at time "),
            ),
        ] {
            let mut parts = vec![Part::Text(text), Part::Real(ft.clone())];
            if code == "BAT_ODE_MAX_STEPS" {
                parts.push(Part::Text(") in less than max_num_steps steps".to_string()));
            }
            let fail = self.ode_fail(FailKind::Rejection, parts);
            self.lines.push(format!("if ({rc} == {code}) {fail}"));
        }
        if let Some(assemble) = adjoint {
            self.lines.push(assemble);
        }
        let i = self.fresh("e");
        let to = self.dest_elem(dest, &i)?;
        self.lines
            .push(for_each(&i, len, &format!("{to} {op} {out}[{i}];")));
        Ok(())
    }

    /// Reverse mode: the accumulators of the adjoints, the observer
    /// `{p}_obs` adding each output time's terms to them (in the order of
    /// `runtime::ode::adjoints`' sums), and the returned code that
    /// writes them into `out` in the tuple's order after the solve.
    fn ode_adjoint_observer(
        &mut self,
        p: &str,
        inputs: &AutodiffInputs,
        solve: &ode::Solve,
        out: &str,
        a: Adjoint,
    ) -> String {
        let (n, n0, m, nt) = (solve.n, solve.n0, solve.m, solve.times);
        let columns = n0 + m;
        let layout = AdjointLayout::new(inputs, n, nt, m);
        let (cols, t0_adj, ts_adj) = (
            format!("{p}_cols"),
            format!("{p}_t0adj"),
            format!("{p}_tsadj"),
        );
        let Adjoint { yb, y0, t0, ts } = a;
        self.lines.push(format!(
            "double {cols}[{}]; for (int c = 0; c < {columns}; ++c) {cols}[c] = -0.0;\ndouble {t0_adj} = -0.0; double {ts_adj}[{nt}];",
            columns.max(1)
        ));
        // Σ over output times of Σₖ ȳᵢ[k]·∂y_k/∂(column c).
        let mut body = format!(
            "for (int c = 0; c < {columns}; ++c) {{ double inner = -0.0; for (int k = 0; k < {n}; ++k) inner += {yb}[i * {n} + k] * z[{n} + {n} * c + k]; {cols}[c] += inner; }}\n"
        );
        if inputs.initial_time {
            // Σ over output times of Σₖ ȳᵢ[k]·(−Σⱼ f(t₀, y₀)ⱼ·∂y_k/∂y₀ⱼ).
            let f0 = format!("{p}_f0");
            self.lines
                .push(format!("double {f0}[{n}]; {p}_rhs_f({t0}, {y0}, {f0});"));
            body.push_str(&format!(
                "{{ double inner = -0.0; for (int k = 0; k < {n}; ++k) {{ double s = -0.0; for (int j = 0; j < {n}; ++j) s += {f0}[j] * z[{n} + {n} * j + k]; inner += {yb}[i * {n} + k] * -s; }} {t0_adj} += inner; }}\n"
            ));
        }
        if inputs.times {
            // Σₖ ȳᵢ[k]·f(tᵢ, y(tᵢ))ₖ.
            body.push_str(&format!(
                "{{ double fy[{n}]; {p}_rhs_f({ts}[i], z, fy); double g = -0.0; for (int k = 0; k < {n}; ++k) g += {yb}[i * {n} + k] * fy[k]; {ts_adj}[i] = g; }}\n"
            ));
        }
        self.lines.push(format!(
            "auto {p}_obs = [&](int i, const double* z) {{\n{body}}};"
        ));
        let mut assemble = String::new();
        if let Some(at) = layout.initial_state {
            assemble.push_str(&format!(
                "for (int c = 0; c < {n}; ++c) {out}[{at} + c] = {cols}[c];\n"
            ));
        }
        if let Some(at) = layout.initial_time {
            assemble.push_str(&format!("{out}[{at}] = {t0_adj};\n"));
        }
        if let Some(at) = layout.times {
            assemble.push_str(&format!(
                "for (int i = 0; i < {nt}; ++i) {out}[{at} + i] = {ts_adj}[i];\n"
            ));
        }
        assemble.push_str(&format!(
            "for (int c = 0; c < {m}; ++c) {out}[{} + c] = {cols}[{n0} + c];\n(void){t0_adj}; (void){ts_adj};",
            layout.params
        ));
        assemble
    }

    /// `e` read into a new thread-local array `name` (flattened).
    fn ode_array(&mut self, e: &language::mir::Expr, name: &str) -> Result<String, Unsupported> {
        let len = self.shape(e)?.len();
        if len > ODE_LOCAL_LIMIT {
            return Err(format!("an ODE operand of {len} values"));
        }
        let i = self.fresh("e");
        let v = self.elem(e, &i)?;
        self.lines.push(format!("double {name}[{}];", len.max(1)));
        self.lines
            .push(for_each(&i, len, &format!("{name}[{i}] = {v};")));
        Ok(name.to_string())
    }

    /// Stan's `check_finite` of the `len` values of array `xs`.
    fn check_finite(&mut self, name: &str, what: &str, xs: &str, len: usize, indexed: bool) {
        let mut parts = vec![Part::Text(format!("{name}: {what}"))];
        if indexed {
            parts.push(Part::Text("[".to_string()));
            parts.push(Part::Int("e + 1".to_string()));
            parts.push(Part::Text("]".to_string()));
        }
        parts.push(Part::Text(" is ".to_string()));
        parts.push(Part::Real(format!("{xs}[e]")));
        parts.push(Part::Text(", but must be finite!".to_string()));
        let fail = self.ode_fail(FailKind::Rejection, parts);
        self.lines.push(format!(
            "for (int e = 0; e < {len}; ++e) if (!isfinite({xs}[e])) {fail}"
        ));
    }

    /// C code that stores the message's values and stops the lane.
    fn ode_fail(&mut self, kind: FailKind, parts: Vec<Part>) -> String {
        let mut stores = String::new();
        let mut text = String::new();
        let mut message = Vec::new();
        enum Kind {
            Int,
            Other,
        }
        for part in parts {
            let part_kind = match part {
                Part::Int(_) => Kind::Int,
                _ => Kind::Other,
            };
            match part {
                Part::Text(s) => {
                    text.push_str(&s);
                    message.push(MessagePart::Text(s));
                }
                Part::Real(c) | Part::Int(c) => {
                    let int = matches!(part_kind, Kind::Int);
                    let slot = self.layout.scratch(1);
                    stores.push_str(&format!("S({slot}) = (double)({c}); "));
                    text.push('…');
                    message.push(if int {
                        MessagePart::Value { slot, int }
                    } else {
                        MessagePart::Shortest { slot }
                    });
                }
            }
        }
        let fail = self.fail_with(kind, text, message);
        format!("{{ {stores}{fail} }}")
    }
}
