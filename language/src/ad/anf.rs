//! A-normal form of expressions for the reverse sweep.
//!
//! [`Transformer::anf`] binds every differentiable subexpression to a fresh
//! temporary (`let t = prim(atoms)`), so the derivative rules see only
//! variables and data-only expressions as operands. Data-only
//! subexpressions stay whole: they have no adjoint and are recomputed where
//! a rule needs their value.

use super::sweep::Transformer;
use crate::mir::{Expr, ExprKind, Stmt, StmtKind};
use crate::types::AdLevel;

/// A statement list that computes `atom` from atoms.
pub(super) struct Anf {
    pub stmts: Vec<Stmt>,
    pub atom: Expr,
}

impl Transformer {
    pub(super) fn anf(&mut self, e: &Expr) -> Anf {
        let mut stmts = Vec::new();
        let atom = self.anf_into(e, &mut stmts);
        Anf { stmts, atom }
    }

    fn bind(&mut self, value: Expr, stmts: &mut Vec<Stmt>) -> Expr {
        let t = self.temp(&value.ty, "t");
        let span = value.span;
        let atom = self.var_expr(t, span);
        stmts.push(Stmt {
            kind: StmtKind::Let { var: t, value },
            span,
        });
        atom
    }

    pub(super) fn anf_into(&mut self, e: &Expr, stmts: &mut Vec<Stmt>) -> Expr {
        if e.ad == AdLevel::DataOnly || !Self::is_real_valued(&e.ty) {
            return e.clone();
        }
        let rebuild = |kind: ExprKind| Expr { kind, ..e.clone() };
        match &e.kind {
            ExprKind::Var(_) => e.clone(),
            ExprKind::Prim(p, args) => {
                let atoms = args.iter().map(|a| self.anf_into(a, stmts)).collect();
                self.bind(rebuild(ExprKind::Prim(*p, atoms)), stmts)
            }
            ExprKind::Call(f, args) => {
                let atoms = args.iter().map(|a| self.anf_into(a, stmts)).collect();
                self.bind(rebuild(ExprKind::Call(*f, atoms)), stmts)
            }
            ExprKind::Ode(call) => {
                let atoms = call
                    .operands()
                    .into_iter()
                    .map(|a| self.anf_into(a, stmts))
                    .collect();
                self.bind(
                    rebuild(ExprKind::Ode(Box::new(call.with_operands(atoms)))),
                    stmts,
                )
            }
            ExprKind::Index(base, idx) => {
                let base = self.anf_into(base, stmts);
                let base = self.as_var_atom(base, stmts);
                self.bind(rebuild(ExprKind::Index(Box::new(base), idx.clone())), stmts)
            }
            ExprKind::ArrayLit(items) => {
                let atoms = items.iter().map(|a| self.anf_into(a, stmts)).collect();
                self.bind(rebuild(ExprKind::ArrayLit(atoms)), stmts)
            }
            ExprKind::RowVectorLit(items) => {
                let atoms = items.iter().map(|a| self.anf_into(a, stmts)).collect();
                self.bind(rebuild(ExprKind::RowVectorLit(atoms)), stmts)
            }
            ExprKind::Cond(c, a, b) => {
                // Evaluate only the chosen branch, as the source does.
                let t = self.temp(&e.ty, "cond");
                let mut then_stmts = Vec::new();
                let a = self.anf_into(a, &mut then_stmts);
                then_stmts.push(Stmt {
                    kind: StmtKind::Let { var: t, value: a },
                    span: e.span,
                });
                let mut else_stmts = Vec::new();
                let b = self.anf_into(b, &mut else_stmts);
                else_stmts.push(Stmt {
                    kind: StmtKind::Let { var: t, value: b },
                    span: e.span,
                });
                stmts.push(Stmt {
                    kind: StmtKind::If {
                        cond: (**c).clone(),
                        then: then_stmts,
                        otherwise: else_stmts,
                    },
                    span: e.span,
                });
                self.cond_temps.insert(t);
                self.var_expr(t, e.span)
            }
            ExprKind::TupleLit(items) => {
                let atoms = items.iter().map(|a| self.anf_into(a, stmts)).collect();
                self.bind(rebuild(ExprKind::TupleLit(atoms)), stmts)
            }
            ExprKind::TupleProj(base, k) => {
                let base = self.anf_into(base, stmts);
                let base = self.as_var_atom(base, stmts);
                self.bind(rebuild(ExprKind::TupleProj(Box::new(base), *k)), stmts)
            }
            ExprKind::Target => self.bind(e.clone(), stmts),
            _ => {
                // Calls, tuples, ...: kept whole; the reverse rule reports
                // them as not differentiable yet.
                self.bind(e.clone(), stmts)
            }
        }
    }

    /// Index bases must be variables so the adjoint can be indexed too.
    fn as_var_atom(&mut self, atom: Expr, stmts: &mut Vec<Stmt>) -> Expr {
        if matches!(atom.kind, ExprKind::Var(_)) || atom.ad == AdLevel::DataOnly {
            atom
        } else {
            self.bind(atom, stmts)
        }
    }
}
