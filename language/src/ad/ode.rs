//! ODE solves ([`ExprKind::Ode`]) in the AD.
//!
//! # Method: forward sensitivities, as Stan
//! A solve whose inputs depend on parameters integrates the coupled system
//! of the state and its sensitivities ∂y/∂y₀, ∂y/∂θ (`bat_math::ode::
//! sensitivity`) with the solver's own error control over all of it —
//! Stan's method, chosen for that reason: the values, hence the log
//! density, and the gradients are Stan's to rounding for `ode_rk45` (whose
//! integrator bat reproduces step for step), and the sensitivities are as
//! accurate as the solution itself. (An adjoint method would integrate
//! backwards with interpolated states and a checkpointing scheme, and give
//! gradients that differ from Stan's at the solver tolerance.)
//!
//! The coupled system needs the Jacobians ∂f/∂y and ∂f/∂θ of the
//! right-hand side at every stage. They come from bat's own AD of the user
//! function: [`attach_ode_sensitivities`], run at lowering, generates the
//! reverse function `f__rev_MASK` (`functions.rs`) for the call's pattern of
//! autodiff arguments; the interpreter calls it once per state with the
//! unit adjoint eᵢ to get row i of both Jacobians, exactly as Stan runs one
//! reverse pass per state. (Straight-line system functions skip it: the
//! interpreter compiles them to a tape whose one forward-mode pass gives
//! both Jacobians, `runtime::ode_tape`.)
//!
//! # Reverse sweep
//! The reverse of `t = ode(...)` evaluates the same node with
//! `solution_adjoint = t̄`: the interpreter repeats the (deterministic)
//! forward solve and contracts t̄ with the sensitivities, giving the tuple
//! of the adjoints of the autodiff inputs: y₀, t₀ (−Σ f(t₀, y₀)·∂y/∂y₀),
//! the output times (f(tᵢ, y(tᵢ))) and each autodiff argument; each is
//! added into its operand's adjoint.

use std::collections::HashMap;

use super::sweep::Transformer;
use crate::diagnostic::Diagnostic;
use crate::mir::ode::OdeSolve;
use crate::mir::visit::for_each_program_expr;
use crate::mir::{Expr, ExprKind, FunId, Program, Stmt, SystemVjp};
use crate::span::Span;
use crate::types::{AdLevel, Type};

/// Give every ODE solve with autodiff inputs (and every BDF solve) the
/// reverse function of its right-hand side ([`OdeSolve::sensitivity`]), generating those functions
/// (named `…__ode`). Programs without such solves are returned unchanged.
pub fn attach_ode_sensitivities(mut program: Program) -> Result<Program, Vec<Diagnostic>> {
    let mut any = false;
    for_each_ode(&mut program, &mut |call| any |= system_mask(call).is_some());
    if !any {
        return Ok(program);
    }
    let first_new = program.functions.len();
    let mut t = Transformer::new(&program);
    let mut made: HashMap<(FunId, Vec<bool>), FunId> = HashMap::new();
    // Reverse functions may contain solves of their own: repeat until every
    // solve has its function.
    loop {
        let mut needed = Vec::new();
        for_each_ode(&mut t.program, &mut |call| {
            if let Some(mask) = system_mask(call)
                && !made.contains_key(&(call.system, mask.clone()))
                && !needed.contains(&(call.system, mask.clone()))
            {
                needed.push((call.system, mask));
            }
        });
        if needed.is_empty() {
            break;
        }
        for (f, mask) in needed {
            let rev = t.reverse_of(f, &mask);
            made.insert((f, mask), rev);
        }
        t.make_pending_reverses();
    }
    let diags = t.take_diagnostics();
    if !diags.is_empty() {
        return Err(diags);
    }
    let num_stacks = t.num_stacks();
    let mut program = t.program;
    for f in &mut program.functions[first_new..] {
        f.name.push_str("__ode");
    }
    for_each_ode(&mut program, &mut |call| {
        if let Some(mask) = system_mask(call) {
            call.sensitivity = Some(SystemVjp {
                function: made[&(call.system, mask)],
                num_stacks,
            });
        }
    });
    Ok(program)
}

/// Which arguments of the right-hand side f(t, y, args…) carry adjoints
/// in its reverse function, if the solve needs one: y, and each autodiff
/// argument (never t: time derivatives are f itself).
/// BDF needs ∂f/∂y for its Newton iterations even without sensitivities.
fn system_mask(call: &OdeSolve) -> Option<Vec<bool>> {
    let inputs = call.autodiff_inputs();
    let sensitivities = inputs.initial_state_sensitivity() || inputs.args.iter().any(|&a| a);
    if !sensitivities && call.method != crate::mir::OdeMethod::Bdf {
        return None;
    }
    let mut mask = vec![false, true];
    mask.extend(&inputs.args);
    Some(mask)
}

/// Apply `f` to every ODE solve of the program (blocks and functions).
fn for_each_ode(program: &mut Program, f: &mut dyn FnMut(&mut OdeSolve)) {
    for_each_program_expr(program, &mut |e: &mut Expr| {
        if let ExprKind::Ode(call) = &mut e.kind {
            f(call);
        }
    });
}

impl Transformer {
    /// Reverse of `t = ode(atoms)` with adjoint `tb`: the node in reverse
    /// mode, then each component of its tuple into the operand's adjoint.
    pub(super) fn ode_vjp(
        &mut self,
        call: &OdeSolve,
        tb: Expr,
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> Result<(), String> {
        let operands: Vec<Expr> = call.autodiff_operands().into_iter().cloned().collect();
        if operands.is_empty() {
            return Ok(());
        }
        let mut reverse = call.clone();
        reverse.solution_adjoint = Some(tb);
        let ty = reverse.value_type();
        let Type::Tuple(types) = ty.clone() else {
            return Err("an ODE solve's reverse mode without a tuple type".into());
        };
        let r = self.temp(&ty, "ode_adj");
        out.push(self.let_stmt(
            r,
            Expr {
                kind: ExprKind::Ode(Box::new(reverse)),
                ty,
                ad: AdLevel::AutoDiff,
                span,
            },
        ));
        for (j, (operand, share_ty)) in operands.iter().zip(types).enumerate() {
            let share = Expr {
                kind: ExprKind::TupleProj(Box::new(self.var_expr(r, span)), j + 1),
                ty: share_ty,
                ad: AdLevel::AutoDiff,
                span,
            };
            self.accumulate(operand, share, out);
        }
        Ok(())
    }
}
