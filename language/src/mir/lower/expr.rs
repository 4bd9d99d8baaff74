//! Lowering expressions.

use super::Lowerer;
use crate::check::Callee;
use crate::mir::{Expr, ExprKind, Index, Origin, Prim, VarId, VarInfo, library};
use crate::span::Span;
use crate::syntax::ast::{self, BinaryOp, UnaryOp};
use crate::types::{AdLevel, Type};

impl Lowerer<'_> {
    /// The checker's type of an AST expression.
    pub(super) fn type_of(&self, e: &ast::Expr) -> Type {
        self.type_and_ad(e).0
    }

    fn type_and_ad(&self, e: &ast::Expr) -> (Type, AdLevel) {
        match &e.kind {
            ast::ExprKind::Paren(inner) => self.type_and_ad(inner),
            _ => self
                .checked
                .expr_types
                .get(&e.span)
                .cloned()
                .unwrap_or((Type::Error, AdLevel::AutoDiff)),
        }
    }

    /// A compiler temporary (not visible in the source).
    pub(super) fn fresh_var(&mut self, hint: &str, ty: Type, span: Span) -> VarId {
        let var = VarId(self.out.vars.len() as u32);
        self.out.vars.push(VarInfo {
            name: format!("{hint}__{}", var.0),
            ty,
            origin: Origin::Local,
            span,
        });
        var
    }

    pub(super) fn expr(&mut self, e: &ast::Expr) -> Expr {
        let (ty, ad) = self.type_and_ad(e);
        let span = e.span;
        let kind = match &e.kind {
            ast::ExprKind::Paren(inner) => return self.expr(inner),
            ast::ExprKind::IntLit(text) => match text.parse::<i64>() {
                Ok(i) => ExprKind::Int(i),
                Err(_) => ExprKind::Real(text.parse().unwrap_or(f64::NAN)),
            },
            ast::ExprKind::RealLit(text) => ExprKind::Real(text.parse().unwrap_or(f64::NAN)),
            ast::ExprKind::ImagLit(text) => ExprKind::Imag(text.parse().unwrap_or(f64::NAN)),
            ast::ExprKind::StrLit(_) => {
                self.unsupported("a string outside print/reject", span);
                ExprKind::Int(0)
            }
            ast::ExprKind::Var(ident) => match self.resolve_var(ident) {
                Some(v) => ExprKind::Var(v),
                None => ExprKind::Int(0),
            },
            ast::ExprKind::Unary(op, operand) => {
                let operand = self.expr(operand);
                match op {
                    UnaryOp::Plus => return Expr { span, ..operand },
                    UnaryOp::Neg => ExprKind::Prim(Prim::Neg, vec![operand]),
                    UnaryOp::Not => ExprKind::Prim(Prim::Not, vec![operand]),
                }
            }
            ast::ExprKind::Binary(BinaryOp::And, a, b) => {
                // a && b  ==  a ? (b != 0) : 0, evaluating b only when needed.
                let (a, b) = (self.expr(a), self.expr(b));
                let zero = Expr {
                    kind: ExprKind::Int(0),
                    ty: Type::Int,
                    ad: AdLevel::DataOnly,
                    span,
                };
                ExprKind::Cond(Box::new(truthy(a)), Box::new(truthy(b)), Box::new(zero))
            }
            ast::ExprKind::Binary(BinaryOp::Or, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                let one = Expr {
                    kind: ExprKind::Int(1),
                    ty: Type::Int,
                    ad: AdLevel::DataOnly,
                    span,
                };
                ExprKind::Cond(Box::new(truthy(a)), Box::new(one), Box::new(truthy(b)))
            }
            ast::ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                match self.binary_prim(*op, span) {
                    Some(prim) => ExprKind::Prim(prim, vec![a, b]),
                    None => ExprKind::Int(0),
                }
            }
            ast::ExprKind::Cond(c, t, f) => ExprKind::Cond(
                Box::new(self.expr(c)),
                Box::new(self.expr(t)),
                Box::new(self.expr(f)),
            ),
            ast::ExprKind::Call { name, args, .. }
                if crate::mir::ode::method_of(&name.name).is_some() =>
            {
                let shape = crate::mir::ode::method_of(&name.name).expect("checked");
                self.ode_call(&name.name, args, shape, span)
            }
            ast::ExprKind::Call { name, args, .. } => {
                let args: Vec<Expr> = args.iter().map(|a| self.expr(a)).collect();
                match self.checked.calls.get(&span) {
                    Some(Callee::User(symbol)) => match self.funs.get(symbol) {
                        Some(&fun) => ExprKind::Call(fun, args),
                        None => {
                            self.unsupported(format_args!("call of `{}`", name.name), span);
                            ExprKind::Int(0)
                        }
                    },
                    _ => match self.builtin_call(&name.name, args, &ty, span) {
                        Some(kind) => kind,
                        None => ExprKind::Int(0),
                    },
                }
            }
            ast::ExprKind::Index(base, idx) => {
                let base_ty = self.type_of(base);
                let base = self.expr(base);
                let idx = self.indexes(&base_ty, idx);
                ExprKind::Index(Box::new(base), idx)
            }
            ast::ExprKind::TupleProj(base, k) => ExprKind::TupleProj(Box::new(self.expr(base)), *k),
            ast::ExprKind::Transpose(inner) => {
                ExprKind::Prim(Prim::Transpose, vec![self.expr(inner)])
            }
            ast::ExprKind::ArrayLit(items) => {
                ExprKind::ArrayLit(items.iter().map(|i| self.expr(i)).collect())
            }
            ast::ExprKind::RowVectorLit(items) => {
                ExprKind::RowVectorLit(items.iter().map(|i| self.expr(i)).collect())
            }
            ast::ExprKind::TupleLit(items) => {
                ExprKind::TupleLit(items.iter().map(|i| self.expr(i)).collect())
            }
            ast::ExprKind::Error => ExprKind::Int(0),
        };
        Expr { kind, ty, ad, span }
    }

    /// Library calls: distributions' densities, primitives, expansions.
    fn builtin_call(
        &mut self,
        name: &str,
        args: Vec<Expr>,
        ty: &Type,
        span: Span,
    ) -> Option<ExprKind> {
        if name == "target" {
            return Some(ExprKind::Target);
        }
        for (suffix, propto) in [
            ("_lupdf", true),
            ("_lupmf", true),
            ("_lpdf", false),
            ("_lpmf", false),
        ] {
            if let Some(family) = name.strip_suffix(suffix) {
                return self
                    .distribution_term(family, args, propto, span)
                    .map(|e| e.kind);
            }
        }
        match library::call(name, args, ty, span) {
            Ok(kind) => Some(kind),
            Err(library::Unsupported(what)) => {
                self.unsupported(what, span);
                None
            }
        }
    }

    pub(super) fn binary_prim(&mut self, op: BinaryOp, span: Span) -> Option<Prim> {
        Some(match op {
            BinaryOp::Add => Prim::Add,
            BinaryOp::Sub => Prim::Sub,
            BinaryOp::Mul => Prim::Mul,
            BinaryOp::Div => Prim::Div,
            BinaryOp::Mod => Prim::Mod,
            BinaryOp::IntDiv => Prim::IntDiv,
            BinaryOp::EltMul => Prim::EltMul,
            BinaryOp::EltDiv => Prim::EltDiv,
            BinaryOp::LeftDiv => Prim::LeftDiv,
            BinaryOp::Pow | BinaryOp::EltPow => Prim::Pow,
            BinaryOp::Eq => Prim::Eq,
            BinaryOp::Neq => Prim::Neq,
            BinaryOp::Lt => Prim::Lt,
            BinaryOp::Leq => Prim::Leq,
            BinaryOp::Gt => Prim::Gt,
            BinaryOp::Geq => Prim::Geq,
            BinaryOp::And | BinaryOp::Or => {
                self.unsupported("logical operator in compound assignment", span);
                return None;
            }
        })
    }

    /// Indexes of `base`: an int-array index is a multi-index.
    pub(super) fn indexes(&mut self, _base_ty: &Type, idx: &[ast::Index]) -> Vec<Index> {
        idx.iter()
            .map(|i| match i {
                ast::Index::All(_) => Index::All,
                ast::Index::Single(e) => {
                    let e = self.expr(e);
                    if matches!(e.ty, Type::Array(_)) {
                        Index::Multi(e)
                    } else {
                        Index::Single(e)
                    }
                }
                ast::Index::Upfrom(e) => Index::Upfrom(self.expr(e)),
                ast::Index::Downto(e) => Index::Downto(self.expr(e)),
                ast::Index::Between(a, b) => Index::Between(self.expr(a), self.expr(b)),
            })
            .collect()
    }
}

/// `e != 0` as an int (conditions of `&&`, `||`).
fn truthy(e: Expr) -> Expr {
    if e.ty == Type::Int {
        return e;
    }
    let span = e.span;
    let ad = e.ad;
    let zero = Expr {
        kind: ExprKind::Int(0),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    };
    Expr {
        kind: ExprKind::Prim(Prim::Neq, vec![e, zero]),
        ty: Type::Int,
        ad,
        span,
    }
}
