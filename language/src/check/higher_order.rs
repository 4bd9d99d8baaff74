//! Higher-order and variadic built-ins: ODE and DAE solvers, algebraic
//! solvers, `reduce_sum`, `map_rect`, `integrate_1d`, the deprecated
//! `integrate_ode_*` / `algebra_solver*`, and the embedded Laplace
//! functions. Their first argument is a user function whose signature is
//! checked against what the built-in needs (stanc3's `check_variadic_args`).

use super::SymbolId;
use super::codes;
use super::compat::{self, Mismatch, ad_compatible, explain, lub_ad, promotion_cost};
use super::context::{Checker, FunSuffix};
use super::expr::{ERROR, Typed};
use crate::span::Span;
use crate::syntax::ast::{Expr, ExprKind, Ident};
use crate::types::{AdLevel, Type};

use AdLevel::{AutoDiff as AD, DataOnly as DATA};

/// Names with a [`spec`] (kept as a list so the per-call test allocates
/// nothing).
const SPEC_NAMES: [&str; 27] = [
    "ode_rk45",
    "ode_bdf",
    "ode_adams",
    "ode_ckrk",
    "ode_rk45_tol",
    "ode_bdf_tol",
    "ode_adams_tol",
    "ode_ckrk_tol",
    "ode_adjoint_tol_ctl",
    "solve_newton",
    "solve_powell",
    "solve_newton_tol",
    "solve_powell_tol",
    "dae",
    "dae_tol",
    "integrate_ode_rk45",
    "integrate_ode_bdf",
    "integrate_ode_adams",
    "algebra_solver",
    "algebra_solver_newton",
    "map_rect",
    "integrate_1d",
    "integrate_1d_double_exponential",
    "integrate_1d_gauss_kronrod",
    "integrate_1d_double_exponential_tol",
    "integrate_1d_gauss_kronrod_tol",
    "reduce_sum",
];

/// Is `name` one of the built-ins checked here?
pub fn is_higher_order(name: &str) -> bool {
    SPEC_NAMES.contains(&name) || name == "reduce_sum_static" || super::laplace::is_laplace(name)
}

/// What a higher-order built-in needs.
struct Spec {
    /// Arguments after the function argument (before any variadic ones).
    control: Vec<(AdLevel, Type)>,
    /// Leading arguments the user function must take.
    fn_args: Vec<(AdLevel, Type)>,
    fn_ret: Type,
    /// Old-style functions: the user function takes exactly `fn_args` and
    /// no further arguments are passed.
    fixed: bool,
    ret: Type,
}

fn arr(t: Type) -> Type {
    Type::Array(Box::new(t))
}

fn spec(name: &str) -> Option<Spec> {
    use Type::*;
    let ode_control = vec![(AD, Vector), (AD, Real), (AD, arr(Real))];
    let tol = vec![(DATA, Real), (DATA, Real), (DATA, Int)];
    let with_tol = |mut v: Vec<(AdLevel, Type)>| {
        v.extend(tol.clone());
        v
    };
    let variadic = |control, fn_args, fn_ret, ret| Spec {
        control,
        fn_args,
        fn_ret,
        fixed: false,
        ret,
    };
    let fixed = |control, fn_args, fn_ret, ret| Spec {
        control,
        fn_args,
        fn_ret,
        fixed: true,
        ret,
    };
    let ode_fn = vec![(AD, Real), (AD, Vector)];
    let old_data = vec![(DATA, arr(Real)), (DATA, arr(Int))];
    let old_ode_fn = [
        vec![(AD, Real), (AD, arr(Real)), (AD, arr(Real))],
        old_data.clone(),
    ]
    .concat();
    let old_ode_control = [
        vec![
            (AD, arr(Real)),
            (AD, Real),
            (AD, arr(Real)),
            (AD, arr(Real)),
        ],
        old_data.clone(),
    ]
    .concat();
    let old_tol = vec![(DATA, Real), (DATA, Real), (DATA, Real)];
    let algebra_fn = [vec![(AD, Vector), (AD, Vector)], old_data.clone()].concat();
    let algebra_control = [vec![(AD, Vector), (AD, Vector)], old_data.clone()].concat();
    let integrate_1d_fn = [
        vec![(AD, Real), (AD, Real), (AD, arr(Real))],
        old_data.clone(),
    ]
    .concat();
    let integrate_1d_control = [
        vec![(AD, Real), (AD, Real), (AD, arr(Real))],
        old_data.clone(),
    ]
    .concat();
    Some(match name {
        "ode_rk45" | "ode_bdf" | "ode_adams" | "ode_ckrk" => {
            variadic(ode_control, ode_fn, Vector, arr(Vector))
        }
        "ode_rk45_tol" | "ode_bdf_tol" | "ode_adams_tol" | "ode_ckrk_tol" => {
            variadic(with_tol(ode_control), ode_fn, Vector, arr(Vector))
        }
        "ode_adjoint_tol_ctl" => {
            let mut control = ode_control;
            control.extend([
                (DATA, Real),
                (DATA, Vector),
                (DATA, Real),
                (DATA, Vector),
                (DATA, Real),
                (DATA, Real),
                (DATA, Int),
                (DATA, Int),
                (DATA, Int),
                (DATA, Int),
                (DATA, Int),
            ]);
            variadic(control, ode_fn, Vector, arr(Vector))
        }
        "solve_newton" | "solve_powell" => {
            variadic(vec![(AD, Vector)], vec![(AD, Vector)], Vector, Vector)
        }
        "solve_newton_tol" | "solve_powell_tol" => variadic(
            vec![(AD, Vector), (DATA, Real), (DATA, Real), (DATA, Int)],
            vec![(AD, Vector)],
            Vector,
            Vector,
        ),
        "dae" | "dae_tol" => {
            let control = vec![(AD, Vector), (AD, Vector), (DATA, Real), (DATA, arr(Real))];
            let control = if name == "dae" {
                control
            } else {
                with_tol(control)
            };
            variadic(
                control,
                vec![(AD, Real), (AD, Vector), (AD, Vector)],
                Vector,
                arr(Vector),
            )
        }
        "integrate_ode_rk45" | "integrate_ode_bdf" | "integrate_ode_adams" => {
            fixed(old_ode_control, old_ode_fn, arr(Real), arr(arr(Real)))
        }
        "algebra_solver" | "algebra_solver_newton" => {
            fixed(algebra_control, algebra_fn, Vector, Vector)
        }
        "map_rect" => fixed(
            vec![
                (AD, Vector),
                (AD, arr(Vector)),
                (DATA, arr(arr(Real))),
                (DATA, arr(arr(Int))),
            ],
            algebra_fn,
            Vector,
            Vector,
        ),
        "integrate_1d" => fixed(integrate_1d_control, integrate_1d_fn, Real, Real),
        "integrate_1d_double_exponential" | "integrate_1d_gauss_kronrod" => variadic(
            vec![(AD, Real), (AD, Real)],
            vec![(AD, Real), (AD, Real)],
            Real,
            Real,
        ),
        "integrate_1d_double_exponential_tol" | "integrate_1d_gauss_kronrod_tol" => variadic(
            [vec![(AD, Real), (AD, Real)], tol.clone()].concat(),
            vec![(AD, Real), (AD, Real)],
            Real,
            Real,
        ),
        _ => {
            let _ = old_tol;
            return None;
        }
    })
}

/// Optional trailing tolerance arguments of the old-style functions.
fn old_style_tolerances(name: &str) -> Option<Vec<(AdLevel, Type)>> {
    match name {
        "integrate_ode_rk45"
        | "integrate_ode_bdf"
        | "integrate_ode_adams"
        | "algebra_solver"
        | "algebra_solver_newton" => Some(vec![
            (DATA, Type::Real),
            (DATA, Type::Real),
            (DATA, Type::Real),
        ]),
        "integrate_1d" => Some(vec![(DATA, Type::Real)]),
        _ => None,
    }
}

/// A failed attempt: which argument (0-based, in the call) and why.
struct Failure {
    arg: usize,
    message: String,
}

impl Checker {
    pub fn higher_order(&mut self, span: Span, name: &Ident, args: &[Expr]) -> Typed {
        let n = name.name.as_str();
        if super::laplace::is_laplace(n) {
            return self.laplace(span, n, args);
        }
        if super::laplace::is_laplace(n) {
            return self.laplace(span, n, args);
        }
        // The function argument, if it names user functions.
        let fn_ident = args.first().and_then(|a| match &a.kind {
            ExprKind::Var(id) if self.env.var(&id.name).is_none() => Some(Ident {
                name: super::expr::normalized_name(&id.name).into_owned(),
                span: id.span,
            }),
            _ => None,
        });
        let typed: Vec<Typed> = args.iter().map(|a| self.expr(a)).collect();
        if typed.iter().skip(1).any(|(t, _)| t.is_error()) {
            return ERROR;
        }
        let ad = typed.iter().fold(DATA, |acc, (_, a)| lub_ad(acc, *a));
        let overloads: Vec<SymbolId> = fn_ident
            .as_ref()
            .map(|id| self.env.functions(&id.name).to_vec())
            .unwrap_or_default();
        if overloads.is_empty() {
            let at = args.first().map_or(span, |a| a.span);
            self.error(
                codes::BAD_HIGHER_ORDER,
                format!("The first argument of '{n}' must be the name of a user-defined function."),
                at,
            );
            return ERROR;
        }
        let fn_name = fn_ident
            .as_ref()
            .map(|i| i.name.clone())
            .unwrap_or_default();
        let mut first_failure = None;
        let mut matches: Vec<(SymbolId, Type, u32)> = Vec::new();
        for &id in &overloads {
            let Type::Function(ft) = self.out.symbols[id].ty.clone() else {
                continue;
            };
            let result = if n == "reduce_sum" || n == "reduce_sum_static" {
                self.reduce_sum_attempt(&fn_name, &ft, &typed, args)
            } else {
                let spec = spec(n).expect("higher-order spec exists");
                attempt(&spec, n, &fn_name, &ft, &typed)
            };
            match result {
                Ok((ret, cost)) => matches.push((id, ret, cost)),
                Err(f) => {
                    first_failure.get_or_insert(f);
                }
            }
        }
        // Fewest promotions wins, as for ordinary overloads.
        if let Some(best) = matches.iter().map(|m| m.2).min() {
            let winners: Vec<&(SymbolId, Type, u32)> =
                matches.iter().filter(|m| m.2 == best).collect();
            if winners.len() > 1 {
                self.error(
                    codes::AMBIGUOUS_CALL,
                    format!(
                        "No unique minimum promotion found for the overloads of '{fn_name}' passed                          to '{n}'. Overloaded functions must not have multiple equally valid                          promotion paths for a given set of arguments."
                    ),
                    span,
                );
                return ERROR;
            }
            let (id, ret, _) = winners[0].clone();
            if let Some(id_span) = fn_ident.as_ref().map(|i| i.span) {
                self.reference(id_span, id);
            }
            let sig_args = typed.iter().map(|(t, a)| (*a, t.clone())).collect();
            self.record_builtin_call(span, sig_args, Some(ret.clone()));
            return (ret, ad);
        }
        if let Some(f) = first_failure {
            let found: Vec<String> = typed.iter().map(|(t, _)| t.to_string()).collect();
            // Old-style functions have ordinary signatures in stanc3, whose
            // errors point at the call.
            let fixed = spec(n).is_some_and(|s| s.fixed);
            let at = if fixed {
                span
            } else {
                args.get(f.arg).map_or(span, |a| a.span)
            };
            let d = self.error(
                codes::BAD_HIGHER_ORDER,
                format!(
                    "Ill-typed arguments supplied to function '{n}': ({}).",
                    found.join(", ")
                ),
                at,
            );
            d.notes.push(f.message);
        }
        ERROR
    }

    fn reduce_sum_attempt(
        &mut self,
        fn_name: &str,
        ft: &crate::types::FunctionType,
        typed: &[Typed],
        args: &[Expr],
    ) -> Result<(Type, u32), Failure> {
        if let Some((slice, _)) = typed.get(1) {
            let (dims, elem) = slice.array_dims();
            if dims == 0 {
                return Err(Failure {
                    arg: 1,
                    message: format!(
                        "The second argument to reduce_sum must be an array but found {slice}."
                    ),
                });
            }
            if !matches!(
                elem,
                Type::Int | Type::Real | Type::Vector | Type::RowVector | Type::Matrix
            ) {
                return Err(Failure {
                    arg: 1,
                    message: format!(
                        "The sliced argument of reduce_sum cannot be of type {slice}."
                    ),
                });
            }
        }
        let _ = args;
        let suffix = FunSuffix::of(fn_name);
        if !matches!(suffix, FunSuffix::Plain | FunSuffix::Lpdf | FunSuffix::Lpmf) {
            return Err(Failure {
                arg: 0,
                message: "Expected a pure function or a _lpdf/_lpmf function.".into(),
            });
        }
        let Some(sliced) = ft.args.first().cloned() else {
            return Err(Failure {
                arg: 0,
                message: "The function passed to reduce_sum must take the slice, start and end \
                          arguments."
                    .into(),
            });
        };
        let spec = Spec {
            control: vec![sliced.clone(), (AD, Type::Int)],
            fn_args: vec![sliced, (DATA, Type::Int), (DATA, Type::Int)],
            fn_ret: Type::Real,
            fixed: false,
            ret: Type::Real,
        };
        attempt_with_suffix_ok(&spec, ft, typed)
    }
}

fn attempt(
    spec: &Spec,
    name: &str,
    fn_name: &str,
    ft: &crate::types::FunctionType,
    typed: &[Typed],
) -> Result<(Type, u32), Failure> {
    if FunSuffix::of(fn_name) != FunSuffix::Plain {
        return Err(Failure {
            arg: 0,
            message: format!(
                "The first argument must be a pure function (no _rng, _lp, _lpdf, ... suffix); \
                 '{fn_name}' is not."
            ),
        });
    }
    if spec.fixed {
        // Old style: exact function signature, optional tolerances.
        let mut control = spec.control.clone();
        let result = attempt_with_suffix_ok(spec, ft, typed);
        if result.is_ok() {
            return result;
        }
        if let Some(tol) = old_style_tolerances(name) {
            control.extend(tol);
            let with_tol = Spec {
                control,
                fn_args: spec.fn_args.clone(),
                fn_ret: spec.fn_ret.clone(),
                fixed: true,
                ret: spec.ret.clone(),
            };
            if typed.len() == with_tol.control.len() + 1 {
                return attempt_with_suffix_ok(&with_tol, ft, typed);
            }
        }
        return result;
    }
    attempt_with_suffix_ok(spec, ft, typed)
}

fn attempt_with_suffix_ok(
    spec: &Spec,
    ft: &crate::types::FunctionType,
    typed: &[Typed],
) -> Result<(Type, u32), Failure> {
    let k = spec.fn_args.len();
    let fn_sig = compat::display_signature(&spec.fn_args, Some(&spec.fn_ret));
    let fn_fail = |detail: String| Failure {
        arg: 0,
        message: format!(
            "The first argument must be a function of type {}{} but got {}. {detail}",
            fn_sig,
            if spec.fixed {
                ""
            } else {
                " (followed by any extra arguments)"
            },
            compat::display_signature(&ft.args, ft.ret.as_ref())
        ),
    };
    if ft.args.len() < k || (spec.fixed && ft.args.len() != k) {
        return Err(fn_fail(format!(
            "Expected {k} leading arguments but the function takes {}.",
            ft.args.len()
        )));
    }
    for (i, ((fad, fty), (rad, rty))) in ft.args.iter().zip(&spec.fn_args).enumerate() {
        if promotion_cost(fty, rty, false).is_none() {
            return Err(fn_fail(format!(
                "Its {} argument must be {rty} but is {fty}.",
                compat::ordinal(i + 1)
            )));
        }
        if !ad_compatible(*fad, *rad) {
            return Err(fn_fail(format!(
                "Its {} argument must not be marked data.",
                compat::ordinal(i + 1)
            )));
        }
    }
    match &ft.ret {
        Some(r) if promotion_cost(&spec.fn_ret, r, false).is_some() => {}
        other => {
            return Err(fn_fail(format!(
                "It must return {} but returns {}.",
                spec.fn_ret,
                other.as_ref().map_or("void".into(), Type::to_string)
            )));
        }
    }
    let mut expected = spec.control.clone();
    if !spec.fixed {
        expected.extend(ft.args[k..].iter().cloned());
    }
    let actual: Vec<(AdLevel, Type)> = typed[1..].iter().map(|(t, a)| (*a, t.clone())).collect();
    match compat::match_args(&expected, &actual, true) {
        Ok(cost) => Ok((spec.ret.clone(), cost)),
        Err(m) => {
            let arg = match &m {
                Mismatch::Type { arg, .. } | Mismatch::DataOnly { arg } => *arg,
                Mismatch::Count { expected, found } => {
                    // stanc3 points at the last argument given when there
                    // are too few, at the first extra one when too many.
                    let (e, f) = (expected + 1, found + 1);
                    if e > f { f - 1 } else { e }
                }
            };
            let message = match &m {
                Mismatch::Count { expected, found } => {
                    format!("Expected {} arguments but got {}.", expected + 1, found + 1)
                }
                Mismatch::Type {
                    arg,
                    expected,
                    found,
                } => format!(
                    "The {} argument must be {expected} but got {found}.",
                    compat::ordinal(arg + 1)
                ),
                other => explain(other),
            };
            Err(Failure { arg, message })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_has_a_spec() {
        for name in SPEC_NAMES.iter().filter(|n| **n != "reduce_sum") {
            assert!(spec(name).is_some(), "{name} has no spec");
        }
        assert!(spec("ode_rk45_tol").is_some_and(|s| s.control.len() == 6));
        assert!(spec("map_rect").is_some_and(|s| s.fixed));
    }
}
