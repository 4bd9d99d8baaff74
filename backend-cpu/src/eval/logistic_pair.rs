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
//!
//! The reverse sweep multiplies the derivative by the outcomes' signs at
//! once (`elt_multiply(inv_logit(-v), h)`, `h` a variable, for a logistic
//! regression `2y − 1`): when the program does ([`Paired::factor`]) and
//! `h` holds a data vector with one number per element of `v`, the pass
//! keeps the product instead — each element `inv_logit(−v)·h`, the same
//! multiplication as the interpreter's, so the same bits — and the
//! product is taken only for that expression with `h` still holding the
//! same value (otherwise computed afresh): one pass over N × Z numbers
//! fewer.

use crate::lanes::{Lanes, Slot};
use language::mir::{Expr, ExprKind, Prim, Stmt, VarId, visit};
use std::sync::Arc;

/// A variable whose `log_inv_logit` and `inv_logit(-v)` a program both
/// computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paired {
    pub var: VarId,
    /// `h` of `elt_multiply(inv_logit(-var), h)`, if the program computes
    /// that product, with one `h` only.
    pub factor: Option<VarId>,
}

/// The variables `v` of `stmts` with both `log_inv_logit(v)` and
/// `inv_logit(-v)` somewhere in them.
pub fn paired_vars<'a>(stmts: impl IntoIterator<Item = &'a Stmt>) -> Vec<Paired> {
    let mut stmts: Vec<Stmt> = stmts.into_iter().cloned().collect();
    let (mut logs, mut negs, mut products) = (Vec::new(), Vec::new(), Vec::new());
    visit::for_each_expr(&mut stmts, &mut |e| {
        if let Some(v) = log_inv_logit_of_var(e) {
            logs.push(v);
        }
        if let Some(v) = inv_logit_of_negated_var(e) {
            negs.push(v);
        }
        if let Some(product) = scaled_inv_logit_of_negated_var(e) {
            products.push(product);
        }
    });
    logs.retain(|v| negs.contains(v));
    logs.sort_unstable();
    logs.dedup();
    logs.into_iter()
        .map(|var| {
            let mut hs = products.iter().filter(|(v, _)| *v == var).map(|(_, h)| *h);
            let first = hs.next();
            Paired {
                var,
                factor: first.filter(|&h| hs.all(|other| other == h)),
            }
        })
        .collect()
}

/// `(v, h)` of `elt_multiply(inv_logit(-v), h)` with `h` a variable.
pub(super) fn scaled_inv_logit_of_negated_var(e: &Expr) -> Option<(VarId, VarId)> {
    match &e.kind {
        ExprKind::Prim(Prim::EltMul, args) => match args.as_slice() {
            [
                product,
                Expr {
                    kind: ExprKind::Var(h),
                    ..
                },
            ] => Some((inv_logit_of_negated_var(product)?, *h)),
            _ => None,
        },
        _ => None,
    }
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
    paired: Arc<[Paired]>,
    /// Most recent last; at most [`MAX_KEPT`].
    kept: Vec<Kept>,
    handed: Option<HandedSums>,
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
    /// The value of the factor `h` it was multiplied by, if it was
    /// ([`Paired::factor`]): then it is `inv_logit(-x) .* h`.
    factor: Option<Arc<Slot>>,
    neg_inv_logit: Slot,
    /// Its per-lane `sum`, when computed in the same pass.
    sums: Option<Slot>,
}

/// The per-lane sums of a product handed out by [`LogisticPairs::take`],
/// for the `sum` of the variable that then holds it.
#[derive(Clone, Debug)]
struct HandedSums {
    /// The product as handed out (held: it cannot change in place).
    product: Arc<Slot>,
    lanes: Lanes,
    sums: Slot,
}

impl LogisticPairs {
    /// For a program whose paired variables are `paired`
    /// ([`paired_vars`]).
    pub fn new(paired: Arc<[Paired]>) -> LogisticPairs {
        LogisticPairs {
            paired,
            kept: Vec::new(),
            handed: None,
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
            ExprKind::Var(v) if self.paired.iter().any(|p| p.var == v) => Some(v),
            _ => None,
        }
    }

    /// The factor of paired variable `var` ([`Paired::factor`]).
    pub(super) fn factor(&self, var: VarId) -> Option<VarId> {
        self.paired.iter().find(|p| p.var == var)?.factor
    }

    /// Keep `inv_logit(-x)` of variable `var`'s value `x` on `lanes` (times
    /// `factor`'s value, if given; with its per-lane sums, if computed).
    pub(super) fn keep(
        &mut self,
        var: VarId,
        x: Arc<Slot>,
        lanes: Lanes,
        factor: Option<Arc<Slot>>,
        neg_inv_logit: Slot,
        sums: Option<Slot>,
    ) {
        self.kept.retain(|k| k.var != var);
        self.handed = None;
        if self.kept.len() == MAX_KEPT {
            self.kept.remove(0);
        }
        self.kept.push(Kept {
            var,
            x,
            lanes,
            factor,
            neg_inv_logit,
            sums,
        });
    }

    /// `inv_logit(-x)` for `arg` (a variable whose value is `x` now) on
    /// `lanes`, times `factor` (the value of the product's `h` now) when
    /// asked for `elt_multiply(inv_logit(-arg), h)`, if it was kept for
    /// exactly that value, those lanes and that factor.
    pub(super) fn take(
        &mut self,
        arg: &Expr,
        x: &Arc<Slot>,
        lanes: &Lanes,
        factor: Option<&Arc<Slot>>,
    ) -> Option<Arc<Slot>> {
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
        let same_factor = match (&kept.factor, factor) {
            (None, None) => true,
            (Some(kept), Some(now)) => Arc::ptr_eq(kept, now),
            _ => false,
        };
        if !same_factor {
            // Another product (or none): computed afresh, as without the
            // pair. Kept for a later request that matches.
            return None;
        }
        let kept = self.kept.remove(i);
        let product = Arc::new(kept.neg_inv_logit);
        self.handed = kept.sums.map(|sums| HandedSums {
            product: product.clone(),
            lanes: kept.lanes,
            sums,
        });
        Some(product)
    }

    /// The per-lane `sum` of `x` on `lanes`, if `x` is a product just
    /// handed out by [`LogisticPairs::take`] with its sums (the same
    /// additions in the same order as `sum`'s). Taken once.
    pub(super) fn take_sums(&mut self, x: &Arc<Slot>, lanes: &Lanes) -> Option<Slot> {
        let handed = self
            .handed
            .take_if(|h| Arc::ptr_eq(&h.product, x) && h.lanes == *lanes)?;
        Some(handed.sums)
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
    use language::value::Value;

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
        st.logistic = LogisticPairs::new(Arc::from(vec![Paired {
            var: v,
            factor: None,
        }]));
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

    /// `sum(log_inv_logit(v))` keeps `elt_multiply(inv_logit(-v), h)` for
    /// the program's factor `h`; the product takes it while `v` and `h`
    /// hold the same values, and computes afresh (the bits of the values
    /// it has now) otherwise, as does a plain `inv_logit(-v)`.
    #[test]
    fn a_scaled_pair_is_used_only_for_the_same_factor() {
        let source = "data { vector[3] h; } parameters { vector[3] v; }";
        let (mir, diags) = language::compile_model(source, "scaled");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        let id = |name: &str| VarId(mir.vars.iter().position(|x| x.name == name).unwrap() as u32);
        let (v, h) = (id("v"), id("h"));
        let z = 64;
        let mut st = State::new(&mir, &[], z);
        st.logistic = LogisticPairs::new(Arc::from(vec![Paired {
            var: v,
            factor: Some(h),
        }]));
        let all = crate::lanes::Lanes::all(z);
        let var = |v| expr(ExprKind::Var(v));
        let sum = expr(ExprKind::Prim(
            Prim::Sum,
            vec![expr(ExprKind::Prim(Prim::LogInvLogit, vec![var(v)]))],
        ));
        let neg = expr(ExprKind::Prim(Prim::Neg, vec![var(v)]));
        let inv_logit_neg = expr(ExprKind::Prim(Prim::InvLogit, vec![neg]));
        let product = expr(ExprKind::Prim(
            Prim::EltMul,
            vec![inv_logit_neg.clone(), var(h)],
        ));
        let xs: Vec<f64> = (0..3 * z).map(|i| (i as f64 * 0.37).sin() * 9.0).collect();
        let signs = [1.0, -1.0, -1.0];
        let expect = |hs: &[f64]| -> Vec<u64> {
            let at = |i: usize| bat_math::scalar::inv_logit(-xs[i]) * hs[i / z];
            (0..3 * z).map(|i| at(i).to_bits()).collect()
        };
        let set_h = |st: &mut State, hs: &[f64]| {
            st.vars[h.0 as usize] = Some(Arc::new(Slot::shared(Value::Vector(hs.to_vec()))));
        };
        st.vars[v.0 as usize] = Some(dense(&xs, z));
        set_h(&mut st, &signs);

        eval(&sum, &mut st, &all).unwrap();
        assert_eq!(st.logistic.kept(), 1);
        assert_eq!(
            bits(&eval(&product, &mut st, &all).unwrap()),
            expect(&signs)
        );
        assert_eq!(st.logistic.kept(), 0, "taken");

        // A plain `inv_logit(-v)` does not take the product.
        eval(&sum, &mut st, &all).unwrap();
        assert_eq!(
            bits(&eval(&inv_logit_neg, &mut st, &all).unwrap()),
            expect(&[1.0; 3])
        );
        assert_eq!(st.logistic.kept(), 1, "kept for the product");

        // Nor a product with another value of h.
        let halves = [0.5, -0.0, 2.0];
        set_h(&mut st, &halves);
        assert_eq!(
            bits(&eval(&product, &mut st, &all).unwrap()),
            expect(&halves)
        );
    }

    /// The factor of a pair is the one `h` of its `elt_multiply(inv_logit(-v),
    /// h)`; with two different, none.
    #[test]
    fn a_pair_has_a_factor_when_its_products_share_it() {
        let source = "data { vector[3] h; vector[3] g; }
            parameters { vector[3] a; vector[3] b; }
            model {
              target += sum(log_inv_logit(a)) + sum(elt_multiply(inv_logit(-a), h));
              target += sum(log_inv_logit(b)) + sum(elt_multiply(inv_logit(-b), h));
              target += sum(elt_multiply(inv_logit(-b), g));
            }";
        let (mir, diags) = language::compile_model(source, "factors");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        let name = |v: VarId| mir.vars[v.0 as usize].name.clone();
        let found: Vec<(String, Option<String>)> = paired_vars(&mir.model)
            .iter()
            .map(|p| (name(p.var), p.factor.map(name)))
            .collect();
        assert_eq!(
            found,
            [
                ("a".to_string(), Some("h".to_string())),
                ("b".to_string(), None)
            ]
        );
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
        let found: Vec<String> = paired_vars(&mir.model)
            .iter()
            .map(|p| name(&p.var))
            .collect();
        assert_eq!(found, ["a"]);
    }
}
