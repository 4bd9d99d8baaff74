//! Assignments: lvalue validity, block ownership, types, tuple unpacking.

use super::codes;
use super::compat::{ad_for_type, promotion_cost};
use super::context::Checker;
use super::env::Origin;
use super::expr::{ERROR, Typed};
use super::index::IndexKind;
use super::ops;
use crate::diagnostic::Label;
use crate::span::Span;
use crate::syntax::ast::{AssignOp, BinaryOp, Expr, ExprKind, Index};
use crate::types::Type;

/// A checked lvalue: its type and what it writes to.
struct LValue {
    typed: Typed,
    /// Root variable name plus tuple projections, e.g. `x.1`; indexing
    /// ignored (stanc3 compares lvalues without indexes).
    path: String,
    /// Names read inside index expressions.
    index_reads: Vec<String>,
}

impl Checker {
    pub fn assignment(&mut self, span: Span, lhs: &Expr, op: AssignOp, rhs: &Expr) {
        let mut written = Vec::new();
        let lhs_typed = self.lvalue_pack(lhs, &mut written);
        self.verify_unique_lvalues(span, &written);
        let (rt, _) = self.expr(rhs);
        let (lt, _) = lhs_typed;
        if lt.is_error() || rt.is_error() {
            return;
        }
        match op.binary_op() {
            None if is_same_variable(lhs, rhs) => {
                self.warning(codes::WARN_OTHER, "Assignment of variable to itself.", span);
            }
            None => {
                if matches!(rt, Type::Function(_)) {
                    self.error(
                        codes::NOT_ASSIGNABLE,
                        "Cannot assign a function value.",
                        span,
                    );
                } else if promotion_cost(&lt, &rt, true).is_none() {
                    self.error(
                        codes::BAD_ASSIGNMENT_TYPE,
                        format!(
                            "Ill-typed arguments supplied to assignment operator =: lhs has type \
                             {lt} and rhs has type {rt}."
                        ),
                        span,
                    );
                }
            }
            Some(bin) => {
                let result = if bin == BinaryOp::Div && !rt.is_scalar() {
                    None
                } else {
                    ops::binary(bin, &lt, &rt)
                };
                let elementwise_on_scalar =
                    matches!(op, AssignOp::EltMul | AssignOp::EltDiv) && lt.is_scalar();
                let ok = result.is_some_and(|r| r == lt || r.is_error()) && !elementwise_on_scalar;
                if !ok {
                    self.error(
                        codes::BAD_ASSIGNMENT_TYPE,
                        format!(
                            "Ill-typed arguments supplied to assignment operator {}: lhs has type \
                             {lt} and rhs has type {rt}.",
                            op.symbol()
                        ),
                        span,
                    );
                }
            }
        }
    }

    /// An lvalue or a tuple of lvalues (unpacking); pushes every written
    /// lvalue into `written`.
    fn lvalue_pack(&mut self, e: &Expr, written: &mut Vec<LValue>) -> Typed {
        if let ExprKind::TupleLit(elems) = &e.kind {
            let mut ts = Vec::new();
            for el in elems {
                ts.push(self.lvalue_pack(el, written).0);
            }
            let typed = (Type::Tuple(ts), crate::types::AdLevel::AutoDiff);
            self.record_type(e.span, &typed.0, typed.1);
            return typed;
        }
        match self.lvalue(e, 0) {
            Some(lv) => {
                let typed = lv.typed.clone();
                written.push(lv);
                typed
            }
            None => ERROR,
        }
    }

    /// `depth` counts enclosing indexings: multi-indexes are only allowed
    /// at the outermost level.
    fn lvalue(&mut self, e: &Expr, depth: usize) -> Option<LValue> {
        let lv = match &e.kind {
            ExprKind::Var(id) => {
                self.report_reserved(&id.name, id.span);
                let Some(entry) = self.env.var(&id.name) else {
                    if !self.env.functions(&id.name).is_empty()
                        || self.is_builtin_function(&id.name)
                    {
                        self.error(
                            codes::NOT_ASSIGNABLE,
                            format!("Cannot assign to function '{}'.", id.name),
                            id.span,
                        );
                    } else {
                        self.undeclared(&id.name, id.span);
                    }
                    return None;
                };
                self.reference(id.span, entry.id);
                let decl_span = self.out.symbols[entry.id].def_span;
                if entry.global && entry.origin != self.block {
                    let block = match entry.origin {
                        Origin::Block(b) => b.keyword(),
                        Origin::Functions => "functions",
                    };
                    self.error(
                        codes::NOT_ASSIGNABLE,
                        format!(
                            "Cannot assign to global variable '{}' declared in previous blocks.",
                            id.name
                        ),
                        id.span,
                    )
                    .secondary
                    .push(Label {
                        span: decl_span,
                        message: format!("declared in the {block} block"),
                    });
                    return None;
                }
                if entry.readonly {
                    self.error(
                        codes::NOT_ASSIGNABLE,
                        format!(
                            "Cannot assign to function argument or loop identifier '{}'.",
                            id.name
                        ),
                        id.span,
                    )
                    .secondary
                    .push(Label {
                        span: decl_span,
                        message: "declared here".into(),
                    });
                    return None;
                }
                let ty = self.out.symbols[entry.id].ty.clone();
                let ad = self.ad_of_origin(entry.origin, &ty);
                LValue {
                    typed: (ty, ad),
                    path: id.name.clone(),
                    index_reads: Vec::new(),
                }
            }
            ExprKind::TupleProj(base, n) => {
                let mut lv = self.lvalue(base, depth)?;
                let (t, ad) = &lv.typed;
                let projected = match t {
                    Type::Tuple(ts) => match ts.get(n.wrapping_sub(1)) {
                        Some(t) => t.clone(),
                        None => {
                            self.error(
                                codes::BAD_TUPLE_PROJECTION,
                                format!(
                                    "Tried to access index {n} for a tuple of length {}.",
                                    ts.len()
                                ),
                                e.span,
                            );
                            return None;
                        }
                    },
                    Type::Error => Type::Error,
                    other => {
                        self.error(
                            codes::BAD_TUPLE_PROJECTION,
                            format!("Attempting to index a non-tuple of type {other} with a tuple index."),
                            e.span,
                        );
                        return None;
                    }
                };
                lv.typed = (projected.clone(), ad_for_type(*ad, &projected));
                lv.path = format!("{}.{n}", lv.path);
                lv
            }
            ExprKind::Index(base, indices) => {
                let mut lv = self.lvalue(base, depth + 1)?;
                let (kinds, ad) = self.indices(indices, lv.typed.1);
                if depth > 0 && kinds.contains(&IndexKind::Multi) {
                    self.error(
                        codes::BAD_MULTI_ASSIGN,
                        "Left hand side of an assignment cannot have nested multi-indexing.",
                        e.span,
                    );
                    return None;
                }
                for index in indices {
                    collect_index_reads(index, &mut lv.index_reads);
                }
                let (bt, _) = lv.typed.clone();
                lv.typed = self.apply_indices(e.span, &bt, &kinds, ad, indices.len());
                if lv.typed.0.is_error() && !bt.is_error() {
                    return None;
                }
                lv
            }
            ExprKind::Paren(inner) => return self.lvalue(inner, depth),
            _ => {
                self.expr(e);
                self.error(
                    codes::NOT_ASSIGNABLE,
                    "The left-hand side of an assignment must be a variable, possibly indexed or \
                     projected, or a tuple of such.",
                    e.span,
                );
                return None;
            }
        };
        self.record_type(e.span, &lv.typed.0, lv.typed.1);
        Some(lv)
    }

    fn verify_unique_lvalues(&mut self, span: Span, written: &[LValue]) {
        let overlaps = |a: &str, b: &str| {
            a == b
                || a.strip_prefix(b).is_some_and(|r| r.starts_with('.'))
                || b.strip_prefix(a).is_some_and(|r| r.starts_with('.'))
        };
        for (i, a) in written.iter().enumerate() {
            if let Some(b) = written[..i].iter().find(|b| overlaps(&a.path, &b.path)) {
                self.error(
                    codes::BAD_MULTI_ASSIGN,
                    format!(
                        "The same variable cannot be assigned to multiple times in one unpacking \
                         assignment: '{}' overlaps '{}'.",
                        a.path, b.path
                    ),
                    span,
                );
                return;
            }
        }
        let roots: Vec<&str> = written
            .iter()
            .map(|w| w.path.split('.').next().unwrap_or(""))
            .collect();
        if let Some(name) = written
            .iter()
            .flat_map(|w| &w.index_reads)
            .find(|n| roots.contains(&n.as_str()))
        {
            self.error(
                codes::BAD_MULTI_ASSIGN,
                format!(
                    "The variable '{name}' is read in an index of this unpacking assignment while \
                     also being assigned to."
                ),
                span,
            );
        }
    }
}

/// `x = x;` or `x = (x);`.
fn is_same_variable(lhs: &Expr, rhs: &Expr) -> bool {
    let mut r = rhs;
    while let ExprKind::Paren(inner) = &r.kind {
        r = inner;
    }
    matches!((&lhs.kind, &r.kind), (ExprKind::Var(a), ExprKind::Var(b)) if a.name == b.name)
}

/// Variable names read in an index expression.
fn collect_index_reads(index: &Index, out: &mut Vec<String>) {
    let exprs: Vec<&Expr> = match index {
        Index::All(_) => vec![],
        Index::Single(e) | Index::Upfrom(e) | Index::Downto(e) => vec![e],
        Index::Between(a, b) => vec![a, b],
    };
    for e in exprs {
        collect_vars(e, out);
    }
}

fn collect_vars(e: &Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Var(id) => out.push(id.name.clone()),
        ExprKind::Unary(_, a)
        | ExprKind::Paren(a)
        | ExprKind::Transpose(a)
        | ExprKind::TupleProj(a, _) => collect_vars(a, out),
        ExprKind::Binary(_, a, b) => {
            collect_vars(a, out);
            collect_vars(b, out);
        }
        ExprKind::Cond(a, b, c) => {
            collect_vars(a, out);
            collect_vars(b, out);
            collect_vars(c, out);
        }
        ExprKind::Call { args, .. }
        | ExprKind::ArrayLit(args)
        | ExprKind::RowVectorLit(args)
        | ExprKind::TupleLit(args) => args.iter().for_each(|a| collect_vars(a, out)),
        ExprKind::Index(base, idx) => {
            collect_vars(base, out);
            idx.iter().for_each(|i| collect_index_reads(i, out));
        }
        _ => {}
    }
}
