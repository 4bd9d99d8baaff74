//! Calls of Stan's ODE solvers ([`ExprKind::Ode`](super::ExprKind::Ode)).
//!
//! `ode_rk45(f, y0, t0, ts, ...)` and its relatives are not primitives: the
//! right-hand side `f` is a user function, run by the interpreter for every
//! stage of every step. One node kind covers every solver and both
//! interfaces, and both directions of differentiation:
//!
//! - **Forward** (`solution_adjoint` is `None`): the solution at `times`.
//!   When some input is autodiff, the node integrates the *coupled* system
//!   of the state and its forward sensitivities (`bat_math::ode::
//!   sensitivity`) with the solver's error control over all of it — exactly
//!   what Stan does when the inputs are `var`s, so the values (and the log
//!   density) are Stan's. The sensitivities need ∂f/∂y and ∂f/∂θ, which
//!   come from `sensitivity`: the reverse function of `f` made by bat's AD
//!   (one vector-Jacobian product per state).
//! - **Reverse** (`solution_adjoint` is the solution's adjoint ȳ): the same
//!   solve, then the tuple of the adjoints of the autodiff inputs
//!   ([`OdeSolve::autodiff_inputs`]): ȳ contracted with the sensitivities
//!   (and, for times, with f at the output times).
//!
//! Which inputs are autodiff is decided once, at lowering, by their
//! [`AdLevel`] (Stan's `var`-ness: anything depending on parameters, and
//! locals of the parameter blocks); it never changes afterwards.

use super::{Expr, FunId, Program};
use crate::types::{AdLevel, Type};

/// Which integrator runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OdeMethod {
    /// Dormand–Prince 5(4), as Boost's dense-output stepper (`ode_rk45`,
    /// `integrate_ode_rk45`).
    Rk45,
    /// Cash–Karp 5(4), as Boost's controlled stepper (`ode_ckrk`).
    Ckrk,
    /// Variable-order BDF for stiff systems (`ode_bdf`, `integrate_ode_bdf`).
    Bdf,
    /// `ode_adams`, `integrate_ode_adams`: CVODES' Adams–Moulton in Stan; bat
    /// runs these non-stiff problems with Dormand–Prince.
    Adams,
}

impl OdeMethod {
    /// Stan's defaults (relative tolerance, absolute tolerance,
    /// max_num_steps) when the call gives none.
    pub fn default_control(self) -> (f64, f64, i64) {
        match self {
            OdeMethod::Rk45 | OdeMethod::Ckrk => (1e-6, 1e-6, 1_000_000),
            OdeMethod::Bdf | OdeMethod::Adams => (1e-10, 1e-10, 100_000_000),
        }
    }
}

/// The shape of an ODE call as Stan names it: `ode_*` with a vector state
/// and variadic arguments, or the deprecated `integrate_ode_*`.
pub fn method_of(name: &str) -> Option<(OdeMethod, bool)> {
    Some(match name {
        "ode_rk45" | "ode_rk45_tol" => (OdeMethod::Rk45, false),
        "ode_ckrk" | "ode_ckrk_tol" => (OdeMethod::Ckrk, false),
        "ode_bdf" | "ode_bdf_tol" => (OdeMethod::Bdf, false),
        "ode_adams" | "ode_adams_tol" => (OdeMethod::Adams, false),
        "integrate_ode_rk45" => (OdeMethod::Rk45, true),
        "integrate_ode_bdf" => (OdeMethod::Bdf, true),
        "integrate_ode_adams" => (OdeMethod::Adams, true),
        _ => return None,
    })
}

/// The AD-made reverse function of the right-hand side, for the inputs
/// that are autodiff: `f__rev(t, y, args…, ḟ) → (ȳ, ā for each autodiff
/// argument)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemVjp {
    pub function: FunId,
    /// AD stacks the reverse function uses (each call pushes and pops them
    /// in balance).
    pub num_stacks: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OdeSolve {
    /// The Stan function called (`ode_rk45_tol`, …): error messages start
    /// with it, as Stan's.
    pub name: String,
    pub method: OdeMethod,
    /// `integrate_ode_*`: the state and each solution are `array[] real`,
    /// the system is f(t, y, theta, x_r, x_i).
    pub legacy: bool,
    /// The right-hand side f(t, y, args...).
    pub system: FunId,
    pub initial_state: Expr,
    pub initial_time: Expr,
    pub times: Expr,
    /// Passed to the system after (t, y): the variadic arguments, or
    /// (theta, x_r, x_i).
    pub args: Vec<Expr>,
    /// Relative tolerance, absolute tolerance, max_num_steps (empty: the
    /// method's defaults).
    pub control: Vec<Expr>,
    /// Set (by `ad::attach_ode_sensitivities`, right after lowering) when
    /// some input is autodiff.
    pub sensitivity: Option<SystemVjp>,
    /// Reverse mode: the adjoint of the solution (see the module docs).
    pub solution_adjoint: Option<Expr>,
}

/// Which inputs of a call carry a derivative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutodiffInputs {
    pub initial_state: bool,
    pub initial_time: bool,
    pub times: bool,
    pub args: Vec<bool>,
}

impl AutodiffInputs {
    /// Any input at all.
    pub fn any(&self) -> bool {
        self.initial_state || self.initial_time || self.times || self.args.iter().any(|&a| a)
    }

    /// The coupled system carries ∂y/∂y₀: the initial state is autodiff,
    /// or the initial time is (Stan promotes y₀ to the type of y₀ and t₀).
    pub fn initial_state_sensitivity(&self) -> bool {
        self.initial_state || self.initial_time
    }
}

impl OdeSolve {
    /// The operands in evaluation order: initial state, initial time,
    /// times, args, control, then the solution's adjoint (reverse mode).
    pub fn operands(&self) -> Vec<&Expr> {
        let mut out = vec![&self.initial_state, &self.initial_time, &self.times];
        out.extend(&self.args);
        out.extend(&self.control);
        out.extend(&self.solution_adjoint);
        out
    }

    /// [`OdeSolve::operands`], mutably.
    pub fn operands_mut(&mut self) -> Vec<&mut Expr> {
        let mut out = vec![
            &mut self.initial_state,
            &mut self.initial_time,
            &mut self.times,
        ];
        out.extend(&mut self.args);
        out.extend(&mut self.control);
        out.extend(&mut self.solution_adjoint);
        out
    }

    /// This call with its operands replaced (same order as
    /// [`OdeSolve::operands`]).
    pub fn with_operands(&self, operands: Vec<Expr>) -> OdeSolve {
        let mut out = self.clone();
        for (slot, new) in out.operands_mut().into_iter().zip(operands) {
            *slot = new;
        }
        out
    }

    /// Index of the first of `args` among [`OdeSolve::operands`].
    pub const FIRST_ARG: usize = 3;

    pub fn autodiff_inputs(&self) -> AutodiffInputs {
        let active = |e: &Expr| e.ad == AdLevel::AutoDiff && is_real_valued(&e.ty);
        AutodiffInputs {
            initial_state: active(&self.initial_state),
            initial_time: active(&self.initial_time),
            times: active(&self.times),
            args: self.args.iter().map(active).collect(),
        }
    }

    /// The autodiff inputs, in the order of the reverse mode's tuple.
    pub fn autodiff_operands(&self) -> Vec<&Expr> {
        let inputs = self.autodiff_inputs();
        let mut out = Vec::new();
        for (on, e) in [
            (inputs.initial_state, &self.initial_state),
            (inputs.initial_time, &self.initial_time),
            (inputs.times, &self.times),
        ] {
            if on {
                out.push(e);
            }
        }
        out.extend(
            self.args
                .iter()
                .zip(&inputs.args)
                .filter(|(_, on)| **on)
                .map(|(e, _)| e),
        );
        out
    }

    /// The type of the node's value: the solution, or in reverse mode the
    /// tuple of the autodiff inputs' adjoints.
    pub fn value_type(&self) -> Type {
        if self.solution_adjoint.is_some() {
            return Type::Tuple(
                self.autodiff_operands()
                    .iter()
                    .map(|e| adjoint_type(&e.ty))
                    .collect(),
            );
        }
        let state = if self.legacy {
            Type::Array(Box::new(Type::Real))
        } else {
            Type::Vector
        };
        Type::Array(Box::new(state))
    }
}

/// Adjoints are real-valued versions of their values' types.
fn adjoint_type(ty: &Type) -> Type {
    match ty {
        Type::Int => Type::Real,
        Type::Array(elem) => Type::Array(Box::new(adjoint_type(elem))),
        other => other.clone(),
    }
}

/// Reals, real vectors and matrices, and arrays of them (the values that
/// carry a derivative).
pub fn is_real_valued(ty: &Type) -> bool {
    match ty {
        Type::Real | Type::Vector | Type::RowVector | Type::Matrix => true,
        Type::Array(t) => is_real_valued(t),
        Type::Tuple(ts) => ts.iter().any(is_real_valued),
        _ => false,
    }
}

/// `program` with every ODE solve run at the given tolerances, allowing up
/// to 10⁸ steps between outputs, instead of its own: finite differences of
/// a log density approximate its gradient only when the solution is far
/// more accurate than models usually ask (a solve at rtol 1e-5 moves by
/// its tolerance when a parameter moves by h, which finite differences
/// divide by h).
pub fn with_tolerances(program: &Program, relative: f64, absolute: f64) -> Program {
    let mut out = program.clone();
    super::visit::for_each_program_expr(&mut out, &mut |e| {
        if let super::ExprKind::Ode(call) = &mut e.kind {
            let span = call.initial_time.span;
            let literal = |kind, ty| Expr {
                kind,
                ty,
                ad: AdLevel::DataOnly,
                span,
            };
            call.control = vec![
                literal(super::ExprKind::Real(relative), Type::Real),
                literal(super::ExprKind::Real(absolute), Type::Real),
                literal(super::ExprKind::Int(100_000_000), Type::Int),
            ];
        }
    });
    out
}
