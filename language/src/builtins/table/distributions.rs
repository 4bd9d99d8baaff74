//! Distribution families as argument classes (stanc3's `distributions`
//! list), expanded into `_lpdf/_lpmf/_cdf/_lcdf/_lccdf/_rng` signatures.

use super::Builder;
use super::generators::{Class, Class::*, combinations};
use crate::types::Type;

/// Which functions a family entry generates.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Lpdf,
    Lpmf,
    Rng,
    /// `_cdf` and `_lcdf`.
    Cdf,
    /// `_lccdf`.
    Ccdf,
    /// `_lcdf_unnorm` and `_lccdf_unnorm` (the wiener first-passage CDFs).
    UnnormCdfs,
}
use Kind::*;

const FULL_LPDF: &[Kind] = &[Lpdf, Rng, Ccdf, Cdf];
const FULL_LPMF: &[Kind] = &[Lpmf, Rng, Ccdf, Cdf];

/// (kinds, family, argument classes; the first is the variate).
type Family = (&'static [Kind], &'static str, &'static [Class]);

#[rustfmt::skip]
const FAMILIES: &[Family] = &[
    (FULL_LPMF, "beta_binomial", &[VInt, VInt, VReal, VReal]),
    (&[Lpmf, Ccdf, Cdf, Rng], "beta_neg_binomial", &[VInt, VReal, VReal, VReal]),
    (FULL_LPDF, "beta", &[VReal, VReal, VReal]),
    (&[Lpdf, Ccdf, Cdf], "beta_proportion", &[VReal, VReal, IntAndReals]),
    (FULL_LPMF, "bernoulli", &[VInt, VReal]),
    (&[Lpmf, Rng], "bernoulli_logit", &[VInt, VReal]),
    (&[Lpmf], "bernoulli_logit_glm", &[VInt, Matrix, Real, Vector]),
    (FULL_LPMF, "binomial", &[VInt, VInt, VReal]),
    (&[Lpmf], "binomial_logit", &[VInt, VInt, VReal]),
    (&[Lpmf], "binomial_logit_glm", &[VInt, VInt, Matrix, Real, Vector]),
    (&[Lpmf], "categorical", &[VInt, Vector]),
    (&[Lpmf], "categorical_logit", &[VInt, Vector]),
    (&[Lpmf], "categorical_logit_glm", &[VInt, Matrix, Vector, Matrix]),
    (FULL_LPDF, "cauchy", &[VReal, VReal, VReal]),
    (FULL_LPDF, "chi_square", &[VReal, VReal]),
    (&[Lpdf], "dirichlet", &[Vectors, Vectors]),
    (&[Lpmf], "dirichlet_multinomial", &[IntArray, Vector]),
    (FULL_LPMF, "discrete_range", &[VInt, VInt, VInt]),
    (FULL_LPDF, "double_exponential", &[VReal, VReal, VReal]),
    (FULL_LPDF, "exp_mod_normal", &[VReal, VReal, VReal, VReal]),
    (FULL_LPDF, "exponential", &[VReal, VReal]),
    (FULL_LPDF, "frechet", &[VReal, VReal, VReal]),
    (FULL_LPDF, "gamma", &[VReal, VReal, VReal]),
    (&[Lpdf], "gaussian_dlm_obs", &[Matrix, Matrix, Matrix, Matrix, Matrix, Vector, Matrix]),
    (FULL_LPDF, "gumbel", &[VReal, VReal, VReal]),
    (&[Rng], "hmm_latent", &[IntArray, Matrix, Matrix, Vector]),
    (&[Lpmf, Rng], "hypergeometric", &[Int, Int, Int, Int]),
    (FULL_LPDF, "inv_chi_square", &[VReal, VReal]),
    (FULL_LPDF, "inv_gamma", &[VReal, VReal, VReal]),
    (&[Lpdf], "inv_wishart_cholesky", &[Matrix, Real, Matrix]),
    (&[Lpdf], "inv_wishart", &[Matrix, Real, Matrix]),
    (&[Lpdf], "lkj_corr", &[Matrix, Real]),
    (&[Lpdf], "lkj_corr_cholesky", &[Matrix, Real]),
    (&[Lpdf], "lkj_cov", &[Matrix, Vector, Vector, Real]),
    (FULL_LPDF, "logistic", &[VReal, VReal, VReal]),
    (&[Lpdf, Rng, Cdf], "loglogistic", &[VReal, VReal, VReal]),
    (FULL_LPDF, "lognormal", &[VReal, VReal, VReal]),
    (&[Lpdf], "multi_gp", &[Matrix, Matrix, Vector]),
    (&[Lpdf], "multi_gp_cholesky", &[Matrix, Matrix, Vector]),
    (&[Lpmf], "multinomial", &[IntArray, Vector]),
    (&[Lpmf], "multinomial_logit", &[IntArray, Vector]),
    (&[Lpdf], "multi_normal", &[Vectors, Vectors, Matrix]),
    (&[Lpdf], "multi_normal_cholesky", &[Vectors, Vectors, Matrix]),
    (&[Lpdf], "multi_normal_prec", &[Vectors, Vectors, Matrix]),
    (&[Lpdf], "multi_student_t", &[Vectors, Real, Vectors, Matrix]),
    (&[Lpdf], "multi_student_t_cholesky", &[Vectors, Real, Vectors, Matrix]),
    (FULL_LPMF, "neg_binomial", &[VInt, VReal, VReal]),
    (FULL_LPMF, "neg_binomial_2", &[VInt, VReal, VReal]),
    (&[Lpmf, Rng], "neg_binomial_2_log", &[VInt, VReal, VReal]),
    (&[Lpmf], "neg_binomial_2_log_glm", &[VInt, Matrix, Real, Vector, Real]),
    (FULL_LPDF, "normal", &[VReal, VReal, VReal]),
    (&[Lpdf], "normal_id_glm", &[Vector, Matrix, Real, Vector, Real]),
    (&[Lpmf], "ordered_logistic", &[Int, Real, Vector]),
    (&[Lpmf], "ordered_logistic_glm", &[VInt, Matrix, Vector, Vector]),
    (&[Lpmf], "ordered_probit", &[Int, Real, Vector]),
    (FULL_LPDF, "pareto", &[VReal, VReal, VReal]),
    (FULL_LPDF, "pareto_type_2", &[VReal, VReal, VReal, VReal]),
    (FULL_LPMF, "poisson", &[VInt, VReal]),
    (&[Lpmf, Rng], "poisson_log", &[VInt, VReal]),
    (&[Lpmf], "poisson_log_glm", &[VInt, Matrix, Real, Vector]),
    (FULL_LPDF, "rayleigh", &[VReal, VReal]),
    (FULL_LPDF, "scaled_inv_chi_square", &[VReal, VReal, VReal]),
    (FULL_LPDF, "skew_normal", &[VReal, VReal, VReal, VReal]),
    (FULL_LPDF, "skew_double_exponential", &[VReal, VReal, VReal, VReal]),
    (FULL_LPDF, "student_t", &[VReal, VReal, VReal, VReal]),
    (FULL_LPDF, "std_normal", &[VReal]),
    (FULL_LPDF, "uniform", &[VReal, VReal, VReal]),
    (FULL_LPDF, "von_mises", &[VReal, VReal, VReal]),
    (FULL_LPDF, "weibull", &[VReal, VReal, VReal]),
    (&[Lpdf], "wiener", &[VReal, VReal, VReal, VReal, VReal]),
    // The full wiener densities: stanc3 lists only the all-scalar and
    // all-vector forms, with 6 or 8 arguments.
    (&[Lpdf], "wiener", &[Real, Real, Real, Real, Real, Real]),
    (&[Lpdf], "wiener", &[Real, Real, Real, Real, Real, Real, Real, Real]),
    (&[Lpdf], "wiener", &[Vector, Vector, Vector, Vector, Vector, Vector]),
    (&[Lpdf], "wiener", &[Vector, Vector, Vector, Vector, Vector, Vector, Vector, Vector]),
    (&[Lpdf], "wishart_cholesky", &[Matrix, Real, Matrix]),
    (&[Lpdf], "wishart", &[Matrix, Real, Matrix]),
    // Added after the stanc3 Generate.ml revision this table follows; the
    // signatures are those the stanc3 corpus programs exercise
    // (good/function-signatures/.../wiener and .../yule_simon): the wiener
    // densities with a trailing precision argument and the wiener CDFs.
    (&[Lpdf], "wiener", &[Real, Real, Real, Real, Real, Real, Real]),
    (&[Lpdf], "wiener", &[Real, Real, Real, Real, Real, Real, Real, Real, Real]),
    (&[Lpdf], "wiener", &[Vector, Vector, Vector, Vector, Vector, Vector, Vector, Vector, Real]),
    (&[UnnormCdfs], "wiener", &[Real, Real, Real, Real, Real]),
    (&[UnnormCdfs], "wiener", &[Vector, Vector, Vector, Vector, Vector]),
    (&[UnnormCdfs], "wiener", &[Real, Real, Real, Real, Real, Real]),
    (&[UnnormCdfs], "wiener", &[Real, Real, Real, Real, Real, Real, Real, Real]),
    (&[UnnormCdfs], "wiener", &[Vector, Vector, Vector, Vector, Vector, Vector, Vector, Vector]),
    (&[UnnormCdfs], "wiener", &[Real, Real, Real, Real, Real, Real, Real, Real, Real]),
    (&[UnnormCdfs], "wiener", &[Vector, Vector, Vector, Vector, Vector, Vector, Vector, Vector, Real]),
    (&[Lpmf, Ccdf, Cdf], "yule_simon", &[VInt, VReal]),
];

/// Functions stanc3 generates from the classes but Stan Math lacks.
const MISSING: &[&str] = &["beta_proportion_cdf", "loglogistic_lcdf"];

/// The names of all distribution families, for completion and `~`.
pub(crate) fn distribution_families() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = FAMILIES.iter().map(|(_, name, _)| *name).collect();
    names.dedup();
    names
}

pub(super) fn register(builder: &mut Builder) {
    for (kinds, family, classes) in FAMILIES {
        for &kind in *kinds {
            for name in kind_names(kind, family) {
                builder.defer(&name, move |b| register_kind(b, kind, family, classes));
            }
        }
    }
}

fn suffixes(kind: Kind) -> &'static [&'static str] {
    match kind {
        Lpdf => &["_lpdf"],
        Lpmf => &["_lpmf"],
        Cdf => &["_cdf", "_lcdf"],
        Ccdf => &["_lccdf"],
        UnnormCdfs => &["_lcdf_unnorm", "_lccdf_unnorm"],
        Rng => &["_rng"],
    }
}

fn kind_names(kind: Kind, family: &str) -> Vec<String> {
    suffixes(kind)
        .iter()
        .map(|suffix| format!("{family}{suffix}"))
        .filter(|name| !MISSING.contains(&name.as_str()))
        .collect()
}

fn register_kind(builder: &mut Builder, kind: Kind, family: &str, classes: &[Class]) {
    if kind == Rng {
        // The variate class only decides the draw's element type; the
        // parameters may also be ints.
        let elem = match classes[0] {
            Int | IntArray | VInt => Type::Int,
            _ => Type::Real,
        };
        let params: Vec<Class> = classes[1..]
            .iter()
            .map(|c| if matches!(c, VReal) { IntAndReals } else { *c })
            .collect();
        let name = format!("{family}_rng");
        for args in combinations(&params) {
            let all_scalar = args.iter().all(|t| matches!(t, Type::Int | Type::Real));
            let ret = if all_scalar {
                elem.clone()
            } else {
                Type::Array(Box::new(elem.clone()))
            };
            builder.add(&name, ret, args);
        }
        return;
    }
    let arg_lists = combinations(classes);
    for name in kind_names(kind, family) {
        for args in &arg_lists {
            builder.add(&name, Type::Real, args.clone());
        }
    }
}
