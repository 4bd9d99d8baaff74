//! The embedded Laplace approximation functions (`laplace_marginal*`,
//! `laplace_latent*_rng` and their likelihood-specific helpers), which take
//! two user callbacks whose extra arguments are forwarded as tuples
//! (stanc3's `check_laplace_fn`).

use super::codes;
use super::compat::{self, Mismatch, ad_compatible, ad_for_type, promotion_cost};
use super::context::{Checker, FunSuffix};
use super::expr::{ERROR, Typed, normalized_name};
use crate::span::Span;
use crate::syntax::ast::{Expr, ExprKind, Ident};
use crate::types::{AdLevel, Type};

use AdLevel::{AutoDiff as AD, DataOnly as DATA};

const GENERAL: [&str; 4] = [
    "laplace_marginal",
    "laplace_marginal_tol",
    "laplace_latent_rng",
    "laplace_latent_tol_rng",
];
const HELPER_FAMILIES: [&str; 3] = ["bernoulli_logit", "neg_binomial_2_log", "poisson_log"];

/// Is `name` (possibly `_lupmf`) an embedded Laplace function?
pub fn is_laplace(name: &str) -> bool {
    if !name.starts_with("laplace_") {
        return false;
    }
    let name = normalized_name(name).into_owned();
    if GENERAL.contains(&name.as_str()) {
        return true;
    }
    HELPER_FAMILIES.iter().any(|f| {
        [
            format!("laplace_marginal_{f}_lpmf"),
            format!("laplace_marginal_tol_{f}_lpmf"),
            format!("laplace_latent_{f}_rng"),
            format!("laplace_latent_tol_{f}_rng"),
        ]
        .contains(&name)
    })
}

/// Leading likelihood arguments of a helper (empty for the general forms).
fn helper_params(name: &str) -> Vec<(AdLevel, Type)> {
    let ints = || Type::Array(Box::new(Type::Int));
    let stem = name
        .trim_start_matches("laplace_")
        .trim_start_matches("marginal_")
        .trim_start_matches("latent_")
        .trim_start_matches("tol_");
    let family = stem
        .rsplit_once('_')
        .filter(|(_, s)| ["lpmf", "lupmf", "rng"].contains(s))
        .map_or(stem, |(p, _)| p);
    match family {
        "bernoulli_logit" | "poisson_log" => vec![(AD, ints()), (AD, ints()), (AD, Type::Vector)],
        "neg_binomial_2_log" => {
            vec![
                (AD, ints()),
                (AD, ints()),
                (AD, Type::Vector),
                (AD, Type::Vector),
            ]
        }
        _ => vec![],
    }
}

fn tolerance_args() -> Vec<(AdLevel, Type)> {
    vec![
        (AD, Type::Vector),
        (DATA, Type::Real),
        (DATA, Type::Int),
        (DATA, Type::Int),
        (DATA, Type::Int),
        (DATA, Type::Int),
    ]
}

struct LaplaceError {
    span: Span,
    message: String,
}

impl Checker {
    /// Check a Laplace call; `args` are all arguments (for `~`, the
    /// left-hand side first). Returns the result type.
    pub fn laplace(&mut self, span: Span, name: &str, args: &[Expr]) -> Typed {
        let typed: Vec<Typed> = args.iter().map(|a| self.expr(a)).collect();
        if typed.iter().any(|(t, _)| t.is_error()) {
            return ERROR;
        }
        match self.laplace_inner(span, name, args, &typed) {
            Ok(()) => {
                let ret = if name.ends_with("_rng") {
                    Type::Vector
                } else {
                    Type::Real
                };
                let ad = typed.iter().fold(DATA, |acc, (_, a)| acc.max(*a));
                let sig_args = typed.iter().map(|(t, a)| (*a, t.clone())).collect();
                self.record_builtin_call(span, sig_args, Some(ret.clone()));
                let ad = ad_for_type(ad, &ret);
                (ret, ad)
            }
            Err(e) => {
                self.error(codes::BAD_HIGHER_ORDER, e.message, e.span);
                ERROR
            }
        }
    }

    fn laplace_inner(
        &mut self,
        span: Span,
        name: &str,
        args: &[Expr],
        typed: &[Typed],
    ) -> Result<(), LaplaceError> {
        let generic = |early: bool| LaplaceError {
            span,
            message: format!(
                "Ill-typed arguments supplied to function '{name}'. {}",
                if early {
                    "Please ensure you are passing enough arguments and that the first argument \
                     is a function."
                } else {
                    "Expected a likelihood, a hessian block size, a covariance function with its \
                     arguments as a tuple (and for _tol functions a tuple of solver controls)."
                }
            ),
        };
        let required = helper_params(&normalized_name(name));
        let rest_start;
        let last_lik_span;
        if !required.is_empty() {
            let n = required.len().min(typed.len());
            let actual: Vec<(AdLevel, Type)> =
                typed[..n].iter().map(|(t, a)| (*a, t.clone())).collect();
            if let Err(m) = compat::match_args(&required, &actual, true) {
                let at = mismatch_arg(&m)
                    .and_then(|i| args.get(i))
                    .map_or(span, |a| a.span);
                return Err(LaplaceError {
                    span: at,
                    message: format!(
                        "Ill-typed arguments supplied to function '{name}' for the likelihood: {}",
                        compat::explain(&m)
                    ),
                });
            }
            rest_start = n;
            last_lik_span = args.get(n.wrapping_sub(1)).map(|a| a.span);
        } else {
            let (Some(lik), Some(_)) = (args.first(), args.get(1)) else {
                return Err(generic(true));
            };
            let ExprKind::Var(lik_fun) = &lik.kind else {
                return Err(generic(true));
            };
            self.callable_with_tuple(
                name,
                lik_fun,
                &args[1],
                &typed[1],
                &[(AD, Type::Vector)],
                Type::Real,
            )?;
            self.laplace_likelihoods
                .push((normalized_name(&lik_fun.name).into_owned(), lik_fun.span));
            rest_start = 2;
            last_lik_span = Some(args[1].span);
        }
        // Hessian block size: a data int.
        let Some(hbs) = args.get(rest_start) else {
            let at = last_lik_span.map_or(span, |s| Span {
                start: s.end,
                end: s.end,
            });
            return Err(LaplaceError {
                span: at,
                message: format!(
                    "Missing the hessian block size argument (a data int) of '{name}'."
                ),
            });
        };
        let (ht, had) = &typed[rest_start];
        if *ht != Type::Int || *had != DATA {
            return Err(LaplaceError {
                span: hbs.span,
                message: format!(
                    "The hessian block size argument of '{name}' must be a data-only int; found {}{ht}.",
                    if *had == AD { "non-data " } else { "" }
                ),
            });
        }
        let cov_at = rest_start + 1;
        let (Some(cov), Some(cov_args)) = (args.get(cov_at), args.get(cov_at + 1)) else {
            return Err(generic(false));
        };
        let ExprKind::Var(cov_fun) = &cov.kind else {
            return Err(generic(false));
        };
        self.callable_with_tuple(
            name,
            cov_fun,
            cov_args,
            &typed[cov_at + 1],
            &[],
            Type::Matrix,
        )?;
        self.laplace_controls(span, name, &args[cov_at + 2..], &typed[cov_at + 2..])
    }

    fn laplace_controls(
        &mut self,
        span: Span,
        name: &str,
        args: &[Expr],
        typed: &[Typed],
    ) -> Result<(), LaplaceError> {
        let tol = name.contains("_tol");
        match (tol, args) {
            (false, []) => Ok(()),
            (true, [arg]) => {
                let Some(elems) = self.tuple_elements(arg, &typed[0]) else {
                    return Err(LaplaceError {
                        span: arg.span,
                        message: format!(
                            "Control arguments for '{name}' must be a tuple; found {}.",
                            typed[0].0
                        ),
                    });
                };
                let actual: Vec<(AdLevel, Type)> =
                    elems.iter().map(|(t, a, _)| (*a, t.clone())).collect();
                match compat::match_args(&tolerance_args(), &actual, true) {
                    Ok(_) => Ok(()),
                    Err(m) => {
                        let at = match &arg.kind {
                            ExprKind::TupleLit(es) => {
                                let i = match &m {
                                    Mismatch::Count { expected, found } => {
                                        if expected > found {
                                            found.checked_sub(1)
                                        } else {
                                            Some(*expected)
                                        }
                                    }
                                    other => mismatch_arg(other),
                                };
                                i.and_then(|i| es.get(i)).map_or(span, |e| e.span)
                            }
                            _ => span,
                        };
                        Err(LaplaceError {
                            span: at,
                            message: format!(
                                "Ill-typed control arguments for '{name}' (theta_0 vector, tolerance, \
                                 max_num_steps, solver, max_steps_line_search, allow_fallthrough): {}",
                                compat::explain(&m)
                            ),
                        })
                    }
                }
            }
            (true, []) => Err(LaplaceError {
                span,
                message: format!(
                    "'{name}' requires a tuple of control arguments as its last argument."
                ),
            }),
            (true, [_, second, ..]) => Err(LaplaceError {
                span: second.span,
                message: format!(
                    "'{name}' takes its control arguments as one tuple; found {} arguments.",
                    args.len()
                ),
            }),
            (false, [first, ..]) => Err(LaplaceError {
                span: first.span,
                message: format!(
                    "Too many arguments to '{name}': found {} extra.",
                    args.len()
                ),
            }),
        }
    }

    /// The callback `fname` must accept `required` followed by the tuple's
    /// elements and return `ret` (stanc3's
    /// `check_function_callable_with_tuple`).
    fn callable_with_tuple(
        &mut self,
        caller: &str,
        fname: &Ident,
        tuple: &Expr,
        tuple_typed: &Typed,
        required: &[(AdLevel, Type)],
        ret: Type,
    ) -> Result<(), LaplaceError> {
        let Some(elems) = self.tuple_elements(tuple, tuple_typed) else {
            return Err(LaplaceError {
                span: tuple.span,
                message: format!(
                    "Forwarded arguments to '{}' in call to '{caller}' must be a tuple; found {}.",
                    fname.name, tuple_typed.0
                ),
            });
        };
        let normalized = normalized_name(&fname.name);
        let overloads = if self.env.var(&fname.name).is_some() {
            vec![]
        } else {
            self.env.functions(&normalized).to_vec()
        };
        if overloads.is_empty() {
            return Err(LaplaceError {
                span: fname.span,
                message: format!(
                    "A returning function was expected but a non-function value '{}' was supplied.",
                    fname.name
                ),
            });
        }
        let mut supplied: Vec<(AdLevel, Type)> = required.to_vec();
        supplied.extend(elems.iter().map(|(t, a, _)| (*a, t.clone())));
        let mut first_error = None;
        for id in overloads {
            let Type::Function(ft) = self.out.symbols[id].ty.clone() else {
                continue;
            };
            let fn_error = |detail: String| LaplaceError {
                span: fname.span,
                message: format!(
                    "Function '{}' does not have a valid signature for use in '{caller}': {detail}",
                    fname.name
                ),
            };
            let result = if ft.ret.as_ref() != Some(&ret) {
                Err(fn_error(format!(
                    "Expected function returning {ret} but got function returning {}.",
                    ft.ret.as_ref().map_or("void".into(), Type::to_string)
                )))
            } else if FunSuffix::of(&normalized) != FunSuffix::Plain {
                Err(fn_error(
                    "Expected a pure function (no _rng, _lp, _lpdf, _jacobian ... suffix).".into(),
                ))
            } else if let Some(i) = required.iter().enumerate().position(|(i, (rad, rty))| {
                ft.args.get(i).is_none_or(|(fad, fty)| {
                    promotion_cost(rty, fty, false).is_none()
                        || !ad_compatible(*fad, *rad)
                        || !ad_compatible(*rad, *fad)
                })
            }) {
                Err(fn_error(format!(
                    "The {} argument must be {}{}.",
                    compat::ordinal(i + 1),
                    if required[i].0 == DATA { "data " } else { "" },
                    required[i].1
                )))
            } else {
                compat::match_args(&ft.args, &supplied, true)
                    .map(|_| ())
                    .map_err(|m| LaplaceError {
                        span: tuple.span,
                        message: format!(
                            "Cannot call '{}' with arguments forwarded from call to '{caller}': {}",
                            fname.name,
                            compat::explain(&m)
                        ),
                    })
            };
            match result {
                Ok(()) => {
                    self.reference(fname.span, id);
                    return Ok(());
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.expect("at least one overload"))
    }

    /// stanc3 requires every function reachable from a Laplace likelihood
    /// to support higher-order autodiff; report calls that do not.
    pub fn verify_laplace_autodiff(&mut self) {
        const NO_HIGHER_ORDER: [&str; 10] = [
            "algebra_solver",
            "algebra_solver_newton",
            "integrate_1d",
            "integrate_ode",
            "integrate_ode_adams",
            "integrate_ode_bdf",
            "integrate_ode_rk45",
            "map_rect",
            "hmm_marginal",
            "hmm_hidden_state_prob",
        ];
        let uses = std::mem::take(&mut self.laplace_likelihoods);
        for (start, use_span) in uses {
            let mut stack = vec![start.clone()];
            let mut seen = std::collections::HashSet::new();
            while let Some(f) = stack.pop() {
                if !seen.insert(f.clone()) {
                    continue;
                }
                let Some(callees) = self.function_callees.get(&f) else {
                    continue;
                };
                if let Some(bad) = callees.iter().find(|c| {
                    NO_HIGHER_ORDER.contains(&c.as_str())
                        || super::higher_order::is_higher_order(c)
                        || is_laplace(c)
                }) {
                    let bad = bad.clone();
                    self.error(
                        codes::BAD_HIGHER_ORDER,
                        format!(
                            "The function '{bad}', called by this likelihood function, does not \
                             currently support higher-order autodiff and cannot be used in an \
                             embedded Laplace approximation."
                        ),
                        use_span,
                    );
                    break;
                }
                stack.extend(callees.iter().cloned());
            }
        }
    }
}

impl Checker {
    /// The element types and autodiff levels of a tuple argument (a tuple
    /// literal's elements keep their own levels).
    fn tuple_elements(&self, e: &Expr, typed: &Typed) -> Option<Vec<(Type, AdLevel, Span)>> {
        let Type::Tuple(ts) = &typed.0 else {
            return None;
        };
        Some(match &e.kind {
            ExprKind::TupleLit(es) if es.len() == ts.len() => ts
                .iter()
                .zip(es)
                .map(|(t, el)| {
                    let ad = self
                        .out
                        .expr_types
                        .get(&el.span)
                        .map_or(typed.1, |(_, a)| *a);
                    (t.clone(), ad_for_type(ad, t), el.span)
                })
                .collect(),
            _ => ts
                .iter()
                .map(|t| (t.clone(), ad_for_type(typed.1, t), e.span))
                .collect(),
        })
    }
}

/// 0-based argument index of a mismatch.
fn mismatch_arg(m: &Mismatch) -> Option<usize> {
    match m {
        Mismatch::Type { arg, .. } | Mismatch::DataOnly { arg } => Some(arg - 1),
        Mismatch::Count { expected, found } => {
            if expected > found {
                found.checked_sub(1)
            } else {
                Some(*expected)
            }
        }
    }
}
