//! Reverse-mode automatic differentiation as a program transformation.
//!
//! [`gradient`] turns a MIR [`Program`] into a [`GradProgram`]: one body
//! that runs the *forward sweep* of the log density (parameter transform,
//! transformed parameters, model) and then its *reverse sweep*, leaving
//! ∂lp/∂θ for the unconstrained input θ in the gradient output. The result
//! is MIR again, so the scalar interpreter, the batching IRs and every
//! backend run it like any other program (AugurV2 §4.4, Fig. 8; the IR
//! pipeline in `docs/architecture.md`).
//!
//! # How the reverse sweep gets the values it needs
//! Variables live in one flat frame per function invocation (a declaration
//! initialises its slot, it does not open a scope), so the reverse sweep can
//! read every variable of the forward sweep. Values that the forward sweep
//! destroys are saved on explicit stacks ([`StmtKind::Push`](crate::mir::StmtKind::Push) /
//! [`ExprKind::Pop`](crate::mir::ExprKind::Pop)), the same per-variable stacks the PC autobatching IR
//! uses:
//! - before an assignment overwrites a variable (or an element of it), the
//!   old value is pushed; the reverse of the assignment pops it back, so
//!   at every point of the reverse sweep the variables hold exactly the
//!   values they had at the matching point of the forward sweep;
//! - at the end of a nested block (loop body, branch), the block's own
//!   locals are pushed, and popped at the start of the block's reverse;
//! - branch conditions, loop bounds and `while` trip counts are pushed.
//!
//! Expressions are not taped: the reverse of a statement first restores
//! the state before it, then *recomputes* the statement's subexpressions
//! into temporaries (A-normal form, `anf.rs`) and propagates adjoints through
//! them with the primitives' derivative rules (`vjp.rs`).
//!
//! A `for` loop whose body writes no variable declared outside it (the
//! usual `y[n] ~ ...` loop, which only accumulates into the target) needs
//! no stack at all: its reverse runs the iterations backwards, recomputing
//! each iteration's forward body (without adding to the target again) and
//! then its reverse.
//!
//! # Jumps, tuples (`normalize.rs`)
//! Before the sweeps, `break`, `continue` and `return` become int flag
//! variables and guarded blocks (`while` conditions and `for` bodies check
//! the flags; the statements after a possible jump run under
//! `if (flags == 0)`), and `(a, b) = e` becomes a tuple temporary and one
//! assignment per component. The sweeps never see a jump.
//!
//! # User-defined functions (`functions.rs`)
//! A call with parameter arguments runs unchanged in the forward sweep. Its
//! reverse calls a generated *reverse function*
//! `f__rev_MASK(args..., t̄ [, target̄]) -> (adjoints of the parameter
//! arguments... [, target̄])`, one per pattern of parameter (1) / data (0)
//! arguments, whose body is `f`'s forward sweep (recomputed, adding nothing
//! to the target) followed by its reverse sweep. Inside it the data
//! arguments, and the expressions computed from data only, are data: a
//! call nested in `f` gets the reverse for its own pattern, so no adjoint
//! of data is computed at any depth. `_lp` and `_jacobian`
//! functions take and hand back the target's adjoint. Recursion and mutual
//! recursion need nothing special: reverse functions call reverse
//! functions, and every activation pushes and pops the shared stacks in
//! balance. Recomputing costs time quadratic in the recursion depth.
//! Recomputations call *quiet* copies (`f__quiet`) of functions that add to
//! the target or print.
//!
//! # ODE solvers (`ode.rs`)
//! `ode_rk45`, `ode_bdf`, … and `integrate_ode_*` are differentiated with
//! forward sensitivities, as Stan: a solve with autodiff inputs integrates
//! the state together with ∂y/∂y₀ and ∂y/∂θ under the solver's error
//! control, the right-hand side's Jacobians coming from its reverse
//! function (generated at lowering by [`attach_ode_sensitivities`], one
//! vector-Jacobian product per state). The reverse sweep evaluates the
//! solve again in reverse mode, which contracts the solution's adjoint
//! with the sensitivities (and with f at the output and initial times for
//! autodiff times).
//!
//! # Shapes of accumulations
//! `a += s` into a whole adjoint `a` adds a share `s` of `a`'s shape
//! whenever `s`'s static type is `a`'s; a share of another shape always
//! has another static type (a scalar added to every element, or the same
//! elements in another container, e.g. a vector into a matrix's adjoint).
//! The simplification relies on it (`let a = zeros_like(x); a += s` is
//! `let a = s`); the interpreter checks it in debug builds.
//!
//! # Node kinds only gradient programs use
//! `Push`, `Pop`, `AddAssign`, `ForDown`, `ReadParam`, `ParamAdjoint`,
//! `Partial`, `ZerosLike`, and `JacobianOn` (1 when the Jacobian is on:
//! the adjoint of `jacobian +=`). Gradient programs also use tuple values
//! (reverse functions return tuples; `AddAssign` may target a tuple
//! component).
//!
//! # Not yet supported (a clear error, never a wrong gradient)
//! `target()` read inside a loop, a branch or a differentiated user
//! function (its forward value is not saved); complex parameters; tuple
//! or complex arguments of an ODE solver that depend on parameters; and
//! primitives without a derivative rule in `vjp.rs` / `vjp_linalg.rs` (e.g.
//! `sort_asc`, row-major `to_matrix`).

mod anf;
mod control;
mod functions;
mod normalize;
mod ode;
mod sweep;
mod vjp;
mod vjp_linalg;

use crate::diagnostic::{Diagnostic, Kind};
use crate::mir::{GradProgram, Program};
use crate::span::Span;

/// Diagnostic code: the program uses something the AD cannot differentiate yet.
pub const AD_NOT_SUPPORTED: &str = "E0202";

/// Differentiate the log density of `program`, and simplify the result
/// ([`crate::simplify`]): the gradient program every runner uses.
pub fn gradient(program: &Program) -> Result<GradProgram, Vec<Diagnostic>> {
    let mut g = gradient_unsimplified(program)?;
    crate::simplify::simplify(&mut g);
    Ok(g)
}

/// The gradient program as the transformation writes it, statement by
/// statement, before [`crate::simplify`] (for measuring and testing the
/// simplification).
pub fn gradient_unsimplified(program: &Program) -> Result<GradProgram, Vec<Diagnostic>> {
    sweep::Transformer::new(program).run()
}

pub(crate) fn unsupported(what: impl std::fmt::Display, span: Span) -> Diagnostic {
    Diagnostic::error(
        Kind::Semantic,
        AD_NOT_SUPPORTED,
        format!("not yet supported by automatic differentiation: {what}"),
        span,
    )
    .with_label("bat cannot differentiate this yet")
}

pub use crate::mir::print::print_grad_program;
pub use ode::attach_ode_sensitivities;
