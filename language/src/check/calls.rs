//! Function calls: overload resolution against the built-in table and user
//! functions, and the placement rules tied to function-name suffixes.

use super::codes;
use super::compat::{self, Selection, ad_for_type, display_signature, explain};
use super::context::{Checker, FunSuffix};
use super::expr::{ERROR, Typed, is_unnormalized, normalized_name};
use super::higher_order::is_higher_order;
use super::sigs::{self, Signature};
use super::suggest::nearest;
use super::{Callee, SymbolId};
use crate::span::Span;
use crate::syntax::ast::{BlockKind, Expr, Ident};
use crate::types::{AdLevel, Type};

/// Suffixes of functions that take the conditional `|` notation.
const CONDITIONING_SUFFIXES: [&str; 7] = [
    "_lpdf", "_lupdf", "_lpmf", "_lupmf", "_cdf", "_lcdf", "_lccdf",
];

/// One overload considered during resolution (built-in signatures are
/// borrowed from the static table, not copied).
pub enum Candidate {
    Builtin(&'static Signature),
    User {
        id: SymbolId,
        args: Vec<(AdLevel, Type)>,
        ret: Option<Type>,
    },
}

impl Candidate {
    pub fn args(&self) -> &[(AdLevel, Type)] {
        match self {
            Candidate::Builtin(s) => &s.args,
            Candidate::User { args, .. } => args,
        }
    }

    pub fn ret(&self) -> Option<&Type> {
        match self {
            Candidate::Builtin(s) => s.ret.as_ref(),
            Candidate::User { ret, .. } => ret.as_ref(),
        }
    }

    pub fn callee(&self) -> Callee {
        match self {
            Candidate::Builtin(s) => Callee::Builtin((*s).clone()),
            Candidate::User { id, .. } => Callee::User(*id),
        }
    }
}

impl Checker {
    /// A call used as an expression.
    pub fn call_expr(
        &mut self,
        span: Span,
        name: &Ident,
        args: &[Expr],
        conditional: bool,
    ) -> Typed {
        if name.name == "target" && args.is_empty() {
            let allowed = self.in_function(&[FunSuffix::Target])
                || self.block.is(BlockKind::Model)
                || self.block.is(BlockKind::TransformedParameters);
            if !allowed {
                self.error(
                    codes::TARGET_OUTSIDE_MODEL,
                    "Target can only be accessed in the model block or in definitions of \
                     functions with the suffix _lp.",
                    span,
                );
            }
            return (Type::Real, AdLevel::AutoDiff);
        }
        if is_higher_order(&name.name) {
            let result = self.higher_order(span, name, args);
            self.verify_call_placement(span, name, args, Some(conditional));
            return result;
        }
        let typed: Vec<Typed> = args.iter().map(|a| self.expr(a)).collect();
        let result = match self.resolve_call(span, name, &typed, false) {
            Some(Some(ret)) => {
                let any_ad = typed.iter().any(|(_, ad)| *ad == AdLevel::AutoDiff);
                let ad = if any_ad {
                    AdLevel::AutoDiff
                } else {
                    AdLevel::DataOnly
                };
                let ad = ad_for_type(ad, &ret);
                (ret, ad)
            }
            Some(None) => {
                self.error(
                    codes::VOID_MISUSE,
                    format!(
                        "A returning function was expected but a non-returning function '{}' was \
                         supplied.",
                        name.name
                    ),
                    span,
                );
                ERROR
            }
            None => ERROR,
        };
        self.verify_call_placement(span, name, args, Some(conditional));
        result
    }

    /// A call used as a statement: must be a void function.
    pub fn call_stmt(&mut self, span: Span, name: &Ident, args: &[Expr]) {
        if is_higher_order(&name.name) {
            self.higher_order(span, name, args);
            self.error(
                codes::VOID_MISUSE,
                format!(
                    "A non-returning function was expected but a returning function '{}' was \
                     supplied.",
                    name.name
                ),
                span,
            );
            return;
        }
        let typed: Vec<Typed> = args.iter().map(|a| self.expr(a)).collect();
        if let Some(Some(_)) = self.resolve_call(span, name, &typed, true) {
            self.error(
                codes::VOID_MISUSE,
                format!(
                    "A non-returning function was expected but a returning function '{}' was \
                     supplied.",
                    name.name
                ),
                span,
            )
            .help = Some("use its value, e.g. assign it or add it to target".into());
        }
        self.verify_call_placement(span, name, args, None);
    }

    /// Resolve `name(args)`: `Some(return type)` (inner `None` = void) or
    /// `None` after reporting why not.
    fn resolve_call(
        &mut self,
        span: Span,
        name: &Ident,
        args: &[Typed],
        statement: bool,
    ) -> Option<Option<Type>> {
        let normalized = normalized_name(&name.name);
        let builtin = self.builtin_signatures(&normalized);
        let user = self.env.functions(&normalized).to_vec();
        if self.env.var(&name.name).is_some() && builtin.is_empty() {
            let what = if statement {
                "A non-returning"
            } else {
                "A returning"
            };
            self.error(
                codes::NOT_A_FUNCTION,
                format!(
                    "{what} function was expected but a non-function value '{}' was supplied.",
                    name.name
                ),
                span,
            );
            return None;
        }
        if builtin.is_empty() && user.is_empty() {
            self.unknown_function(span, name, statement);
            return None;
        }
        let candidates = self.gather_candidates(&normalized);
        let actuals: Vec<(AdLevel, Type)> = args.iter().map(|(t, ad)| (*ad, t.clone())).collect();
        match compat::select(candidates.iter().map(Candidate::args), &actuals) {
            Selection::Unique(i) => {
                let chosen = &candidates[i];
                let callee = chosen.callee();
                if let Callee::User(id) = callee {
                    self.reference(name.span, id);
                }
                let ret = chosen.ret().cloned();
                self.out.calls.insert(span, callee);
                Some(ret)
            }
            // An argument that already has an error matches everything;
            // do not add a second diagnostic for it.
            _ if args.iter().any(|(t, _)| contains_error(t)) => None,
            other => {
                self.report_no_unique(span, &name.name, &candidates, args, other);
                None
            }
        }
    }

    /// Report an ambiguous call or a call no overload fits.
    pub fn report_no_unique(
        &mut self,
        span: Span,
        display_name: &str,
        candidates: &[Candidate],
        args: &[Typed],
        selection: Selection,
    ) {
        let name = display_name;
        match selection {
            Selection::Unique(_) => {}
            Selection::Ambiguous(which) => {
                let found: Vec<String> = args.iter().map(|(t, _)| t.to_string()).collect();
                let d = self.error(
                    codes::AMBIGUOUS_CALL,
                    format!(
                        "No unique minimum promotion found for function '{name}' with arguments \
                         ({}).",
                        found.join(", ")
                    ),
                    span,
                );
                d.primary.message = "several signatures fit equally well".into();
                for &i in &which {
                    let c = &candidates[i];
                    d.notes.push(format!(
                        "candidate: {name}{}",
                        display_signature(c.args(), c.ret())
                    ));
                }
                d.help = Some(
                    "overloaded functions must not have multiple equally good promotion paths; \
                     make the argument types exact (e.g. write `1.0` for a real)"
                        .into(),
                );
            }
            Selection::NoMatch(errors) => {
                let found: Vec<String> = args.iter().map(|(t, _)| t.to_string()).collect();
                let mut notes = Vec::new();
                let same_arity: Vec<usize> = (0..candidates.len())
                    .filter(|&i| candidates[i].args().len() == args.len())
                    .collect();
                if same_arity.is_empty() {
                    let mut arities: Vec<usize> =
                        candidates.iter().map(|c| c.args().len()).collect();
                    arities.sort_unstable();
                    arities.dedup();
                    let arities: Vec<String> = arities.iter().map(usize::to_string).collect();
                    notes.push(format!(
                        "'{name}' takes {} arguments but {} were supplied.",
                        arities.join(" or "),
                        args.len()
                    ));
                } else if same_arity.len() == 1 {
                    let i = same_arity[0];
                    notes.push(format!(
                        "signature: {name}{}",
                        display_signature(candidates[i].args(), candidates[i].ret())
                    ));
                    notes.push(explain(&errors[i]));
                } else {
                    let mut order = same_arity.clone();
                    order.sort_by_key(|&i| mismatch_rank(&errors[i]));
                    for &i in order.iter().take(5) {
                        let c = &candidates[i];
                        notes.push(format!(
                            "{name}{}: {}",
                            display_signature(c.args(), c.ret()),
                            explain(&errors[i])
                        ));
                    }
                    if order.len() > 5 {
                        notes.push(format!("(and {} other signatures)", order.len() - 5));
                    }
                }
                let mut secondary = Vec::new();
                for c in candidates {
                    if let Candidate::User { id, .. } = c {
                        secondary.push(self.out.symbols[*id].def_span);
                    }
                }
                let d = self.error(
                    codes::NO_MATCHING_SIGNATURE,
                    format!(
                        "Ill-typed arguments supplied to function '{name}': ({}).",
                        found.join(", ")
                    ),
                    span,
                );
                d.primary.message = "no signature accepts these argument types".into();
                d.notes = notes;
                for s in secondary {
                    d.secondary.push(crate::diagnostic::Label {
                        span: s,
                        message: "signature tried".into(),
                    });
                }
            }
        }
    }

    /// Every overload named `normalized`: built-in signatures then user
    /// functions.
    pub fn gather_candidates(&mut self, normalized: &str) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = self
            .builtin_signatures(normalized)
            .iter()
            .map(Candidate::Builtin)
            .collect();
        for &id in self.env.functions(normalized) {
            if let Type::Function(ft) = &self.out.symbols[id].ty {
                candidates.push(Candidate::User {
                    id,
                    args: ft.args.clone(),
                    ret: ft.ret.clone(),
                });
            }
        }
        candidates
    }

    fn unknown_function(&mut self, span: Span, name: &Ident, statement: bool) {
        let n = &name.name;
        if let Some((prefix, suffix)) = split_distribution_suffix(n) {
            let other = match suffix {
                "lpmf" | "lupmf" => Some(format!("{prefix}_lpdf")),
                "lpdf" | "lupdf" => Some(format!("{prefix}_lpmf")),
                _ => None,
            };
            if let Some(other) = other
                && (self.is_builtin_function(&other) || !self.env.functions(&other).is_empty())
            {
                self.error(
                    codes::NOT_A_FUNCTION,
                    format!("Function '{n}' is not defined; did you mean '{other}'?"),
                    span,
                )
                .help = Some(format!(
                    "'{prefix}' is a {} distribution",
                    if suffix.contains("pmf") {
                        "continuous"
                    } else {
                        "discrete"
                    }
                ));
                return;
            }
            let family_known = self.is_builtin_function(&format!("{prefix}_lpdf"))
                || self.is_builtin_function(&format!("{prefix}_lpmf"));
            if family_known && ["cdf", "lcdf", "lccdf", "rng"].contains(&suffix) {
                self.error(
                    codes::NOT_A_FUNCTION,
                    format!("Function '{n}' is not available: the distribution '{prefix}' has no _{suffix} function."),
                    span,
                );
                return;
            }
        }
        let suggestion = {
            let user: Vec<String> = self.env.visible_names().map(str::to_string).collect();
            let mut all: Vec<&str> = sigs::names().collect();
            all.extend(user.iter().map(String::as_str));
            nearest(n, all.into_iter())
        };
        let what = if statement {
            "A non-returning"
        } else {
            "A returning"
        };
        let d = self.error(
            codes::NOT_A_FUNCTION,
            format!(
                "{what} function was expected but an undeclared identifier '{n}' was supplied."
            ),
            span,
        );
        if let Some(s) = suggestion {
            d.help = Some(format!("did you mean '{s}'?"));
        }
    }

    /// Suffix rules on where a call may appear (stanc3's `verify_fn_*`).
    /// `conditional` is `None` for a statement call.
    pub fn verify_call_placement(
        &mut self,
        span: Span,
        name: &Ident,
        args: &[Expr],
        conditional: Option<bool>,
    ) {
        let n = name.name.as_str();
        self.note_callee(n);
        self.report_reserved(n, name.span);
        let has_cond_suffix = CONDITIONING_SUFFIXES.iter().any(|s| n.ends_with(s));
        match conditional {
            Some(true) if !has_cond_suffix => {
                self.error(
                    codes::BAD_CONDITIONAL_NOTATION,
                    "Only functions with names ending in _lpdf, _lupdf, _lpmf, _lupmf, _cdf, \
                     _lcdf, _lccdf can make use of conditional notation.",
                    span,
                );
            }
            Some(false) if has_cond_suffix && args.len() > 1 => {
                self.error(
                    codes::BAD_CONDITIONAL_NOTATION,
                    "Probability functions with suffixes _lpdf, _lupdf, _lpmf, _lupmf, _cdf, \
                     _lcdf and _lccdf, require a vertical bar (|) between the first two \
                     arguments.",
                    span,
                )
                .help = Some(format!("write `{n}(y | ...)`"));
            }
            _ => {}
        }
        if n.ends_with("_lp") {
            if self.block.is(BlockKind::TransformedParameters) {
                self.warning(
                    codes::WARN_OTHER,
                    "Using _lp functions in transformed parameters is deprecated and will be \
                     disallowed in Stan 2.40. Use an _jacobian function instead.",
                    span,
                );
            } else if !(self.in_function(&[FunSuffix::Target]) || self.block.is(BlockKind::Model)) {
                self.error(
                    codes::TARGET_OUTSIDE_MODEL,
                    "Target can only be accessed in the model block or in definitions of \
                     functions with the suffix _lp.",
                    span,
                );
            }
        }
        if n.ends_with("_jacobian")
            && !(self.in_function(&[FunSuffix::Jacobian])
                || self.block.is(BlockKind::TransformedParameters))
        {
            self.error(
                codes::JACOBIAN_NOT_ALLOWED,
                "Functions with names ending in _jacobian can only be used in the transformed \
                 parameters block or in other _jacobian functions.",
                span,
            );
        } else if n.ends_with("_jacobian")
            && !args.iter().any(|a| {
                self.out
                    .expr_types
                    .get(&a.span)
                    .is_some_and(|(_, ad)| *ad == AdLevel::AutoDiff)
            })
        {
            let alternative = format!("{}_constrain", n.trim_end_matches("_jacobian"));
            let known = !self.env.functions(&alternative).is_empty()
                || self.is_builtin_function(&alternative);
            let d = self.warning(
                codes::WARN_OTHER,
                "Calling a _jacobian function without any parameter arguments still applies the \
                 Jacobian adjustments, ensure this is intentional!",
                span,
            );
            if known {
                d.help = Some(format!("consider using {alternative} instead"));
            }
        }
        if n.ends_with("_rng") {
            if self.in_toplevel_decl {
                self.error(
                    codes::RNG_NOT_ALLOWED,
                    "Random number generators are not allowed in top level size declarations.",
                    span,
                );
            } else if !(self.in_function(&[FunSuffix::Rng])
                || self.block.is(BlockKind::GeneratedQuantities)
                || self.block.is(BlockKind::TransformedData))
            {
                self.error(
                    codes::RNG_NOT_ALLOWED,
                    "Random number generators are only allowed in the transformed data block, \
                     the generated quantities block or user-defined functions with names ending \
                     in _rng.",
                    span,
                );
            }
        }
        if is_unnormalized(n) && !self.unnormalized_allowed() {
            self.report_unnormalized(span);
        }
    }

    pub fn unnormalized_allowed(&self) -> bool {
        self.in_function(&[FunSuffix::Lpdf, FunSuffix::Lpmf]) || self.block.is(BlockKind::Model)
    }

    pub fn report_unnormalized(&mut self, span: Span) {
        self.error(
            codes::UNNORMALIZED_NOT_ALLOWED,
            "Functions with names ending in _lupdf and _lupmf can only be used in the model \
             block or user-defined functions with names ending in _lpdf or _lpmf.",
            span,
        );
    }

    /// Signature record for a built-in higher-order call.
    pub fn record_builtin_call(
        &mut self,
        span: Span,
        args: Vec<(AdLevel, Type)>,
        ret: Option<Type>,
    ) {
        self.out
            .calls
            .insert(span, Callee::Builtin(Signature { args, ret }));
    }
}

/// True if `Type::Error` occurs anywhere inside.
pub fn contains_error(t: &Type) -> bool {
    match t {
        Type::Error => true,
        Type::Array(e) => contains_error(e),
        Type::Tuple(ts) => ts.iter().any(contains_error),
        _ => false,
    }
}

/// `normal_lpdf` → (`normal`, `lpdf`).
pub fn split_distribution_suffix(name: &str) -> Option<(&str, &str)> {
    const SUFFIXES: [&str; 10] = [
        "lpdf", "lupdf", "lpmf", "lupmf", "cdf", "lcdf", "lccdf", "rng", "log", "ccdf",
    ];
    let (prefix, suffix) = name.rsplit_once('_')?;
    SUFFIXES.contains(&suffix).then_some((prefix, suffix))
}

/// Sort key putting the most informative mismatches first (later
/// argument errors mean more arguments matched).
fn mismatch_rank(m: &compat::Mismatch) -> (u8, usize) {
    match m {
        compat::Mismatch::DataOnly { arg } => (0, usize::MAX - arg),
        compat::Mismatch::Type { arg, .. } => (1, usize::MAX - arg),
        compat::Mismatch::Count { .. } => (2, 0),
    }
}
