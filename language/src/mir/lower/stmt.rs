//! Lowering statements.

use super::Lowerer;
use crate::check::Callee;
use crate::mir::{
    Expr, ExprKind, Index, LValue, LValueStep, Origin, Prim, Printable, Stmt, StmtKind, library,
};
use crate::syntax::ast;
use crate::types::{AdLevel, Type};

impl Lowerer<'_> {
    /// A statement as a list (a `{ }` block's statements stay in a block so
    /// their scope is kept).
    pub(super) fn stmt_as_block(&mut self, stmt: &ast::Stmt) -> Vec<Stmt> {
        match &stmt.kind {
            ast::StmtKind::Block(stmts) => self.stmts(stmts),
            _ => {
                let mut out = Vec::new();
                self.stmt_into(stmt, &mut out);
                out
            }
        }
    }

    fn stmts(&mut self, stmts: &[ast::Stmt]) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in stmts {
            self.stmt_into(s, &mut out);
        }
        out
    }

    pub(super) fn stmt_into(&mut self, stmt: &ast::Stmt, out: &mut Vec<Stmt>) {
        let span = stmt.span;
        let kind = match &stmt.kind {
            ast::StmtKind::Decl(decl) => {
                let var = self.declare(&decl.name, Origin::Local);
                let (ty, _) = self.sized_type(&decl.ty);
                let init = decl.init.as_ref().map(|e| self.expr(e));
                StmtKind::Decl { var, ty, init }
            }
            ast::StmtKind::Assign { lhs, op, rhs } => {
                let rhs_mir = self.expr(rhs);
                match &lhs.kind {
                    ast::ExprKind::TupleLit(items) if op.binary_op().is_none() => {
                        let Some(lhs) = items
                            .iter()
                            .map(|e| self.lvalue(e))
                            .collect::<Option<Vec<_>>>()
                        else {
                            return;
                        };
                        StmtKind::Unpack { lhs, rhs: rhs_mir }
                    }
                    _ => {
                        let Some(lv) = self.lvalue(lhs) else { return };
                        let rhs = match op.binary_op() {
                            None => rhs_mir,
                            Some(bin) => {
                                let current = self.expr(lhs);
                                let ty = current.ty.clone();
                                let ad = current.ad.max(rhs_mir.ad);
                                let Some(prim) = self.binary_prim(bin, span) else {
                                    return;
                                };
                                Expr {
                                    kind: ExprKind::Prim(prim, vec![current, rhs_mir]),
                                    ty,
                                    ad,
                                    span,
                                }
                            }
                        };
                        StmtKind::Assign { lhs: lv, rhs }
                    }
                }
            }
            ast::StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                // Each argument is evaluated once: the density's terms and
                // argument checks use it several times (a shared `X * beta`
                // would otherwise be computed, and differentiated, twice).
                let y = self.expr(lhs);
                let mut all = vec![self.bind_once(y, out)];
                for a in args {
                    let a = self.expr(a);
                    all.push(self.bind_once(a, out));
                }
                let all_args = all.clone();
                let term = match self.checked.calls.get(&span) {
                    Some(Callee::User(symbol)) => {
                        let Some(&fun) = self.funs.get(symbol) else {
                            return;
                        };
                        let ad = all.iter().map(|a| a.ad).max().unwrap_or(AdLevel::DataOnly);
                        Some(Expr {
                            kind: ExprKind::Call(fun, all),
                            ty: Type::Real,
                            ad,
                            span,
                        })
                    }
                    _ => self.distribution_term(&dist.name, all, true, span),
                };
                let Some(term) = term else { return };
                match truncation {
                    None => StmtKind::TargetAdd(term),
                    Some(t) => match self.truncated(&dist.name, all_args, t, term, span) {
                        Some(kind) => kind,
                        None => return,
                    },
                }
            }
            ast::StmtKind::TargetPlus(e) => StmtKind::TargetAdd(self.expr(e)),
            ast::StmtKind::JacobianPlus(e) => StmtKind::JacobianAdd(self.expr(e)),
            ast::StmtKind::Expr(e) => StmtKind::Effect(self.expr(e)),
            ast::StmtKind::Break => StmtKind::Break,
            ast::StmtKind::Continue => StmtKind::Continue,
            ast::StmtKind::Return(e) => StmtKind::Return(e.as_ref().map(|e| self.expr(e))),
            ast::StmtKind::Print(items) => StmtKind::Print(self.printables(items)),
            ast::StmtKind::Reject(items) => StmtKind::Reject(self.printables(items)),
            ast::StmtKind::FatalError(items) => StmtKind::FatalError(self.printables(items)),
            ast::StmtKind::If {
                cond,
                then,
                otherwise,
            } => StmtKind::If {
                cond: self.expr(cond),
                then: self.stmt_as_block(then),
                otherwise: otherwise
                    .as_ref()
                    .map_or_else(Vec::new, |s| self.stmt_as_block(s)),
            },
            ast::StmtKind::While { cond, body } => StmtKind::While {
                cond: self.expr(cond),
                body: self.stmt_as_block(body),
            },
            ast::StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let lower = self.expr(lower);
                let upper = self.expr(upper);
                let var = self.declare(var, Origin::LoopVar);
                StmtKind::For {
                    var,
                    lower,
                    upper,
                    body: self.stmt_as_block(body),
                }
            }
            ast::StmtKind::ForEach { var, iter, body } => {
                let Some(kind) = self.foreach(var, iter, body, span) else {
                    return;
                };
                kind
            }
            ast::StmtKind::Block(stmts) => StmtKind::Block(self.stmts(stmts)),
            ast::StmtKind::Profile { body, .. } => StmtKind::Block(self.stmts(body)),
            ast::StmtKind::Skip => return,
            ast::StmtKind::FunDef(_) | ast::StmtKind::Error => return,
        };
        out.push(Stmt { kind, span });
    }

    /// `e` itself if it is a variable or literal or data-only; otherwise a
    /// temporary bound to it (the `let` goes to `out`).
    fn bind_once(&mut self, e: Expr, out: &mut Vec<Stmt>) -> Expr {
        let trivial = matches!(
            e.kind,
            ExprKind::Var(_) | ExprKind::Int(_) | ExprKind::Real(_)
        );
        if trivial || e.ad == AdLevel::DataOnly {
            return e;
        }
        let var = self.fresh_var("arg", e.ty.clone(), e.span);
        let atom = Expr {
            kind: ExprKind::Var(var),
            ..e.clone()
        };
        out.push(Stmt {
            kind: StmtKind::Let { var, value: e },
            span: atom.span,
        });
        atom
    }

    fn printables(&mut self, items: &[ast::Expr]) -> Vec<Printable> {
        items
            .iter()
            .map(|e| match &e.kind {
                ast::ExprKind::StrLit(s) => Printable::Str(s.clone()),
                _ => Printable::Expr(self.expr(e)),
            })
            .collect()
    }

    /// `for (x in c) body` becomes an index loop over `c`'s elements:
    /// arrays by their first dimension, vectors and matrices element by
    /// element in column-major order (Stan's order).
    fn foreach(
        &mut self,
        var: &ast::Ident,
        iter: &ast::Expr,
        body: &ast::Stmt,
        span: crate::span::Span,
    ) -> Option<StmtKind> {
        let container = self.expr(iter);
        let elem_ty = match &container.ty {
            Type::Array(inner) => (**inner).clone(),
            Type::Vector | Type::RowVector | Type::Matrix => Type::Real,
            Type::ComplexVector | Type::ComplexRowVector | Type::ComplexMatrix => Type::Complex,
            other => {
                self.unsupported(format_args!("foreach over `{other}`"), span);
                return None;
            }
        };
        // Hold the container in a temporary so it is evaluated once.
        let holder = self.fresh_var("foreach_container", container.ty.clone(), iter.span);
        let index = self.fresh_var("foreach_index", Type::Int, iter.span);
        let elem = self.declare(var, Origin::Local);
        let int = |kind: ExprKind| Expr {
            kind,
            ty: Type::Int,
            ad: AdLevel::DataOnly,
            span: iter.span,
        };
        let holder_expr = Expr {
            kind: ExprKind::Var(holder),
            ty: container.ty.clone(),
            ad: container.ad,
            span: iter.span,
        };
        let count_prim = if matches!(container.ty, Type::Array(_)) {
            Prim::Size
        } else {
            Prim::NumElements
        };
        let count = int(ExprKind::Prim(count_prim, vec![holder_expr.clone()]));
        // Element k of a matrix in column-major order is `to_vector(m)[k]`.
        let indexable = if matches!(container.ty, Type::Matrix | Type::ComplexMatrix) {
            let ty = if container.ty == Type::Matrix {
                Type::Vector
            } else {
                Type::ComplexVector
            };
            Expr {
                kind: ExprKind::Prim(Prim::ToVector, vec![holder_expr.clone()]),
                ty,
                ad: container.ad,
                span: iter.span,
            }
        } else {
            holder_expr.clone()
        };
        let element = Expr {
            kind: ExprKind::Index(
                Box::new(indexable),
                vec![Index::Single(int(ExprKind::Var(index)))],
            ),
            ty: elem_ty,
            ad: container.ad,
            span: iter.span,
        };
        let mut loop_body = vec![Stmt {
            kind: StmtKind::Let {
                var: elem,
                value: element,
            },
            span: iter.span,
        }];
        loop_body.extend(self.stmt_as_block(body));
        Some(StmtKind::Block(vec![
            Stmt {
                kind: StmtKind::Let {
                    var: holder,
                    value: container,
                },
                span,
            },
            Stmt {
                kind: StmtKind::For {
                    var: index,
                    lower: int(ExprKind::Int(1)),
                    upper: count,
                    body: loop_body,
                },
                span,
            },
        ]))
    }

    fn lvalue(&mut self, e: &ast::Expr) -> Option<LValue> {
        match &e.kind {
            ast::ExprKind::Var(id) => Some(LValue {
                var: self.resolve_var(id)?,
                path: Vec::new(),
            }),
            ast::ExprKind::Paren(inner) => self.lvalue(inner),
            ast::ExprKind::Index(base, idx) => {
                let mut lv = self.lvalue(base)?;
                let base_ty = self.type_of(base);
                let idx = self.indexes(&base_ty, idx);
                lv.path.push(LValueStep::Index(idx));
                Some(lv)
            }
            ast::ExprKind::TupleProj(base, k) => {
                let mut lv = self.lvalue(base)?;
                lv.path.push(LValueStep::TupleProj(*k));
                Some(lv)
            }
            _ => {
                self.unsupported("this assignment target", e.span);
                None
            }
        }
    }

    /// The `~` / `_lpdf` term of a distribution call.
    /// `y ~ d(θ) T[L, U]`: the density, then log 0 outside [L, U], else
    /// minus the log probability of [L, U] (continuous families only).
    fn truncated(
        &mut self,
        family: &str,
        args: Vec<Expr>,
        t: &ast::Truncation,
        density: Expr,
        span: crate::span::Span,
    ) -> Option<StmtKind> {
        let y = args[0].clone();
        if !y.ty.is_scalar() {
            self.unsupported("truncation of a container variate", span);
            return None;
        }
        let discrete = y.ty == Type::Int;
        let lower = t.lower.as_ref().map(|e| self.expr(e));
        // For a mass function the mass of [L, U] is F(U) − F(L − 1).
        let below_lower = lower.as_ref().map(|l| {
            if discrete {
                Expr {
                    kind: ExprKind::Prim(Prim::Sub, vec![l.clone(), int_expr(1, span)]),
                    ..l.clone()
                }
            } else {
                l.clone()
            }
        });
        let upper = t.upper.as_ref().map(|e| self.expr(e));
        let bound_args = |b: &Expr| {
            let mut a = args.clone();
            a[0] = b.clone();
            a
        };
        let log_cdf =
            |upper_tail: bool, a: Vec<Expr>| library::log_cdf(family, upper_tail, a, span);
        let compare = |p: Prim, a: Expr, b: Expr| Expr {
            ad: a.ad.max(b.ad),
            kind: ExprKind::Prim(p, vec![a, b]),
            ty: Type::Int,
            span,
        };
        let result = (|| -> Result<(Expr, Expr), library::Unsupported> {
            Ok(match (&lower, &upper) {
                (Some(l), Some(u)) => {
                    let hi = log_cdf(false, bound_args(u))?;
                    let lo = log_cdf(false, bound_args(below_lower.as_ref().unwrap_or(l)))?;
                    let outside = Expr {
                        ad: y.ad,
                        kind: ExprKind::Cond(
                            Box::new(compare(Prim::Lt, y.clone(), l.clone())),
                            Box::new(int_expr(1, span)),
                            Box::new(compare(Prim::Gt, y.clone(), u.clone())),
                        ),
                        ty: Type::Int,
                        span,
                    };
                    (outside, library::prim(Prim::LogDiffExp, vec![hi, lo], span))
                }
                (Some(l), None) => (
                    compare(Prim::Lt, y.clone(), l.clone()),
                    log_cdf(true, bound_args(below_lower.as_ref().unwrap_or(l)))?,
                ),
                (None, Some(u)) => (
                    compare(Prim::Gt, y.clone(), u.clone()),
                    log_cdf(false, bound_args(u))?,
                ),
                (None, None) => (int_expr(0, span), real_expr(0.0, span)),
            })
        })();
        let (outside, log_mass) = match result {
            Ok(parts) => parts,
            Err(library::Unsupported(what)) => {
                self.unsupported(format_args!("truncation needing {what}"), span);
                return None;
            }
        };
        let stmt = |kind| Stmt { kind, span };
        let minus_mass = library::prim(Prim::Neg, vec![log_mass], span);
        Some(StmtKind::Block(vec![
            stmt(StmtKind::TargetAdd(density)),
            stmt(StmtKind::If {
                cond: outside,
                then: vec![stmt(StmtKind::TargetAdd(real_expr(
                    f64::NEG_INFINITY,
                    span,
                )))],
                otherwise: vec![stmt(StmtKind::TargetAdd(minus_mass))],
            }),
        ]))
    }

    pub(super) fn distribution_term(
        &mut self,
        family: &str,
        args: Vec<Expr>,
        propto: bool,
        span: crate::span::Span,
    ) -> Option<Expr> {
        match library::distribution(family, args, propto, span) {
            Ok(e) => Some(e),
            Err(library::Unsupported(name)) => {
                self.unsupported(format_args!("{name}"), span);
                None
            }
        }
    }
}

fn int_expr(i: i64, span: crate::span::Span) -> Expr {
    Expr {
        kind: ExprKind::Int(i),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    }
}

fn real_expr(x: f64, span: crate::span::Span) -> Expr {
    Expr {
        kind: ExprKind::Real(x),
        ty: Type::Real,
        ad: AdLevel::DataOnly,
        span,
    }
}
