//! Syntactic restrictions that depend on where a construct appears.
//!
//! stanc3 encodes these in its grammar (separate productions for top-level
//! and local declarations, for lvalues, for call statements); bat's grammar
//! is more uniform to stay LALR-friendly and checks them here. They are
//! syntax errors, exactly as in stanc3.

use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::ast::*;
use crate::syntax::codes;

pub fn validate(program: &Program, source: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for block in &program.blocks {
        for stmt in &block.stmts {
            match block.kind {
                BlockKind::Data | BlockKind::Parameters => {
                    top_level_declaration_only(source, block.kind, stmt, &mut out)
                }
                BlockKind::TransformedData
                | BlockKind::TransformedParameters
                | BlockKind::GeneratedQuantities => {
                    // Top-level declarations may be constrained.
                    if !matches!(stmt.kind, StmtKind::Decl(_)) {
                        check_stmt(source, stmt, &mut out);
                    }
                }
                BlockKind::Model | BlockKind::Functions => check_stmt(source, stmt, &mut out),
            }
        }
    }
    out
}

/// `data` and `parameters` hold declarations without initial values.
fn top_level_declaration_only(
    source: &str,
    kind: BlockKind,
    stmt: &Stmt,
    out: &mut Vec<Diagnostic>,
) {
    match &stmt.kind {
        StmtKind::Decl(decl) => {
            if let Some(init) = &decl.init {
                out.push(
                    Diagnostic::error(
                        Kind::Syntax,
                        codes::MISPLACED,
                        format!(
                            "variables in the `{}` block cannot be given a value",
                            kind.keyword()
                        ),
                        assignment_span(source, decl.name.span, init.span),
                    )
                    .with_label("initial value not allowed here")
                    .with_help(format!(
                        "declare `{}` here and compute values in `transformed {}`",
                        decl.name.name,
                        kind.keyword()
                    )),
                );
            }
        }
        StmtKind::Error => {}
        _ => out.push(
            Diagnostic::error(
                Kind::Syntax,
                codes::MISPLACED,
                format!(
                    "only variable declarations are allowed in the `{}` block",
                    kind.keyword()
                ),
                stmt.span,
            )
            .with_label("statement not allowed here"),
        ),
    }
}

/// A local declaration: no constraints anywhere in its type.
fn check_local_decl(decl: &VarDecl, out: &mut Vec<Diagnostic>) {
    if let Some(span) = constrained_part(&decl.ty) {
        out.push(
            Diagnostic::error(
                Kind::Syntax,
                codes::MISPLACED,
                "local variables cannot have constrained types",
                span,
            )
            .with_label("constraint on a local variable")
            .with_note(
                "constraints (`<lower=...>`, `simplex`, ...) are only allowed on variables \
                 declared at the top level of `data`, `transformed data`, `parameters`, \
                 `transformed parameters` and `generated quantities`",
            ),
        );
    }
}

/// The span of the first constrained part of a type, if any.
fn constrained_part(ty: &SizedType) -> Option<Span> {
    match &ty.kind {
        SizedTypeKind::Int(b) | SizedTypeKind::Real(b) => (*b != Bounds::None).then_some(ty.span),
        SizedTypeKind::Vector { bounds, .. }
        | SizedTypeKind::RowVector { bounds, .. }
        | SizedTypeKind::Matrix { bounds, .. } => (*bounds != Bounds::None).then_some(ty.span),
        SizedTypeKind::Constrained { .. } => Some(ty.span),
        SizedTypeKind::Array { elem, .. } => constrained_part(elem),
        SizedTypeKind::Tuple(elems) => elems.iter().find_map(constrained_part),
        SizedTypeKind::Complex
        | SizedTypeKind::ComplexVector { .. }
        | SizedTypeKind::ComplexRowVector { .. }
        | SizedTypeKind::ComplexMatrix { .. } => None,
    }
}

fn check_stmt(source: &str, stmt: &Stmt, out: &mut Vec<Diagnostic>) {
    match &stmt.kind {
        StmtKind::Decl(decl) => check_local_decl(decl, out),
        StmtKind::Assign { lhs, .. } => {
            if !is_lvalue(lhs) {
                out.push(
                    Diagnostic::error(
                        Kind::Syntax,
                        codes::NOT_ASSIGNABLE,
                        "the left-hand side of an assignment must be a variable, an indexed \
                         variable, a tuple component, or a tuple of those",
                        lhs.span,
                    )
                    .with_label("cannot assign to this"),
                );
            }
        }
        StmtKind::Expr(e) => {
            // `f(y | theta);` is not a statement in stanc3 either.
            let is_call_statement = matches!(
                e.kind,
                ExprKind::Call {
                    conditional: false,
                    ..
                } | ExprKind::Error
            );
            if !is_call_statement {
                let help = if is_old_arrow_assignment(source, e) {
                    "assignment is written `=` (`<-` was removed in Stan 2.33)"
                } else {
                    "assign it with `=`, or use it in `target +=` or `~`"
                };
                out.push(
                    Diagnostic::error(
                        Kind::Syntax,
                        codes::NOT_ASSIGNABLE,
                        "only function calls can be used as statements",
                        e.span,
                    )
                    .with_label("this expression's value would be discarded")
                    .with_help(help),
                );
            }
        }
        StmtKind::If {
            then, otherwise, ..
        } => {
            check_stmt(source, then, out);
            if let Some(other) = otherwise {
                check_stmt(source, other, out);
            }
        }
        StmtKind::While { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::ForEach { body, .. } => check_stmt(source, body, out),
        StmtKind::Block(stmts) | StmtKind::Profile { body: stmts, .. } => {
            stmts.iter().for_each(|s| check_stmt(source, s, out))
        }
        StmtKind::FunDef(def) => {
            if let Some(body) = &def.body {
                check_stmt(source, body, out);
            }
        }
        StmtKind::Tilde { .. }
        | StmtKind::TargetPlus(_)
        | StmtKind::JacobianPlus(_)
        | StmtKind::Return(_)
        | StmtKind::Print(_)
        | StmtKind::Reject(_)
        | StmtKind::FatalError(_)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Skip
        | StmtKind::Error => {}
    }
}

/// `x`, `x[i]`, `x.1`, `x[i].2[j]`, or a tuple `(a, b[i], (c, d))`.
fn is_lvalue(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::TupleLit(items) => items.iter().all(is_lvalue),
        _ => is_single_lvalue(e),
    }
}

fn is_single_lvalue(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Var(_) | ExprKind::Error => true,
        ExprKind::Index(base, _) | ExprKind::TupleProj(base, _) => is_single_lvalue(base),
        _ => false,
    }
}

/// `x <- e;` lexes as `x < -e`.
fn is_old_arrow_assignment(source: &str, e: &Expr) -> bool {
    let ExprKind::Binary(BinaryOp::Lt, lhs, rhs) = &e.kind else {
        return false;
    };
    matches!(rhs.kind, ExprKind::Unary(UnaryOp::Neg, _))
        && source
            .get(lhs.span.end as usize..rhs.span.start as usize + 1)
            .is_some_and(|between| between.trim_start().starts_with("<-"))
}

/// From the `=` between a declared name and its initial value (where
/// stanc3 points) to the end of the value.
fn assignment_span(source: &str, name: Span, init: Span) -> Span {
    let between = source
        .get(name.end as usize..init.start as usize)
        .unwrap_or("");
    match between.find('=') {
        Some(offset) => Span::new(name.end as usize + offset, init.end as usize),
        None => init,
    }
}
