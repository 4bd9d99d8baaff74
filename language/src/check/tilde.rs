//! `y ~ dist(args) T[lo, hi];`

use super::calls::Candidate;
use super::codes;
use super::compat::{self, Selection};
use super::context::{Checker, FunSuffix};
use super::expr::Typed;
use super::sigs;
use super::suggest::nearest;
use crate::span::Span;
use crate::syntax::ast::{BlockKind, Expr, Ident, Truncation};
use crate::types::{AdLevel, Type};

impl Checker {
    pub fn tilde(
        &mut self,
        span: Span,
        lhs: &Expr,
        dist: &Ident,
        args: &[Expr],
        truncation: Option<&Truncation>,
    ) {
        let laplace_name = format!("{}_lupmf", dist.name);
        if super::laplace::is_laplace(&laplace_name)
            && self
                .gather_candidates(&format!("{}_lpmf", dist.name))
                .is_empty()
        {
            let all: Vec<Expr> = std::iter::once(lhs.clone())
                .chain(args.iter().cloned())
                .collect();
            self.laplace(span, &laplace_name, &all);
            self.note_callee(&laplace_name);
            return;
        }
        let mut typed: Vec<Typed> = vec![self.expr(lhs)];
        typed.extend(args.iter().map(|a| self.expr(a)));
        let bounds: Vec<Typed> = truncation
            .map(|t| {
                [&t.lower, &t.upper]
                    .into_iter()
                    .flatten()
                    .map(|b| {
                        let (ty, ad) = self.expr(b);
                        if !matches!(ty, Type::Int | Type::Real | Type::Error) {
                            self.error(
                                codes::BAD_TRUNCATION,
                                format!("Truncation bound must be of type int or real. Instead found type {ty}."),
                                b.span,
                            );
                        }
                        (ty, ad)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let name = dist.name.as_str();
        self.report_reserved(name, dist.span);
        if ["_lpdf", "_lpmf", "_lupdf", "_lupmf"]
            .iter()
            .any(|s| name.ends_with(s))
        {
            let family = name.rsplit_once('_').map_or(name, |(p, _)| p);
            self.error(
                codes::BAD_TILDE,
                "~ statement should refer to a distribution without its \"_lpdf/_lupdf\" or \
                 \"_lpmf/_lupmf\" suffix.",
                dist.span,
            )
            .help = Some(format!("write `~ {family}(...)`"));
            return;
        }
        if !(self.in_function(&[FunSuffix::Target]) || self.block.is(BlockKind::Model)) {
            self.error(
                codes::TARGET_OUTSIDE_MODEL,
                "Target can only be accessed in the model block or in definitions of functions \
                 with the suffix _lp.",
                span,
            );
        }
        if name.ends_with("_cdf") || name.ends_with("_ccdf") {
            self.error(
                codes::BAD_TILDE,
                format!(
                    "CDF and CCDF functions may not be used with distribution notation (~). Use \
                     target += {name}_log(...) instead."
                ),
                span,
            );
            return;
        }
        if typed.iter().any(|(t, _)| super::calls::contains_error(t)) {
            return;
        }
        let actuals: Vec<(AdLevel, Type)> = typed.iter().map(|(t, ad)| (*ad, t.clone())).collect();
        let mut attempts: Vec<(String, Vec<Candidate>, Selection)> = Vec::new();
        for suffix in ["_lpdf", "_lpmf"] {
            let full = format!("{name}{suffix}");
            let candidates = self.gather_candidates(&full);
            if candidates.is_empty() {
                continue;
            }
            let selection = compat::select(candidates.iter().map(Candidate::args), &actuals);
            if let Selection::Unique(i) = selection {
                let callee = candidates[i].callee();
                if let super::Callee::User(id) = callee {
                    self.reference(dist.span, id);
                }
                self.out.calls.insert(span, callee);
                self.check_truncation(span, name, &typed[1..], &bounds);
                return;
            }
            attempts.push((full, candidates, selection));
        }
        if attempts.is_empty() {
            let families: Vec<String> = sigs::names()
                .filter_map(|n| n.strip_suffix("_lpdf").or_else(|| n.strip_suffix("_lpmf")))
                .map(str::to_string)
                .chain(self.env.visible_names().filter_map(|n| {
                    n.strip_suffix("_lpdf")
                        .or_else(|| n.strip_suffix("_lpmf"))
                        .map(str::to_string)
                }))
                .collect();
            let suggestion = nearest(name, families.iter().map(String::as_str));
            let d = self.error(
                codes::BAD_TILDE,
                format!(
                    "Ill-typed arguments to '~' statement. No distribution '{name}' was found."
                ),
                span,
            );
            if let Some(s) = suggestion {
                d.help = Some(format!("did you mean '{s}'?"));
            }
            return;
        }
        // Prefer reporting an ambiguity over a mismatch (stanc3 order).
        let pick = attempts
            .iter()
            .position(|(_, _, s)| matches!(s, Selection::Ambiguous(_)))
            .unwrap_or(0);
        let (full, candidates, selection) = attempts.swap_remove(pick);
        self.report_no_unique(span, &full, &candidates, &typed, selection);
    }

    /// Truncation needs `_lcdf` and `_lccdf` taking each bound in place of
    /// the variate.
    fn check_truncation(&mut self, span: Span, family: &str, args: &[Typed], bounds: &[Typed]) {
        for bound in bounds {
            if bound.0.is_error() {
                continue;
            }
            let mut actuals: Vec<(AdLevel, Type)> = vec![(bound.1, bound.0.clone())];
            actuals.extend(args.iter().map(|(t, ad)| (*ad, t.clone())));
            let defined = ["_lcdf", "_lccdf"].iter().all(|suffix| {
                let candidates = self.gather_candidates(&format!("{family}{suffix}"));
                match compat::select(candidates.iter().map(Candidate::args), &actuals) {
                    Selection::Unique(i) => candidates[i].ret() == Some(&Type::Real),
                    _ => false,
                }
            });
            if !defined {
                let found: Vec<String> = actuals.iter().map(|(_, t)| t.to_string()).collect();
                self.error(
                    codes::BAD_TRUNCATION,
                    format!(
                        "Truncation is only defined if distribution has _lcdf and _lccdf \
                         functions implemented with appropriate signature. No matching signature \
                         for arguments ({}).",
                        found.join(", ")
                    ),
                    span,
                );
                return;
            }
        }
    }
}
