//! Lowering calls of the ODE solvers to [`ExprKind::Ode`].

use super::Lowerer;
use crate::mir::ode::{OdeMethod, OdeSolve, is_real_valued};
use crate::mir::{Expr, ExprKind};
use crate::span::Span;
use crate::syntax::ast;
use crate::types::{AdLevel, Type};

impl Lowerer<'_> {
    /// `name(f, y0, t0, ts, ...)`: the checker has matched the arguments
    /// against the solver's signature and resolved `f`.
    pub(super) fn ode_call(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        (method, legacy): (OdeMethod, bool),
        span: Span,
    ) -> ExprKind {
        let system = args.first().and_then(|f| match &f.kind {
            ast::ExprKind::Var(id) => self
                .refs
                .get(&id.span)
                .and_then(|symbol| self.funs.get(symbol))
                .copied(),
            _ => None,
        });
        let Some(system) = system else {
            self.unsupported(format_args!("the system function of `{name}`"), span);
            return ExprKind::Int(0);
        };
        let mut lowered: Vec<Expr> = args[1..].iter().map(|a| self.expr(a)).collect();
        if lowered.len() < 3 {
            self.unsupported(format_args!("`{name}` with {} arguments", args.len()), span);
            return ExprKind::Int(0);
        }
        let rest = lowered.split_off(3);
        let [initial_state, initial_time, times]: [Expr; 3] =
            lowered.try_into().expect("three leading arguments");
        let (args, control) = match (legacy, name.ends_with("_tol")) {
            // integrate_ode_*(f, y0, t0, ts, theta, x_r, x_i [, rtol, atol, max])
            (true, _) if rest.len() == 6 => {
                let mut args = rest;
                let control = args.split_off(3);
                (args, control)
            }
            (true, _) => (rest, Vec::new()),
            // ode_*_tol(f, y0, t0, ts, rtol, atol, max, ...)
            (false, true) => {
                let mut control = rest;
                let args = control.split_off(3.min(control.len()));
                (args, control)
            }
            (false, false) => (rest, Vec::new()),
        };
        for a in &args {
            if a.ad == AdLevel::AutoDiff
                && is_real_valued(&a.ty)
                && contains_unsupported_type(&a.ty)
            {
                self.unsupported(
                    format_args!(
                        "an argument of type {} depending on parameters passed to `{name}`",
                        a.ty
                    ),
                    a.span,
                );
            }
        }
        ExprKind::Ode(Box::new(OdeSolve {
            name: name.to_string(),
            method,
            legacy,
            system,
            initial_state,
            initial_time,
            times,
            args,
            control,
            sensitivity: None,
            solution_adjoint: None,
        }))
    }
}

/// Tuples and complex values cannot be sensitivity parameters yet.
fn contains_unsupported_type(ty: &Type) -> bool {
    match ty {
        Type::Tuple(_) | Type::Complex | Type::ComplexVector | Type::ComplexRowVector => true,
        Type::ComplexMatrix => true,
        Type::Array(elem) => contains_unsupported_type(elem),
        _ => false,
    }
}
