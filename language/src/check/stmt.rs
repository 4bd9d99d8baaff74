//! Statements, and the "does every path return" analysis of stanc3.

use super::SymbolKind;
use super::codes;
use super::compat::promotion_cost;
use super::context::{Checker, FunSuffix};
use super::env::Origin;
use crate::span::Span;
use crate::syntax::ast::{BlockKind, Expr, ExprKind, Ident, Stmt, StmtKind};
use crate::types::Type;

/// How control leaves a statement (stanc3's `statement_returntype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// May fall through to the next statement.
    Incomplete,
    /// Always returns (or rejects).
    Complete,
    /// May `break` out of the enclosing loop.
    Breaks,
}

fn seq(a: Flow, b: Flow) -> Flow {
    use Flow::*;
    match (a, b) {
        (Complete, Complete) | (Incomplete, Complete) => Complete,
        (Breaks, _) | (_, Breaks) => Breaks,
        _ => Incomplete,
    }
}

fn branches(a: Flow, b: Flow) -> Flow {
    use Flow::*;
    match (a, b) {
        (Complete, Complete) => Complete,
        (Breaks, _) | (_, Breaks) => Breaks,
        _ => Incomplete,
    }
}

fn loop_flow(body: Flow) -> Flow {
    if body == Flow::Complete {
        Flow::Complete
    } else {
        Flow::Incomplete
    }
}

fn is_escape(s: &Stmt) -> bool {
    matches!(
        s.kind,
        StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Reject(_)
            | StmtKind::FatalError(_)
            | StmtKind::Return(_)
    )
}

impl Checker {
    /// Check a list of statements in the current scope; returns the flow of
    /// the sequence (statements after an escape are unreachable and ignored
    /// for the flow, with a warning, as in stanc3).
    pub fn stmts(&mut self, stmts: &[Stmt], scope_end: Span) -> Flow {
        let mut flow = Flow::Incomplete;
        let mut escaped = false;
        for (i, s) in stmts.iter().enumerate() {
            let f = self.stmt(s, scope_end);
            if !escaped {
                flow = seq(flow, f);
                if is_escape(s) {
                    escaped = true;
                    if let Some(next) = stmts.get(i + 1) {
                        self.warning(
                            codes::WARN_OTHER,
                            "Unreachable statement (following a reject, fatal_error, break, \
                             continue, or return) found, is this intended?",
                            next.span,
                        );
                    }
                }
            }
        }
        flow
    }

    fn scoped_stmts(&mut self, stmts: &[Stmt], span: Span) -> Flow {
        self.env.push_scope();
        let flow = self.stmts(stmts, span);
        self.env.pop_scope();
        flow
    }

    /// A nested statement body gets its own scope.
    fn body(&mut self, s: &Stmt) -> Flow {
        self.env.push_scope();
        let flow = self.stmt(s, s.span);
        self.env.pop_scope();
        flow
    }

    /// Check one statement; `scope_end` is the span of the enclosing scope
    /// (declarations are visible until its end).
    pub fn stmt(&mut self, s: &Stmt, scope_end: Span) -> Flow {
        match &s.kind {
            StmtKind::Decl(decl) => {
                let scope = Span {
                    start: s.span.start,
                    end: scope_end.end,
                };
                self.var_decl(decl, false, s.span, scope);
                Flow::Incomplete
            }
            StmtKind::Assign { lhs, op, rhs } => {
                self.assignment(s.span, lhs, *op, rhs);
                Flow::Incomplete
            }
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                self.tilde(s.span, lhs, dist, args, truncation.as_ref());
                Flow::Incomplete
            }
            StmtKind::TargetPlus(e) => {
                let (t, _) = self.expr(e);
                if !(self.in_function(&[FunSuffix::Target]) || self.block.is(BlockKind::Model)) {
                    self.error(
                        codes::TARGET_OUTSIDE_MODEL,
                        "Target can only be accessed in the model block or in definitions of \
                         functions with the suffix _lp.",
                        s.span,
                    );
                }
                self.verify_target_operand(&t, e.span);
                Flow::Incomplete
            }
            StmtKind::JacobianPlus(e) => {
                let (t, _) = self.expr(e);
                if !(self.in_function(&[FunSuffix::Jacobian])
                    || self.block.is(BlockKind::TransformedParameters))
                {
                    self.error(
                        codes::JACOBIAN_NOT_ALLOWED,
                        "The jacobian adjustment can only be applied in the transformed \
                         parameters block or in functions ending with _jacobian.",
                        s.span,
                    );
                }
                self.verify_target_operand(&t, e.span);
                Flow::Incomplete
            }
            StmtKind::Expr(e) => {
                match &e.kind {
                    ExprKind::Call {
                        name,
                        args,
                        conditional: false,
                    } => self.call_stmt(e.span, name, args),
                    _ => {
                        self.expr(e);
                        self.error(
                            codes::VOID_MISUSE,
                            "Only function calls can be used as statements.",
                            e.span,
                        );
                    }
                }
                Flow::Incomplete
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loop_depth == 0 {
                    let which = if matches!(s.kind, StmtKind::Break) {
                        "Break"
                    } else {
                        "Continue"
                    };
                    self.error(
                        codes::BREAK_OUTSIDE_LOOP,
                        format!("{which} statements may only be used in loops."),
                        s.span,
                    );
                }
                if matches!(s.kind, StmtKind::Break) {
                    Flow::Breaks
                } else {
                    Flow::Incomplete
                }
            }
            StmtKind::Return(value) => self.return_stmt(s.span, value.as_ref()),
            StmtKind::Print(items) => {
                self.printables(items);
                Flow::Incomplete
            }
            StmtKind::Reject(items) | StmtKind::FatalError(items) => {
                self.printables(items);
                Flow::Complete
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.int_expr(cond, "Condition in conditional");
                let t = self.body(then);
                let f = otherwise
                    .as_ref()
                    .map_or(Flow::Incomplete, |o| self.body(o));
                branches(t, f)
            }
            StmtKind::While { cond, body } => {
                self.int_expr(cond, "Condition in while-loop");
                self.loop_depth += 1;
                let flow = self.body(body);
                self.loop_depth -= 1;
                let always_true = matches!(&cond.kind, ExprKind::IntLit(t) if t.chars().any(|c| ('1'..='9').contains(&c)));
                match flow {
                    Flow::Complete => Flow::Complete,
                    Flow::Incomplete if always_true => Flow::Complete,
                    _ => Flow::Incomplete,
                }
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                self.int_expr(lower, "Lower bound of for-loop");
                self.int_expr(upper, "Upper bound of for-loop");
                loop_flow(self.loop_body(var, Type::Int, body))
            }
            StmtKind::ForEach { var, iter, body } => {
                let (t, _) = self.expr(iter);
                let elem = match &t {
                    Type::Array(elem) => (**elem).clone(),
                    Type::Vector | Type::RowVector | Type::Matrix => Type::Real,
                    Type::Error => Type::Error,
                    other => {
                        self.error(
                            codes::BAD_FOREACH,
                            format!(
                                "Foreach-loop must be over array, vector, row_vector or matrix. \
                                 Instead found expression of type {other}."
                            ),
                            iter.span,
                        );
                        Type::Error
                    }
                };
                loop_flow(self.loop_body(var, elem, body))
            }
            StmtKind::Block(stmts) => self.scoped_stmts(stmts, s.span),
            StmtKind::Profile { body, .. } => self.scoped_stmts(body, s.span),
            StmtKind::FunDef(_) => {
                // The grammar only allows function definitions in the
                // functions block, which checks them separately.
                Flow::Incomplete
            }
            StmtKind::Skip | StmtKind::Error => Flow::Incomplete,
        }
    }

    fn verify_target_operand(&mut self, t: &Type, span: Span) {
        if matches!(t, Type::Function(_)) {
            self.error(
                codes::WRONG_TYPE,
                format!("A real or int container was expected; found {t}."),
                span,
            );
        }
    }

    fn loop_body(&mut self, var: &Ident, ty: Type, body: &Stmt) -> Flow {
        self.env.push_scope();
        self.report_reserved(&var.name, var.span);
        self.verify_fresh_var(&var.name, var.span);
        let origin = self.block;
        self.declare_var(
            &var.name,
            var.span,
            SymbolKind::LoopVar,
            ty.clone(),
            ty.to_string(),
            body.span.to(var.span),
            true,
            origin,
        );
        self.loop_depth += 1;
        let flow = self.stmt(body, body.span);
        self.loop_depth -= 1;
        self.env.pop_scope();
        flow
    }

    fn return_stmt(&mut self, span: Span, value: Option<&Expr>) -> Flow {
        let expected = self.function.as_ref().map(|f| f.ret.clone());
        match (value, expected) {
            (Some(e), Some(Some(expected))) => {
                let (t, _) = self.expr(e);
                if promotion_cost(&expected, &t, true).is_none() {
                    self.error(
                        codes::BAD_RETURN,
                        format!(
                            "Invalid return type: the function returns {expected}, but this \
                             expression has type {t}."
                        ),
                        span,
                    );
                }
            }
            (Some(e), _) => {
                self.expr(e);
                self.error(
                    codes::BAD_RETURN,
                    "Expression return statements may only be used inside returning function \
                     definitions.",
                    span,
                );
            }
            (None, Some(None)) => {}
            (None, _) => {
                self.error(
                    codes::BAD_RETURN,
                    "Void return statements may only be used inside non-returning function \
                     definitions.",
                    span,
                );
            }
        }
        Flow::Complete
    }

    fn printables(&mut self, items: &[Expr]) {
        for item in items {
            if matches!(item.kind, ExprKind::StrLit(_)) {
                continue;
            }
            let (t, _) = self.expr(item);
            if matches!(t, Type::Function(_)) {
                self.error(
                    codes::NOT_PRINTABLE,
                    "Functions cannot be printed.",
                    item.span,
                );
            }
        }
    }

    /// A new variable may not reuse the name of any visible variable
    /// (stanc3 forbids shadowing); it may shadow function names.
    pub fn verify_fresh_var(&mut self, name: &str, span: Span) -> bool {
        if super::expr::is_unnormalized(name) {
            self.error(
                codes::RESERVED_NAME,
                format!(
                    "Identifier '{name}' has a _lupdf/_lupmf suffix, which is only allowed for \
                     functions."
                ),
                span,
            );
            return false;
        }
        if let Some(existing) = self.env.var(name) {
            let previous = self.out.symbols[existing.id].def_span;
            self.error(
                codes::ALREADY_DECLARED,
                format!("Identifier '{name}' is already in use."),
                span,
            )
            .secondary
            .push(crate::diagnostic::Label {
                span: previous,
                message: "previously declared here".into(),
            });
            return false;
        }
        true
    }

    /// Top-level statements of a program block.
    pub fn check_toplevel_stmts(
        &mut self,
        stmts: &[Stmt],
        kind: BlockKind,
        block_span: Span,
        program_span: Span,
    ) {
        if kind == BlockKind::Functions {
            for s in stmts {
                if let StmtKind::FunDef(def) = &s.kind {
                    self.function_body(def, s.span);
                }
            }
            return;
        }
        // Block variables are visible to the end of the program (model
        // block variables to the end of the model block).
        let scope_end = if kind == BlockKind::Model {
            block_span
        } else {
            Span {
                start: block_span.start,
                end: program_span.end,
            }
        };
        let mut escaped = false;
        for s in stmts {
            if let StmtKind::Decl(decl) = &s.kind
                && kind != BlockKind::Model
            {
                let scope = Span {
                    start: s.span.start,
                    end: scope_end.end,
                };
                self.var_decl(decl, true, s.span, scope);
                continue;
            }
            if matches!(s.kind, StmtKind::Error | StmtKind::Skip) {
                continue;
            }
            if matches!(kind, BlockKind::Data | BlockKind::Parameters) {
                self.error(
                    codes::WRONG_TYPE,
                    format!(
                        "Only variable declarations are allowed in the {} block.",
                        kind.keyword()
                    ),
                    s.span,
                );
                continue;
            }
            if escaped {
                self.warning(
                    codes::WARN_OTHER,
                    "Unreachable statement (following a reject, fatal_error, break, continue, or \
                     return) found, is this intended?",
                    s.span,
                );
            }
            self.stmt(s, scope_end);
            escaped = is_escape(s);
        }
        let _ = Origin::Functions;
    }
}
