//! Expression typing.

use super::codes;
use super::compat::{ad_for_type, common_type, lub_ad};
use super::context::Checker;
use super::env::Origin;
use super::ops;
use super::suggest::nearest;
use crate::span::Span;
use crate::syntax::ast::{BinaryOp, BlockKind, Expr, ExprKind, Ident};
use crate::types::{AdLevel, Type};

pub type Typed = (Type, AdLevel);

pub const ERROR: Typed = (Type::Error, AdLevel::DataOnly);

impl Checker {
    /// Type an expression, report its errors, and record its type.
    pub fn expr(&mut self, e: &Expr) -> Typed {
        let typed = self.expr_inner(e);
        self.record_type(e.span, &typed.0, typed.1);
        typed
    }

    fn expr_inner(&mut self, e: &Expr) -> Typed {
        match &e.kind {
            ExprKind::IntLit(text) => {
                if text
                    .replace('_', "")
                    .parse::<f64>()
                    .map_or(true, |v| v >= 2_147_483_648.0)
                {
                    self.error(
                        codes::INT_LITERAL_TOO_LARGE,
                        "Integer literal cannot be larger than 2_147_483_647.",
                        e.span,
                    )
                    .with_help_mut("write it as a real literal, e.g. `2147483648.0`");
                    return ERROR;
                }
                (Type::Int, AdLevel::DataOnly)
            }
            ExprKind::RealLit(_) => (Type::Real, AdLevel::DataOnly),
            ExprKind::ImagLit(_) => (Type::Complex, AdLevel::DataOnly),
            ExprKind::StrLit(_) => {
                self.error(
                    codes::WRONG_TYPE,
                    "String literals may only appear in print, reject and fatal_error.",
                    e.span,
                );
                ERROR
            }
            ExprKind::Var(id) => self.variable(id),
            ExprKind::Paren(inner) => self.expr(inner),
            ExprKind::Unary(op, operand) => {
                let (t, ad) = self.expr(operand);
                match ops::unary(*op, &t) {
                    Some(rt) => (rt, ad),
                    None => {
                        self.error(
                            codes::BAD_UNARY_OP,
                            format!(
                                "Ill-typed arguments supplied to prefix operator {}. Available \
                                 signatures are for int, real{}; found {}.",
                                op.symbol(),
                                if *op == crate::syntax::ast::UnaryOp::Not {
                                    ""
                                } else {
                                    ", complex and their containers"
                                },
                                t
                            ),
                            e.span,
                        );
                        ERROR
                    }
                }
            }
            ExprKind::Binary(op, l, r) => self.binary(e, *op, l, r),
            ExprKind::Cond(c, t, f) => self.conditional(e.span, c, t, f),
            ExprKind::Call {
                name,
                args,
                conditional,
            } => self.call_expr(e.span, name, args, *conditional),
            ExprKind::Index(base, indices) => self.indexed(e.span, base, indices),
            ExprKind::TupleProj(base, n) => {
                let (t, ad) = self.expr(base);
                match t {
                    Type::Error => ERROR,
                    Type::Tuple(ts) => match ts.get(n.wrapping_sub(1)) {
                        Some(t) => (t.clone(), ad_for_type(ad, t)),
                        None => {
                            self.error(
                                codes::BAD_TUPLE_PROJECTION,
                                format!(
                                    "Tried to access index {n} for a tuple of length {}; only \
                                     indices between 1 and {} are valid.",
                                    ts.len(),
                                    ts.len()
                                ),
                                e.span,
                            );
                            ERROR
                        }
                    },
                    other => {
                        self.error(
                            codes::BAD_TUPLE_PROJECTION,
                            format!("Attempting to index a non-tuple of type {other} with a tuple index."),
                            e.span,
                        );
                        ERROR
                    }
                }
            }
            ExprKind::Transpose(inner) => {
                let (t, ad) = self.expr(inner);
                match ops::transpose(&t) {
                    Some(rt) => (rt, ad),
                    None => {
                        self.error(
                            codes::BAD_UNARY_OP,
                            format!(
                                "Ill-typed arguments supplied to postfix operator '. Available \
                                 signatures are for vector, row_vector and matrix (and their \
                                 complex versions); found {t}."
                            ),
                            e.span,
                        );
                        ERROR
                    }
                }
            }
            ExprKind::ArrayLit(elems) => self.array_literal(e.span, elems),
            ExprKind::RowVectorLit(elems) => self.row_vector_literal(e.span, elems),
            ExprKind::TupleLit(elems) => {
                let mut ts = Vec::with_capacity(elems.len());
                let mut ad = AdLevel::DataOnly;
                for el in elems {
                    let (t, a) = self.expr(el);
                    ad = lub_ad(ad, a);
                    ts.push(t);
                }
                (Type::Tuple(ts), ad)
            }
            ExprKind::Error => ERROR,
        }
    }

    fn variable(&mut self, id: &Ident) -> Typed {
        if id.name == "target" {
            // `target()` is a call; a bare `target` is not a value.
        }
        self.report_reserved(&id.name, id.span);
        if let Some(entry) = self.env.var(&id.name) {
            self.reference(id.span, entry.id);
            if self.in_toplevel_decl
                && matches!(
                    entry.origin,
                    Origin::Block(
                        BlockKind::Parameters
                            | BlockKind::TransformedParameters
                            | BlockKind::GeneratedQuantities
                    )
                )
            {
                self.error(
                    codes::NON_DATA_SIZE,
                    "Non-data variables are not allowed in top level size declarations.",
                    id.span,
                );
                return ERROR;
            }
            let ty = self.out.symbols[entry.id].ty.clone();
            let ad = self.ad_of_origin(entry.origin, &ty);
            return (ty, ad);
        }
        let normalized = normalized_name(&id.name);
        let overloads = self.env.functions(&normalized).to_vec();
        if let Some(&first) = overloads.first() {
            self.reference(id.span, first);
            self.note_callee(&normalized);
            if is_unnormalized(&id.name) && !self.unnormalized_allowed() {
                self.report_unnormalized(id.span);
            }
            return (self.out.symbols[first].ty.clone(), AdLevel::DataOnly);
        }
        if self.is_builtin_function(&normalized) {
            // A library function used as a value (only meaningful as an
            // argument of a higher-order function).
            return ERROR;
        }
        self.undeclared(&id.name, id.span);
        ERROR
    }

    pub fn undeclared(&mut self, name: &str, span: Span) {
        let suggestion = nearest(name, self.env.visible_names());
        let d = self.error(
            codes::UNDECLARED,
            format!("Identifier '{name}' not in scope."),
            span,
        );
        if let Some(s) = suggestion {
            d.help = Some(format!("did you mean '{s}'?"));
        }
    }

    fn binary(&mut self, e: &Expr, op: BinaryOp, l: &Expr, r: &Expr) -> Typed {
        let (lt, lad) = self.expr(l);
        let (rt, rad) = self.expr(r);
        if op == BinaryOp::Div && lt == Type::Int && rt == Type::Int {
            let hint = match (&l.kind, &r.kind) {
                (_, ExprKind::IntLit(lit)) => format!("a real literal, e.g. `... / {lit}.0`"),
                (ExprKind::IntLit(lit), _) => format!("a real literal, e.g. `{lit}.0 / ...`"),
                _ => "`x * 1.0 / y`".to_string(),
            };
            let d = self.warning(
                codes::WARN_INT_DIVISION,
                "Found int division: values will be rounded towards zero.",
                l.span.to(r.span),
            );
            d.help = Some(format!(
                "if rounding is not desired, write the division with {hint}; if rounding is \
                 intended, use the integer division operator %/%"
            ));
        }
        let is_cmp = |op: BinaryOp| {
            matches!(
                op,
                BinaryOp::Eq
                    | BinaryOp::Neq
                    | BinaryOp::Lt
                    | BinaryOp::Leq
                    | BinaryOp::Gt
                    | BinaryOp::Geq
            )
        };
        if is_cmp(op)
            && let ExprKind::Binary(inner, _, _) = &l.kind
            && is_cmp(*inner)
        {
            let d = self.warning(
                codes::WARN_OTHER,
                format!(
                    "Found chained comparison: this is interpreted as `(a {} b) {} c`, comparing \
                     the 0/1 result of the first comparison.",
                    inner.symbol(),
                    op.symbol()
                ),
                e.span,
            );
            d.help = Some(
                "if you meant `a < b && b < c`, write that; add parentheses to silence this warning"
                    .into(),
            );
        }
        if matches!(op, BinaryOp::Pow)
            && matches!(lt.array_dims().1, Type::Matrix)
            && matches!(rt, Type::Int | Type::Real)
        {
            self.warning(
                codes::WARN_OTHER,
                "Found matrix^scalar: matrix ^ number is interpreted as element-wise \
                 exponentiation. If this is intended, you can silence this warning by using \
                 the element-wise operator .^; if you intended matrix exponentiation, use \
                 matrix_power instead.",
                e.span,
            );
        }
        match ops::binary(op, &lt, &rt) {
            Some(t) => {
                // Like stanc3, an int computed from parameters stays autodiff.
                let ad = lub_ad(lad, rad);
                (t, ad)
            }
            None => {
                self.error(
                    codes::BAD_BINARY_OP,
                    format!(
                        "Ill-typed arguments supplied to infix operator {}. Available signatures \
                         do not include ({lt}, {rt}).",
                        op.symbol()
                    ),
                    e.span,
                )
                .primary
                .message = format!("`{lt} {} {rt}` is not defined", op.symbol());
                ERROR
            }
        }
    }

    fn conditional(&mut self, span: Span, c: &Expr, t: &Expr, f: &Expr) -> Typed {
        let (ct, cad) = self.expr(c);
        let (tt, tad) = self.expr(t);
        let (ft, fad) = self.expr(f);
        let common = common_type(&tt, &ft).filter(|t| !matches!(t, Type::Function(_)));
        match (ct.is_int() || ct.is_error(), common) {
            (true, Some(ty)) => {
                let ad = lub_ad(cad, lub_ad(tad, fad));
                (ty, ad)
            }
            _ => {
                self.error(
                    codes::BAD_CONDITIONAL_OP,
                    format!(
                        "Ill-typed arguments supplied to ? : operator. Available signatures: \
                         (int, T, T) => T for any type T (with int→real→complex promotion); \
                         found ({ct}, {tt}, {ft})."
                    ),
                    span,
                );
                ERROR
            }
        }
    }

    fn array_literal(&mut self, span: Span, elems: &[Expr]) -> Typed {
        let mut ty: Option<Type> = None;
        let mut ad = AdLevel::DataOnly;
        for el in elems {
            let (t, a) = self.expr(el);
            ad = lub_ad(ad, a);
            ty = match ty {
                None => Some(t),
                Some(prev) => match common_type(&prev, &t) {
                    Some(c) => Some(c),
                    None => {
                        self.error(
                            codes::BAD_CONTAINER_LITERAL,
                            format!(
                                "Array expression must have entries of consistent type. \
                                 Expected {prev} but found {t}."
                            ),
                            el.span,
                        );
                        return ERROR;
                    }
                },
            };
        }
        match ty {
            Some(t) if !t.is_error() => (Type::Array(Box::new(t)), ad),
            Some(_) => ERROR,
            None => {
                self.error(
                    codes::BAD_CONTAINER_LITERAL,
                    "Array expressions must contain at least one element.",
                    span,
                );
                ERROR
            }
        }
    }

    fn row_vector_literal(&mut self, span: Span, elems: &[Expr]) -> Typed {
        let typed: Vec<(Type, AdLevel, Span)> = elems
            .iter()
            .map(|el| {
                let (t, a) = self.expr(el);
                (t, a, el.span)
            })
            .collect();
        let ad = typed
            .iter()
            .fold(AdLevel::DataOnly, |acc, (_, a, _)| lub_ad(acc, *a));
        let first = typed.iter().map(|(t, _, _)| t).find(|t| !t.is_error());
        let rows = matches!(first, Some(Type::RowVector | Type::ComplexRowVector));
        let mut complex = false;
        for (t, _, s) in &typed {
            let ok = match t {
                Type::Error => true,
                Type::Int | Type::Real if !rows => true,
                Type::Complex if !rows => {
                    complex = true;
                    true
                }
                Type::RowVector if rows => true,
                Type::ComplexRowVector if rows => {
                    complex = true;
                    true
                }
                _ => false,
            };
            if !ok {
                let msg = if rows {
                    format!("Matrix expression must have all row_vector entries. Found type {t}.")
                } else {
                    format!(
                        "Row_vector expression must have all int, real or complex entries. Found type {t}."
                    )
                };
                self.error(codes::BAD_CONTAINER_LITERAL, msg, *s);
                return ERROR;
            }
        }
        let _ = span;
        let ty = match (rows, complex) {
            (true, false) => Type::Matrix,
            (true, true) => Type::ComplexMatrix,
            (false, false) => Type::RowVector,
            (false, true) => Type::ComplexRowVector,
        };
        (ty, ad)
    }

    /// Check an expression that must be `int` (conditions, loop bounds,
    /// sizes); `what` names it in the message.
    pub fn int_expr(&mut self, e: &Expr, what: &str) -> Typed {
        let (t, ad) = self.expr(e);
        if !t.is_int() && !t.is_error() {
            self.error(
                codes::WRONG_TYPE,
                format!("{what} must be of type int. Instead found type {t}."),
                e.span,
            );
            return ERROR;
        }
        (t, ad)
    }
}

/// `foo_lupdf` → `foo_lpdf`, `foo_lupmf` → `foo_lpmf` (the same function
/// without dropping constants).
pub fn normalized_name(name: &str) -> std::borrow::Cow<'_, str> {
    if let Some(stem) = name.strip_suffix("_lupdf") {
        format!("{stem}_lpdf").into()
    } else if let Some(stem) = name.strip_suffix("_lupmf") {
        format!("{stem}_lpmf").into()
    } else {
        name.into()
    }
}

pub fn is_unnormalized(name: &str) -> bool {
    name.ends_with("_lupdf") || name.ends_with("_lupmf")
}

/// Helper so `&mut Diagnostic` from `Checker::error` can take a help text.
pub trait DiagnosticExt {
    fn with_help_mut(&mut self, help: &str);
}

impl DiagnosticExt for crate::diagnostic::Diagnostic {
    fn with_help_mut(&mut self, help: &str) {
        self.help = Some(help.to_string());
    }
}
