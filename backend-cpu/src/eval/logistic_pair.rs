//! `log_inv_logit(x)` and `inv_logit(-x)` of one variable in one pass.
//!
//! The gradient of `bernoulli_logit` (and of any `log_inv_logit(x)`)
//! computes `log_inv_logit(t)` in the forward sweep and `inv_logit(-t)`,
//! its derivative, in the reverse sweep: for a logistic regression two
//! maps over N × Z numbers, each with an exponential of `−|t|` — the same
//! one. When a program computes both of one variable ([`paired_vars`],
//! found once per program), the first computes both in one pass
//! ([`bat_math::scalar::log_inv_logit_and_neg_inv_logit`], bit for bit the
//! two functions) and keeps the second ([`LogisticPairs`]) until the
//! program asks for it — if the variable still holds the same value for
//! the same lanes; otherwise it is computed afresh as without the pair.

use crate::lanes::{Lanes, Slot};
use language::mir::{Expr, ExprKind, Prim, Stmt, VarId, visit};
use std::sync::Arc;

/// The variables `v` of `stmts` with both `log_inv_logit(v)` and
/// `inv_logit(-v)` somewhere in them.
pub fn paired_vars<'a>(stmts: impl IntoIterator<Item = &'a Stmt>) -> Vec<VarId> {
    let mut stmts: Vec<Stmt> = stmts.into_iter().cloned().collect();
    let (mut logs, mut negs) = (Vec::new(), Vec::new());
    visit::for_each_expr(&mut stmts, &mut |e| {
        if let Some(v) = log_inv_logit_of_var(e) {
            logs.push(v);
        }
        if let Some(v) = inv_logit_of_negated_var(e) {
            negs.push(v);
        }
    });
    logs.retain(|v| negs.contains(v));
    logs.sort_unstable();
    logs.dedup();
    logs
}

/// `v` of `log_inv_logit(v)`.
fn log_inv_logit_of_var(e: &Expr) -> Option<VarId> {
    match &e.kind {
        ExprKind::Prim(Prim::LogInvLogit, args) => match args.as_slice() {
            [
                Expr {
                    kind: ExprKind::Var(v),
                    ..
                },
            ] => Some(*v),
            _ => None,
        },
        _ => None,
    }
}

/// `v` of `inv_logit(-v)`.
fn inv_logit_of_negated_var(e: &Expr) -> Option<VarId> {
    match &e.kind {
        ExprKind::Prim(Prim::InvLogit, args) => match args.as_slice() {
            [
                Expr {
                    kind: ExprKind::Prim(Prim::Neg, inner),
                    ..
                },
            ] => match inner.as_slice() {
                [
                    Expr {
                        kind: ExprKind::Var(v),
                        ..
                    },
                ] => Some(*v),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The paired variables of a program, and the `inv_logit(-x)` computed
/// with the last `log_inv_logit(x)` of one of them.
#[derive(Clone, Debug, Default)]
pub struct LogisticPairs {
    paired: Arc<[VarId]>,
    /// Most recent last; at most [`MAX_KEPT`].
    kept: Vec<Kept>,
}

/// Pairs kept at once (a model with several `bernoulli_logit`s computes
/// all their values before the first derivative).
const MAX_KEPT: usize = 4;

#[derive(Clone, Debug)]
struct Kept {
    var: VarId,
    /// The variable's value it was computed from (held, so it cannot
    /// change in place).
    x: Arc<Slot>,
    lanes: Lanes,
    neg_inv_logit: Slot,
}

impl LogisticPairs {
    /// For a program whose paired variables are `paired`
    /// ([`paired_vars`]).
    pub fn new(paired: Arc<[VarId]>) -> LogisticPairs {
        LogisticPairs {
            paired,
            kept: Vec::new(),
        }
    }

    /// The same program's pairs with nothing kept (for another batch).
    pub fn fresh(&self) -> LogisticPairs {
        LogisticPairs::new(self.paired.clone())
    }

    /// `arg`, if it is a paired variable (`log_inv_logit(arg)` then
    /// computes the pair).
    pub(super) fn paired_var(&self, arg: &Expr) -> Option<VarId> {
        match arg.kind {
            ExprKind::Var(v) if self.paired.contains(&v) => Some(v),
            _ => None,
        }
    }

    /// Keep `inv_logit(-x)` of variable `var`'s value `x` on `lanes`.
    pub(super) fn keep(&mut self, var: VarId, x: Arc<Slot>, lanes: Lanes, neg_inv_logit: Slot) {
        self.kept.retain(|k| k.var != var);
        if self.kept.len() == MAX_KEPT {
            self.kept.remove(0);
        }
        self.kept.push(Kept {
            var,
            x,
            lanes,
            neg_inv_logit,
        });
    }

    /// `inv_logit(-x)` for `arg` (a variable whose value is `x` now) on
    /// `lanes`, if it was kept for exactly that value and those lanes.
    pub(super) fn take(&mut self, arg: &Expr, x: &Arc<Slot>, lanes: &Lanes) -> Option<Slot> {
        let ExprKind::Var(v) = arg.kind else {
            return None;
        };
        let i = self.kept.iter().position(|k| k.var == v)?;
        let kept = &self.kept[i];
        if !Arc::ptr_eq(&kept.x, x) || kept.lanes != *lanes {
            // Stale: the variable changed since.
            self.kept.remove(i);
            return None;
        }
        Some(self.kept.remove(i).neg_inv_logit)
    }

    /// How many values are kept (for tests).
    pub fn kept(&self) -> usize {
        self.kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::eval;
    use crate::lanes::{Dense, State};
    use language::data::Shape;
    use language::span::Span;
    use language::types::{AdLevel, Type};

    fn expr(kind: ExprKind) -> Expr {
        Expr {
            kind,
            ty: Type::Vector,
            ad: AdLevel::DataOnly,
            span: Span::default(),
        }
    }

    fn dense(xs: &[f64], z: usize) -> Arc<Slot> {
        Arc::new(Slot::Real(Dense::new(
            Shape::Vector(xs.len() / z),
            z,
            xs.to_vec(),
        )))
    }

    fn bits(slot: &Slot) -> Vec<u64> {
        match slot {
            Slot::Real(d) => d.data.iter().map(|x| x.to_bits()).collect(),
            other => panic!("not dense reals: {other:?}"),
        }
    }

    /// `log_inv_logit(v)` keeps `inv_logit(-v)`; the next `inv_logit(-v)`
    /// takes it while `v` holds the same value, and computes afresh (the
    /// new value's, not the kept one) once `v` changed.
    #[test]
    fn a_kept_pair_is_used_only_for_the_same_value() {
        let (mir, diags) = language::compile_model("parameters { vector[3] v; }", "pair");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        let v = VarId(mir.vars.iter().position(|x| x.name == "v").unwrap() as u32);
        let z = 2;
        let mut st = State::new(&mir, &[], z);
        st.logistic = LogisticPairs::new(Arc::from(vec![v]));
        let all = crate::lanes::Lanes::all(z);
        let var = || expr(ExprKind::Var(v));
        let log_inv_logit = expr(ExprKind::Prim(Prim::LogInvLogit, vec![var()]));
        let neg = expr(ExprKind::Prim(Prim::Neg, vec![var()]));
        let inv_logit_neg = expr(ExprKind::Prim(Prim::InvLogit, vec![neg]));
        let first = [0.5, -3.0, 40.0, -0.25, 2.0, -800.0];
        let second = [1.5, 3.0, -4.0, 0.75, -2.0, 9.0];
        let expect = |xs: &[f64], f: fn(f64) -> f64| -> Vec<u64> {
            xs.iter().map(|&x| f(x).to_bits()).collect()
        };
        let neg_inv = |x: f64| bat_math::scalar::inv_logit(-x);

        st.vars[v.0 as usize] = Some(dense(&first, z));
        let value = eval(&log_inv_logit, &mut st, &all).unwrap();
        assert_eq!(
            bits(&value),
            expect(&first, bat_math::scalar::log_inv_logit)
        );
        assert_eq!(st.logistic.kept(), 1);
        let taken = eval(&inv_logit_neg, &mut st, &all).unwrap();
        assert_eq!(bits(&taken), expect(&first, neg_inv));
        assert_eq!(st.logistic.kept(), 0, "taken, not kept again");

        // Kept for `first`, asked for after `v` became `second`.
        eval(&log_inv_logit, &mut st, &all).unwrap();
        assert_eq!(st.logistic.kept(), 1);
        st.vars[v.0 as usize] = Some(dense(&second, z));
        let fresh = eval(&inv_logit_neg, &mut st, &all).unwrap();
        assert_eq!(bits(&fresh), expect(&second, neg_inv));
        assert_eq!(st.logistic.kept(), 0, "the stale value is dropped");

        // Only for the lanes it was kept for.
        eval(&log_inv_logit, &mut st, &all).unwrap();
        let one = crate::lanes::Lanes::from_indices(z, vec![1]);
        eval(&inv_logit_neg, &mut st, &one).unwrap();
        assert_eq!(st.logistic.kept(), 0);
    }

    /// Both functions of one variable are found; either alone, or of an
    /// expression rather than a variable, is not a pair.
    #[test]
    fn pairs_need_both_functions_of_one_variable() {
        let source = "parameters { vector[3] a; vector[3] b; vector[3] c; }
            model {
              target += sum(log_inv_logit(a)) + sum(inv_logit(-a));
              target += sum(log_inv_logit(b));
              target += sum(inv_logit(-(c + 1)));
            }";
        let (mir, diags) = language::compile_model(source, "pairs");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        let name = |v: &VarId| mir.vars[v.0 as usize].name.clone();
        let found: Vec<String> = paired_vars(&mir.model).iter().map(name).collect();
        assert_eq!(found, ["a"]);
    }
}
