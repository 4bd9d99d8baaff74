//! Which `print` statements `bat run` does not show.
//!
//! `bat run` shows what transformed parameters and generated quantities
//! print while a kept draw's values are computed (once per saved draw, as
//! Stan runs generated quantities). The model block's `print` runs at every
//! log density evaluation of every chain — Stan prints each one; a thousand
//! chains would print millions of lines — so bat does not show it and says
//! so once, before sampling, rather than dropping it silently.

use super::visit::{own_exprs, walk};
use super::{ExprKind, Program, Stmt, StmtKind};
use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;

/// Code of the warning that the model block's `print` is not shown.
pub const PRINT_NOT_SHOWN: &str = "W0201";

/// The first `print` the model block runs, directly or in a user
/// function it calls (at any depth): the print's span, and the model
/// block's call leading to it when the print is in a function.
pub fn model_print(program: &Program) -> Option<(Span, Option<Span>)> {
    // Per function: the first print its body runs (fixed point over calls).
    let mut prints: Vec<Option<Span>> = vec![None; program.functions.len()];
    loop {
        let mut changed = false;
        for (i, f) in program.functions.iter().enumerate() {
            if prints[i].is_none()
                && let Some((span, _)) = first_print(&f.body, &prints)
            {
                prints[i] = Some(span);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    first_print(&program.model, &prints)
}

/// The first print of `stmts` in order: a `print` statement (its span,
/// no call), or a call of a function of `prints` that prints (the print's
/// span, the call statement's span).
fn first_print(stmts: &[Stmt], prints: &[Option<Span>]) -> Option<(Span, Option<Span>)> {
    for s in stmts {
        if matches!(s.kind, StmtKind::Print(_)) {
            return Some((s.span, None));
        }
        let mut found = None;
        own_exprs(s, &mut |e| {
            walk(e, &mut |x| {
                if let ExprKind::Call(f, _) = &x.kind
                    && found.is_none()
                {
                    found = prints.get(f.0 as usize).copied().flatten();
                }
            })
        });
        if let Some(span) = found {
            return Some((span, Some(s.span)));
        }
        let nested = match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => first_print(then, prints).or_else(|| first_print(otherwise, prints)),
            StmtKind::While { body, .. }
            | StmtKind::For { body, .. }
            | StmtKind::ForDown { body, .. }
            | StmtKind::Block(body) => first_print(body, prints),
            _ => None,
        };
        if nested.is_some() {
            return nested;
        }
    }
    None
}

/// The warning `bat run` gives before sampling when the model block
/// prints ([`model_print`]).
pub fn model_print_warning(program: &Program) -> Option<Diagnostic> {
    let (print, call) = model_print(program)?;
    let mut d = Diagnostic::warning(
        Kind::Semantic,
        PRINT_NOT_SHOWN,
        "`bat run` does not show what the model block prints",
        print,
    )
    .with_label("runs at every log density evaluation of every chain")
    .with_help(
        "print in transformed parameters or generated quantities: `bat run` shows that \
         once per kept draw, on stdout",
    );
    if let Some(call) = call {
        d = d.with_secondary(call, "called from the model block here");
    }
    Some(d)
}
