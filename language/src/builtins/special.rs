//! Higher-order and variadic built-ins. Their argument checking needs the
//! passed function's type, so the checker does it; this module names them
//! and gives the fixed parts of the variadic ones (stanc3's
//! `stan_math_variadic_signatures`).

use crate::types::{AdLevel, Type};

/// The fixed part of a variadic higher-order function: called as
/// `name(f, control_args..., extra...)` where `f` takes
/// `(required_fn_args..., extra...)` and returns `required_fn_ret`;
/// the call returns `ret`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariadicSignature {
    pub control_args: Vec<(AdLevel, Type)>,
    pub required_fn_args: Vec<(AdLevel, Type)>,
    pub required_fn_ret: Type,
    pub ret: Type,
}

/// (name, description). Names with fixed signatures in the table too
/// (algebra_solver, integrate_ode_*, integrate_1d, map_rect) are listed
/// so the checker can give them tailored messages.
#[rustfmt::skip]
pub(crate) const SPECIAL_FUNCTIONS: &[(&str, &str)] = &[
    ("reduce_sum", "Sum partial sums of a sliced array computed by a user function, possibly in parallel."),
    ("reduce_sum_static", "reduce_sum with a deterministic (static) partitioning of the slices."),
    ("map_rect", "Map a user function over shards of parameters and data, concatenating the results."),
    ("ode_rk45", "Solve a non-stiff ODE system with the Runge-Kutta 4/5 (Dormand-Prince) method."),
    ("ode_rk45_tol", "ode_rk45 with relative/absolute tolerances and a maximum number of steps."),
    ("ode_ckrk", "Solve a non-stiff ODE system with the Cash-Karp Runge-Kutta method."),
    ("ode_ckrk_tol", "ode_ckrk with relative/absolute tolerances and a maximum number of steps."),
    ("ode_adams", "Solve a non-stiff ODE system with the Adams-Moulton method (CVODES)."),
    ("ode_adams_tol", "ode_adams with relative/absolute tolerances and a maximum number of steps."),
    ("ode_bdf", "Solve a stiff ODE system with the backward differentiation formula (CVODES)."),
    ("ode_bdf_tol", "ode_bdf with relative/absolute tolerances and a maximum number of steps."),
    ("ode_adjoint_tol_ctl", "Solve an ODE system with adjoint sensitivities and full solver control."),
    ("dae", "Solve a differential-algebraic equation system (IDAS)."),
    ("dae_tol", "dae with relative/absolute tolerances and a maximum number of steps."),
    ("solve_newton", "Find a root of an algebraic system with Newton's method (KINSOL)."),
    ("solve_newton_tol", "solve_newton with scaling step, function tolerance and maximum steps."),
    ("solve_powell", "Find a root of an algebraic system with Powell's dogleg method."),
    ("solve_powell_tol", "solve_powell with relative/function tolerances and maximum steps."),
    ("algebra_solver", "Deprecated: find a root of an algebraic system (Powell); use solve_powell."),
    ("algebra_solver_newton", "Deprecated: find a root of an algebraic system (Newton); use solve_newton."),
    ("integrate_ode", "Removed: solve an ODE system; use ode_rk45."),
    ("integrate_ode_rk45", "Deprecated: solve a non-stiff ODE system (RK45); use ode_rk45."),
    ("integrate_ode_bdf", "Deprecated: solve a stiff ODE system (BDF); use ode_bdf."),
    ("integrate_ode_adams", "Deprecated: solve a non-stiff ODE system (Adams); use ode_adams."),
    ("integrate_1d", "Integrate a user function of one variable over an interval."),
    ("integrate_1d_double_exponential", "Integrate a user function of one variable with the double-exponential (tanh-sinh) rule."),
    ("integrate_1d_double_exponential_tol", "integrate_1d_double_exponential with relative/absolute tolerances and a refinement limit."),
    ("integrate_1d_gauss_kronrod", "Integrate a user function of one variable with adaptive Gauss-Kronrod quadrature."),
    ("integrate_1d_gauss_kronrod_tol", "integrate_1d_gauss_kronrod with relative/absolute tolerances and a refinement limit."),
    ("laplace_marginal", "Log marginal likelihood with latent Gaussian variables integrated out by a Laplace approximation."),
    ("laplace_marginal_tol", "laplace_marginal with solver tolerances and controls."),
    ("laplace_latent_rng", "Draw the latent Gaussian variables from their Laplace approximation."),
    ("laplace_latent_tol_rng", "laplace_latent_rng with solver tolerances and controls."),
    ("laplace_marginal_bernoulli_logit_lpmf", "Laplace-approximated marginal of a Bernoulli-logit likelihood with a latent Gaussian."),
    ("laplace_marginal_tol_bernoulli_logit_lpmf", "laplace_marginal_bernoulli_logit_lpmf with solver controls."),
    ("laplace_marginal_neg_binomial_2_log_lpmf", "Laplace-approximated marginal of a negative binomial (log link) likelihood."),
    ("laplace_marginal_tol_neg_binomial_2_log_lpmf", "laplace_marginal_neg_binomial_2_log_lpmf with solver controls."),
    ("laplace_marginal_poisson_log_lpmf", "Laplace-approximated marginal of a Poisson (log link) likelihood."),
    ("laplace_marginal_tol_poisson_log_lpmf", "laplace_marginal_poisson_log_lpmf with solver controls."),
    ("laplace_marginal_poisson_2_log_lpmf", "Laplace-approximated marginal of a Poisson (log link, exposure) likelihood."),
    ("laplace_marginal_poisson_2_log_tol_lpmf", "laplace_marginal_poisson_2_log_lpmf with solver controls."),
    ("laplace_latent_bernoulli_logit_rng", "Draw latent Gaussians under a Bernoulli-logit likelihood (Laplace)."),
    ("laplace_latent_tol_bernoulli_logit_rng", "laplace_latent_bernoulli_logit_rng with solver controls."),
    ("laplace_latent_neg_binomial_2_log_rng", "Draw latent Gaussians under a negative binomial likelihood (Laplace)."),
    ("laplace_latent_tol_neg_binomial_2_log_rng", "laplace_latent_neg_binomial_2_log_rng with solver controls."),
    ("laplace_latent_poisson_log_rng", "Draw latent Gaussians under a Poisson likelihood (Laplace)."),
    ("laplace_latent_tol_poisson_log_rng", "laplace_latent_poisson_log_rng with solver controls."),
    ("laplace_latent_poisson_2_log_rng", "Draw latent Gaussians under a Poisson (exposure) likelihood (Laplace)."),
    ("laplace_latent_poisson_2_log_tol_rng", "laplace_latent_poisson_2_log_rng with solver controls."),
];

/// The fixed argument structure of a variadic function (ODE, DAE and
/// algebraic solvers), or `None` for other names (reduce_sum's sliced
/// argument is checked by the checker; see `reduce_sum_slice_types`).
pub fn variadic(name: &str) -> Option<VariadicSignature> {
    let auto = |t: Type| (AdLevel::AutoDiff, t);
    let data = |t: Type| (AdLevel::DataOnly, t);
    let reals = || Type::array_of(Type::Real, 1);
    let vectors = || Type::array_of(Type::Vector, 1);
    let tolerances = || vec![data(Type::Real), data(Type::Real), data(Type::Int)];
    let ode_mandatory = || vec![auto(Type::Vector), auto(Type::Real), auto(reals())];
    let ode_fn_args = vec![auto(Type::Real), auto(Type::Vector)];
    let sig = |control_args, required_fn_args, ret| {
        Some(VariadicSignature {
            control_args,
            required_fn_args,
            required_fn_ret: Type::Vector,
            ret,
        })
    };
    // The variadic 1-D integrators are in the stanc3 corpus
    // (good/integrate_1d_*.stan) but newer than the Generate.ml revision
    // this table follows: `f(real x, real xc, ...) => real`, bounds, then
    // for `_tol` relative and absolute tolerance and a refinement limit.
    let integrator = |control_args| {
        Some(VariadicSignature {
            control_args,
            required_fn_args: vec![auto(Type::Real), auto(Type::Real)],
            required_fn_ret: Type::Real,
            ret: Type::Real,
        })
    };
    match name {
        "ode_rk45" | "ode_ckrk" | "ode_adams" | "ode_bdf" => {
            sig(ode_mandatory(), ode_fn_args, vectors())
        }
        "ode_rk45_tol" | "ode_ckrk_tol" | "ode_adams_tol" | "ode_bdf_tol" => sig(
            [ode_mandatory(), tolerances()].concat(),
            ode_fn_args,
            vectors(),
        ),
        "ode_adjoint_tol_ctl" => {
            let controls = vec![
                data(Type::Real),
                data(Type::Vector),
                data(Type::Real),
                data(Type::Vector),
                data(Type::Real),
                data(Type::Real),
                data(Type::Int),
                data(Type::Int),
                data(Type::Int),
                data(Type::Int),
                data(Type::Int),
            ];
            sig([ode_mandatory(), controls].concat(), ode_fn_args, vectors())
        }
        "dae" | "dae_tol" => {
            let mut control = vec![
                auto(Type::Vector),
                auto(Type::Vector),
                data(Type::Real),
                data(reals()),
            ];
            if name == "dae_tol" {
                control.extend(tolerances());
            }
            let fn_args = vec![auto(Type::Real), auto(Type::Vector), auto(Type::Vector)];
            sig(control, fn_args, vectors())
        }
        "solve_newton" | "solve_powell" => sig(
            vec![auto(Type::Vector)],
            vec![auto(Type::Vector)],
            Type::Vector,
        ),
        "solve_newton_tol" | "solve_powell_tol" => sig(
            vec![
                auto(Type::Vector),
                data(Type::Real),
                data(Type::Real),
                data(Type::Int),
            ],
            vec![auto(Type::Vector)],
            Type::Vector,
        ),
        "integrate_1d_double_exponential" | "integrate_1d_gauss_kronrod" => {
            integrator(vec![auto(Type::Real), auto(Type::Real)])
        }
        "integrate_1d_double_exponential_tol" | "integrate_1d_gauss_kronrod_tol" => {
            integrator(vec![
                auto(Type::Real),
                auto(Type::Real),
                data(Type::Real),
                data(Type::Real),
                data(Type::Int),
            ])
        }
        _ => None,
    }
}

/// Types a `reduce_sum` slice (first argument of the partial-sum function,
/// an array of one of these) may have its elements be.
pub fn reduce_sum_slice_types() -> [Type; 5] {
    [
        Type::Real,
        Type::Int,
        Type::Matrix,
        Type::Vector,
        Type::RowVector,
    ]
}

/// Solver-control arguments appended by the `_tol` embedded Laplace
/// functions: tolerance, max_num_steps, hessian_block_size, solver,
/// max_steps_line_search.
pub fn laplace_tolerance_args() -> Vec<(AdLevel, Type)> {
    vec![
        (AdLevel::DataOnly, Type::Real),
        (AdLevel::DataOnly, Type::Int),
        (AdLevel::DataOnly, Type::Int),
        (AdLevel::DataOnly, Type::Int),
        (AdLevel::DataOnly, Type::Int),
    ]
}

/// Likelihood-specific arguments of an embedded Laplace helper such as
/// `laplace_marginal_tol_neg_binomial_2_log_lpmf` (stanc3's
/// `laplace_helper_lik_args`): the observed counts, the latent-index
/// array and, for some likelihoods, a vector. `None` for other names.
pub fn laplace_likelihood_args(name: &str) -> Option<Vec<(AdLevel, Type)>> {
    let name = name
        .strip_suffix("_lupmf")
        .map(|stem| format!("{stem}_lpmf"))
        .unwrap_or_else(|| name.to_owned());
    if !SPECIAL_FUNCTIONS.iter().any(|(n, _)| *n == name) {
        return None;
    }
    let variant = name.strip_prefix("laplace_")?;
    let variant = variant.strip_prefix("marginal_").unwrap_or(variant);
    let variant = variant.strip_prefix("latent_").unwrap_or(variant);
    let variant = variant.strip_prefix("tol_").unwrap_or(variant);
    let variant = variant
        .strip_suffix("_lpmf")
        .or_else(|| variant.strip_suffix("_rng"))?;
    let variant = variant.strip_suffix("_tol").unwrap_or(variant);
    let ints = || (AdLevel::AutoDiff, Type::array_of(Type::Int, 1));
    match variant {
        "bernoulli_logit" | "poisson_log" => Some(vec![ints(), ints()]),
        "neg_binomial_2_log" | "poisson_2_log" => {
            Some(vec![ints(), ints(), (AdLevel::AutoDiff, Type::Vector)])
        }
        _ => None,
    }
}
