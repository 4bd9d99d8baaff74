//! Hoisting: expressions computed from data, transformed data and
//! literals alone are computed once per model instead of at every
//! evaluation — the argument checks of data (`check_positive(sigma, 3)`),
//! `transpose(X)` of a data matrix, `2 * y - 1` of a data array, …
//!
//! Each maximal such expression becomes a [`Hoisted`] value (one per
//! distinct expression) that the model computes after transformed data
//! (the interpreter's `Model::globals_for`) and every executor reads like
//! transformed data.
//!
//! # Invariants
//! - A hoisted expression reads only variables of origin data or
//!   transformed data that the body never writes (hoisted values
//!   included), literals and the operations on them; no target, Jacobian
//!   switch, stack, random draw or user-function call. So it has the same
//!   value at every evaluation, wherever it stands.
//! - An expression that cannot fail ([`cannot_fail`]) is replaced by its
//!   hoisted variable: computing it early, even where the body would not
//!   have computed it, changes nothing.
//! - An expression that may fail — a check of data, which Stan evaluates
//!   (and fails) at every evaluation of the log density, not when the data
//!   is read — is replaced by `ok ? h : e` with the original `e` kept: the
//!   model records whether `e` evaluated (`ok`), and when it did not, `e`
//!   is evaluated in place and fails there, with the same error and span,
//!   at every evaluation that reaches it, as it did before hoisting. Such
//!   a guard is never hoisted again. A plain indexing of a variable (as
//!   cheap as the guard) is left alone.
//! - Transform arguments of parameter statements are left alone (they
//!   must stay atoms).

use std::collections::HashMap;

use super::analysis::cannot_fail;
use crate::mir::visit::{bodies_mut, children_mut, own_exprs_mut, walk, write_counts};
use crate::mir::{Expr, ExprKind, Hoisted, Origin, Program, Stmt, StmtKind, VarId, VarInfo};
use crate::span::Span;
use crate::types::{AdLevel, Type};

/// Hoist every data-only expression of `body` into `program.hoisted`.
/// Returns whether anything changed.
pub(crate) fn run(program: &mut Program, body: &mut [Stmt]) -> bool {
    let writes = write_counts(body, program.vars.len());
    let invariant_vars = program
        .vars
        .iter()
        .enumerate()
        .map(|(i, v)| matches!(v.origin, Origin::Data | Origin::TransformedData) && writes[i] == 0)
        .collect();
    let mut h = Hoister {
        known: program
            .hoisted
            .iter()
            .map(|h| (super::analysis::key(&h.value), (h.var, h.ok)))
            .collect(),
        guards: program.hoisted.iter().filter_map(|h| h.ok).collect(),
        invariant_vars,
        program,
        changed: false,
    };
    h.list(body);
    h.changed
}

struct Hoister<'p> {
    program: &'p mut Program,
    /// Hoisted values by expression key.
    known: HashMap<String, (VarId, Option<VarId>)>,
    /// The `ok` variables of hoisted values that may fail.
    guards: Vec<VarId>,
    invariant_vars: Vec<bool>,
    changed: bool,
}

impl Hoister<'_> {
    fn list(&mut self, stmts: &mut [Stmt]) {
        for s in stmts {
            let atoms_only = matches!(
                s.kind,
                StmtKind::ReadParam { .. }
                    | StmtKind::ParamAdjoint { .. }
                    | StmtKind::CheckConstraint { .. }
            );
            if !atoms_only {
                own_exprs_mut(s, &mut |e| self.expr(e));
            }
            for body in bodies_mut(s) {
                self.list(body);
            }
        }
    }

    fn expr(&mut self, e: &mut Expr) {
        if self.is_guard(e) {
            return;
        }
        if self.invariant(e) && worth_hoisting(e) {
            self.hoist(e);
            return;
        }
        children_mut(e, &mut |c| self.expr(c));
    }

    fn is_guard(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Cond(c, _, _)
            if matches!(c.kind, ExprKind::Var(v) if self.guards.contains(&v)))
    }

    fn invariant(&self, e: &Expr) -> bool {
        let mut ok = true;
        walk(e, &mut |x| {
            ok &= match &x.kind {
                ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Imag(_) => true,
                ExprKind::Var(v) => self.invariant_vars[v.0 as usize],
                ExprKind::Prim(p, _) => !p.is_rng(),
                ExprKind::Cond(..) => !self.is_guard(x),
                ExprKind::Index(..)
                | ExprKind::ArrayLit(_)
                | ExprKind::RowVectorLit(_)
                | ExprKind::TupleLit(_)
                | ExprKind::TupleProj(..)
                | ExprKind::ZerosLike(_)
                | ExprKind::Partial { .. } => true,
                ExprKind::Call(..)
                | ExprKind::Ode(_)
                | ExprKind::Target
                | ExprKind::JacobianOn
                | ExprKind::Pop(_) => false,
            }
        });
        ok
    }

    fn hoist(&mut self, e: &mut Expr) {
        let k = super::analysis::key(e);
        let (var, ok) = match self.known.get(&k) {
            Some(&found) => found,
            None => {
                let var = self.new_var(&e.ty, "hoisted");
                let ok = (!cannot_fail(e)).then(|| self.new_var(&Type::Int, "hoisted_ok"));
                self.program.hoisted.push(Hoisted {
                    var,
                    value: e.clone(),
                    ok,
                });
                self.known.insert(k, (var, ok));
                self.invariant_vars.push(true);
                if let Some(ok) = ok {
                    self.invariant_vars.push(true);
                    self.guards.push(ok);
                }
                (var, ok)
            }
        };
        let read = |v: VarId, ty: Type| Expr {
            kind: ExprKind::Var(v),
            ty,
            ad: AdLevel::DataOnly,
            span: e.span,
        };
        let value = read(var, e.ty.clone());
        *e = match ok {
            None => value,
            Some(ok) => Expr {
                kind: ExprKind::Cond(
                    Box::new(read(ok, Type::Int)),
                    Box::new(value),
                    Box::new(e.clone()),
                ),
                ty: e.ty.clone(),
                ad: AdLevel::DataOnly,
                span: e.span,
            },
        };
        self.changed = true;
    }

    fn new_var(&mut self, ty: &Type, hint: &str) -> VarId {
        let id = VarId(self.program.vars.len() as u32);
        self.program.vars.push(VarInfo {
            name: format!("{hint}__{}", id.0),
            ty: ty.clone(),
            origin: Origin::TransformedData,
            span: Span::default(),
        });
        id
    }
}

/// Not a variable or literal, nor a plain indexing that may fail (as cheap
/// as the guard that would replace it).
fn worth_hoisting(e: &Expr) -> bool {
    let leaf = |x: &Expr| {
        matches!(
            x.kind,
            ExprKind::Var(_) | ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Imag(_)
        )
    };
    match &e.kind {
        _ if leaf(e) => false,
        ExprKind::Index(base, idx) if !cannot_fail(e) => {
            let mut simple = leaf(base);
            for i in idx {
                crate::mir::visit::index_exprs(i, &mut |x| simple &= leaf(x));
            }
            !simple
        }
        _ => true,
    }
}

/// Drop hoisted values nothing reads any more (after other passes removed
/// their uses). Returns whether anything changed.
pub(crate) fn prune(program: &mut Program, body: &[Stmt]) -> bool {
    let n = program.vars.len();
    let mut reads = crate::mir::visit::read_counts(body, n);
    let before = program.hoisted.len();
    // Later hoisted values may read earlier ones: go backwards.
    let mut keep = vec![true; before];
    for (k, h) in program.hoisted.iter().enumerate().rev() {
        let used = reads[h.var.0 as usize] > 0 || h.ok.is_some_and(|ok| reads[ok.0 as usize] > 0);
        if used {
            crate::mir::visit::count_var_reads(&h.value, &mut reads);
        } else {
            keep[k] = false;
        }
    }
    let mut k = 0;
    program.hoisted.retain(|_| {
        k += 1;
        keep[k - 1]
    });
    program.hoisted.len() != before
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn data_expressions_are_hoisted_and_checks_guarded() {
        let mut t = TestProgram::new();
        let (x, y, s, a, b) = (
            t.param("x"),
            t.data_vector("y"),
            t.data_vector("sigma"),
            t.real("a"),
            t.vector("b"),
        );
        let two_y_minus_one = t.sub(t.mul(t.lit(2.0), t.var(y)), t.lit(1.0));
        let body = vec![
            t.read_param(x),
            // A check of data: guarded.
            t.let_(a, t.add(t.check_positive(t.var(s)), t.var(x))),
            // The same data expression twice: one hoisted value.
            t.let_(b, t.mul(t.clone_expr(&two_y_minus_one), t.var(x))),
            t.target_add(t.mul(two_y_minus_one, t.var(x))),
            // Indexing data by a literal: left alone.
            t.target_add(t.index(y, 1)),
        ];
        let after = t.run_full(body, |g| {
            super::run(&mut g.program, &mut g.body);
        });
        assert_eq!(
            after,
            [
                "hoisted {",
                "hoisted__6 = check_positive(sigma, 1) (else hoisted_ok__7 = 0);",
                "hoisted__8 = subtract(multiply(2.0, y), 1.0);",
                "}",
                "log_density_gradient {",
                "x = read_param(0);",
                "let a = add((hoisted_ok__7 ? hoisted__6 : check_positive(sigma, 1)), x);",
                "let b = multiply(hoisted__8, x);",
                "target += multiply(hoisted__8, x);",
                "target += y[1];",
                "}",
            ]
        );
    }
}
