//! Unit tests of the table against stanc3's signatures (Generate.ml) and of
//! promotion and overload resolution against stanc3's rules.

use super::*;
use crate::types::FunctionType;

fn t(text: &str) -> Type {
    notation::parse_type(text).unwrap()
}

fn auto(text: &str) -> (AdLevel, Type) {
    (AdLevel::AutoDiff, t(text))
}

fn data(text: &str) -> (AdLevel, Type) {
    (AdLevel::DataOnly, t(text))
}

fn ret(name: &str, args: &[(AdLevel, Type)]) -> Option<Type> {
    resolve(name, args)
        .unwrap_or_else(|e| panic!("{name}{args:?}: {e:?}"))
        .ret
}

#[test]
fn promotion_costs_follow_stanc3() {
    let cost = |a: &str, b: &str| promotion_cost(&t(a), &t(b));
    assert_eq!(cost("int", "int"), Some(0));
    assert_eq!(cost("int", "real"), Some(1));
    assert_eq!(cost("real", "complex"), Some(1));
    assert_eq!(cost("int", "complex"), Some(2));
    assert_eq!(cost("vector", "complex_vector"), Some(1));
    assert_eq!(cost("row_vector", "complex_row_vector"), Some(1));
    assert_eq!(cost("matrix", "complex_matrix"), Some(1));
    assert_eq!(cost("array[,] int", "array[,] real"), Some(1));
    assert_eq!(cost("array[] int", "array[] complex"), Some(2));
    assert_eq!(cost("tuple(int, real)", "tuple(real, complex)"), Some(2));
    assert_eq!(cost("real", "int"), None);
    assert_eq!(cost("complex", "real"), None);
    assert_eq!(cost("vector", "row_vector"), None);
    assert_eq!(cost("array[] int", "array[,] real"), None);
    assert_eq!(cost("array[] real", "vector"), None);
    assert_eq!(cost("vector", "matrix"), None);
    assert_eq!(promotion_cost(&Type::Error, &t("matrix")), Some(0));
    assert_eq!(promotion_cost(&t("matrix"), &Type::Error), Some(0));
}

#[test]
fn int_arguments_promote_to_real_parameters() {
    // normal_lpdf(int | int, int) selects the all-real signature (cost 3).
    assert_eq!(
        resolve("normal_lpdf", &[auto("int"), auto("int"), auto("int")])
            .unwrap()
            .args,
        vec![auto("real"), auto("real"), auto("real")]
    );
    // An exact match beats a promotion: max(int, int) stays int.
    assert_eq!(ret("max", &[auto("int"), auto("int")]), Some(Type::Int));
    // rep_matrix(int, int, int): real (cost 1) beats complex (cost 2).
    assert_eq!(
        ret("rep_matrix", &[auto("int"), auto("int"), auto("int")]),
        Some(Type::Matrix)
    );
    // Elementwise over arrays: exp(array[,] int) => array[,] real.
    assert_eq!(
        ret("exp", &[auto("array[,] int")]),
        Some(t("array[,] real"))
    );
}

#[test]
fn equal_minimal_costs_are_ambiguous() {
    // Like user overloads f(int, real) and f(real, int) called with ints.
    let cands = vec![
        Signature {
            args: vec![auto("int"), auto("real")],
            ret: Some(Type::Real),
        },
        Signature {
            args: vec![auto("real"), auto("int")],
            ret: Some(Type::Real),
        },
        Signature {
            args: vec![auto("real"), auto("real")],
            ret: Some(Type::Real),
        },
    ];
    assert_eq!(
        select_overload(&cands, &[auto("int"), auto("int")]),
        Err(OverloadError::Ambiguous(vec![0, 1]))
    );
    assert_eq!(select_overload(&cands, &[auto("int"), auto("real")]), Ok(0));
    assert_eq!(
        select_overload(&cands, &[auto("real"), auto("real")]),
        Ok(2)
    );
    assert_eq!(
        select_overload(&cands, &[auto("vector"), auto("real")]),
        Err(OverloadError::NoMatch)
    );
    assert_eq!(
        select_overload(&cands, &[auto("real")]),
        Err(OverloadError::NoMatch)
    );
}

#[test]
fn data_only_parameters_need_data_arguments() {
    let args = |ad| {
        vec![
            (AdLevel::DataOnly, Type::Int),
            (ad, Type::Real),
            (ad, Type::Real),
        ]
    };
    assert_eq!(
        resolve("linspaced_vector", &args(AdLevel::AutoDiff)),
        Err(OverloadError::NoMatch)
    );
    assert_eq!(
        ret("linspaced_vector", &args(AdLevel::DataOnly)),
        Some(Type::Vector)
    );
    // Autodiff parameters accept data arguments.
    assert_eq!(ret("exp", &[data("vector")]), Some(Type::Vector));
    assert_eq!(
        ret("quantile", &[data("vector"), data("array[] real")]),
        Some(t("array[] real"))
    );
    assert!(resolve("quantile", &[auto("vector"), data("real")]).is_err());
    // to_int takes data only.
    assert_eq!(
        ret("to_int", &[data("array[] real")]),
        Some(t("array[] int"))
    );
    assert!(resolve("to_int", &[auto("real")]).is_err());
}

#[test]
fn error_arguments_match_anything() {
    let error = (AdLevel::AutoDiff, Type::Error);
    assert_eq!(
        ret("categorical_rng", std::slice::from_ref(&error)),
        Some(Type::Int)
    );
    // Several signatures fit an unknown argument equally well.
    assert!(matches!(
        resolve("normal_lpdf", &[error.clone(), auto("real"), auto("real")]),
        Err(OverloadError::Ambiguous(c)) if c.len() == 4
    ));
    // An error argument does not excuse the other arguments.
    assert_eq!(
        resolve("categorical_rng", &[error, auto("real")]),
        Err(OverloadError::NoMatch)
    );
}

#[test]
fn spot_checks_against_stanc3_table() {
    assert_eq!(
        ret("normal_lpdf", &[auto("vector"), auto("real"), auto("real")]),
        Some(Type::Real)
    );
    assert_eq!(ret("categorical_rng", &[auto("vector")]), Some(Type::Int));
    assert!(resolve("categorical_rng", &[auto("row_vector")]).is_err());
    assert_eq!(
        ret("append_row", &[auto("real"), auto("vector")]),
        Some(Type::Vector)
    );
    assert_eq!(
        ret("append_row", &[auto("int"), auto("vector")]),
        Some(Type::Vector)
    );
    assert_eq!(
        ret("append_row", &[auto("row_vector"), auto("row_vector")]),
        Some(Type::Matrix)
    );
    assert!(resolve("append_row", &[auto("vector"), auto("row_vector")]).is_err());
    assert_eq!(
        ret("append_col", &[auto("complex_row_vector"), auto("complex")]),
        Some(Type::ComplexRowVector)
    );
    assert_eq!(
        ret("rep_matrix", &[auto("vector"), auto("int")]),
        Some(Type::Matrix)
    );
    assert_eq!(ret("to_vector", &[auto("array[] int")]), Some(Type::Vector));
    // stanc3 has no to_vector over 2-D arrays.
    assert_eq!(
        resolve("to_vector", &[auto("array[,] int")]),
        Err(OverloadError::NoMatch)
    );
    assert_eq!(ret("size", &[auto("int")]), Some(Type::Int));
    assert_eq!(ret("size", &[auto("array[,] matrix")]), Some(Type::Int));
    assert_eq!(
        ret("dims", &[auto("array[,] real")]),
        Some(t("array[] int"))
    );
    assert_eq!(ret("get_real", &[auto("complex")]), Some(Type::Real));
    assert_eq!(
        ret("get_real", &[auto("array[] complex_matrix")]),
        Some(t("array[] matrix"))
    );
    assert_eq!(ret("abs", &[auto("int")]), Some(Type::Int));
    assert_eq!(ret("abs", &[auto("complex_vector")]), Some(Type::Vector));
    assert_eq!(ret("pow", &[auto("int"), auto("int")]), Some(Type::Real));
    assert_eq!(
        ret("pow", &[auto("vector"), auto("int")]),
        Some(Type::Vector)
    );
    assert_eq!(
        ret("pow", &[auto("complex"), auto("real")]),
        Some(Type::Complex)
    );
    assert_eq!(
        ret("bernoulli_logit_rng", &[auto("vector")]),
        Some(t("array[] int"))
    );
    assert_eq!(
        ret("normal_rng", &[auto("int"), auto("real")]),
        Some(Type::Real)
    );
    assert_eq!(
        ret("normal_rng", &[auto("array[] int"), auto("real")]),
        Some(t("array[] real"))
    );
    assert_eq!(
        ret("svd", &[auto("matrix")]),
        Some(t("tuple(matrix, vector, matrix)"))
    );
    assert_eq!(
        ret("multiply", &[auto("row_vector"), auto("vector")]),
        Some(Type::Real)
    );
    assert_eq!(ret("e", &[]), Some(Type::Real));
    assert_eq!(
        ret(
            "hypergeometric_3F2",
            &[auto("array[] real"), auto("vector"), auto("real")]
        ),
        Some(Type::Real)
    );
    assert_eq!(
        ret(
            "rep_array",
            &[auto("array[] vector"), auto("int"), auto("int")]
        ),
        Some(t("array[,,] vector"))
    );
    // Expansion sizes from stanc3's classes: 4 shapes per vectorised real.
    assert_eq!(signatures("normal_lpdf").len(), 4 * 4 * 4);
    assert_eq!(signatures("student_t_rng").len(), 6 * 6 * 6);
    // exp: 5 base types in 0..8 arrays, plus exp(complex).
    assert_eq!(signatures("exp").len(), 5 * 8 + 1);
    assert!(signatures("no_such_function").is_empty());
}

#[test]
fn function_arguments_must_match_exactly() {
    let solver_fn = |ret: &str, first_ad| {
        (
            AdLevel::AutoDiff,
            Type::Function(Box::new(FunctionType {
                args: vec![
                    (first_ad, t("vector")),
                    auto("vector"),
                    data("array[] real"),
                    data("array[] int"),
                ],
                ret: Some(t(ret)),
            })),
        )
    };
    let rest = [
        auto("vector"),
        auto("vector"),
        data("array[] real"),
        data("array[] int"),
    ];
    let call = |f| [vec![f], rest.to_vec()].concat();
    assert_eq!(
        ret(
            "algebra_solver",
            &call(solver_fn("vector", AdLevel::AutoDiff))
        ),
        Some(Type::Vector)
    );
    // Wrong return type, or a function demanding data where autodiff
    // values will be passed.
    assert!(
        resolve(
            "algebra_solver",
            &call(solver_fn("real", AdLevel::AutoDiff))
        )
        .is_err()
    );
    assert!(
        resolve(
            "algebra_solver",
            &call(solver_fn("vector", AdLevel::DataOnly))
        )
        .is_err()
    );
}

#[test]
fn unnormalised_names_share_signatures() {
    assert!(is_builtin("normal_lupdf"));
    assert!(is_builtin("poisson_lupmf"));
    assert!(!is_builtin("normal_lupmf"));
    assert_eq!(signatures("normal_lupdf"), signatures("normal_lpdf"));
    assert!(names().any(|n| n == "normal_lupdf"));
}

#[test]
fn distributions_know_their_functions() {
    let normal = distribution("normal").unwrap();
    assert!(normal.has_lpdf && normal.has_cdf && normal.has_lcdf && normal.has_lccdf);
    assert!(normal.has_rng && !normal.has_lpmf && normal.supports_truncation());
    let poisson = distribution("poisson").unwrap();
    assert!(poisson.has_lpmf && poisson.is_discrete() && !poisson.has_lpdf);
    // stanc3 leaves out the functions Stan Math lacks.
    let beta_proportion = distribution("beta_proportion").unwrap();
    assert!(!beta_proportion.has_cdf && beta_proportion.has_lcdf);
    // ... and add beta_proportion_rng separately.
    assert!(beta_proportion.has_rng);
    let loglogistic = distribution("loglogistic").unwrap();
    assert!(loglogistic.has_cdf && !loglogistic.has_lcdf && !loglogistic.has_lccdf);
    assert!(distribution("multi_normal").unwrap().has_rng);
    assert!(distribution("lkj_corr").unwrap().has_rng);
    assert!(!distribution("lkj_cov").unwrap().has_rng);
    assert!(distribution("nromal").is_none());
    assert!(
        distribution("laplace_marginal_poisson_log")
            .unwrap()
            .has_lpmf
    );
    assert!(distribution_families().any(|f| f == "wiener"));
}

#[test]
fn special_functions_are_listed() {
    for name in [
        "reduce_sum",
        "map_rect",
        "ode_bdf_tol",
        "dae",
        "solve_powell",
        "integrate_1d",
    ] {
        assert!(is_special(name) && is_builtin(name), "{name}");
        assert!(doc(name).is_some(), "{name}");
    }
    assert!(is_special("laplace_marginal_poisson_log_lupmf"));
    assert!(!is_special("normal_lpdf"));
    assert!(signatures("reduce_sum").is_empty());
    let ode = variadic("ode_rk45_tol").unwrap();
    assert_eq!(ode.control_args.len(), 6);
    assert_eq!(ode.ret, t("array[] vector"));
    assert!(variadic("normal_lpdf").is_none());
    assert_eq!(
        laplace_likelihood_args("laplace_marginal_tol_neg_binomial_2_log_lupmf"),
        Some(vec![
            auto("array[] int"),
            auto("array[] int"),
            auto("vector")
        ])
    );
    assert_eq!(
        laplace_likelihood_args("laplace_latent_poisson_log_rng").map(|a| a.len()),
        Some(2)
    );
    assert_eq!(
        laplace_likelihood_args("laplace_marginal_poisson_2_log_tol_lpmf").map(|a| a.len()),
        Some(3)
    );
    assert!(laplace_likelihood_args("laplace_marginal").is_none());
    assert!(names().any(|n| n == "laplace_marginal_poisson_log_lupmf"));
}

#[test]
fn names_are_sorted_unique_and_documented() {
    let all: Vec<&str> = names().collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    assert!(all.len() > 600, "{}", all.len());
    let undocumented: Vec<&&str> = all.iter().filter(|n| doc(n).is_none()).collect();
    assert!(undocumented.is_empty(), "no doc: {undocumented:?}");
    assert_eq!(doc("no_such_function"), None);
    assert!(doc("poisson").unwrap().contains("poisson_lpmf"));
    assert!(doc("normal_lupdf").unwrap().contains("dropping constant"));
}

#[test]
fn signatures_display_in_stan_syntax() {
    let sig = resolve("quantile", &[data("array[] real"), data("real")]).unwrap();
    assert_eq!(
        display_signature(&sig),
        "(data array[] real, data real) => real"
    );
    assert_eq!(
        display_named_signature("svd", &resolve("svd", &[auto("matrix")]).unwrap()),
        "svd(matrix) => tuple(matrix, vector, matrix)"
    );
}

#[test]
fn operators_map_to_stanc3_functions() {
    assert_eq!(operator_functions("/", 2), ["mdivide_right", "divide"]);
    assert_eq!(operator_functions("-", 1), ["minus"]);
    assert!(operator_functions("%/%", 2).is_empty());
    for (op, arity) in [("+", 2), ("*", 2), (".*", 2), ("==", 2), ("!", 1), ("'", 1)] {
        for name in operator_functions(op, arity) {
            assert!(!signatures(name).is_empty(), "{name}");
        }
    }
    assert_eq!(
        ret("multiply", &[auto("matrix"), auto("vector")]),
        Some(Type::Vector)
    );
    assert_eq!(ret("add", &[auto("int"), auto("real")]), Some(Type::Real));
    assert_eq!(ret("minus", &[auto("array[] int")]), Some(t("array[] int")));
}

#[test]
fn compound_assignment_follows_operator_signatures() {
    let accepts = |op: &str, lhs: &str, rhs: &str| {
        resolve_compound_assignment(op, &auto(lhs), &auto(rhs)).is_ok()
    };
    assert!(accepts("+", "vector", "real"));
    assert!(accepts("+", "vector", "int"));
    assert!(accepts("*", "matrix", "matrix"));
    assert!(accepts("*", "row_vector", "matrix"));
    assert!(accepts("/", "real", "int"));
    assert!(accepts(".*", "vector", "vector"));
    // The result must keep the left-hand side's type.
    assert!(!accepts("*", "vector", "row_vector"));
    assert!(!accepts("+", "int", "real"));
    // Elementwise operators do not apply to scalars.
    assert!(!accepts(".*", "real", "real"));
    assert!(compound_assignment_signatures("%").is_empty());
}

/// Calls that stanc3 rejects (corpus/stanc3/bad: op_*_bad, validate_*_bad,
/// removed_features, compound-assign).
#[test]
fn rejections_match_stanc3_bad_corpus() {
    let no_match = |name: &str, args: &[(AdLevel, Type)]| {
        assert_eq!(
            resolve(name, args),
            Err(OverloadError::NoMatch),
            "{name}{args:?}"
        )
    };
    // op_divide_bad, op_elt_multiply_bad, op_mdivide_left_bad: `b / a` etc.
    // with b an int array and a a matrix.
    for name in ["divide", "mdivide_right", "elt_multiply", "mdivide_left"] {
        no_match(name, &[auto("array[] int"), auto("matrix")]);
    }
    // validate_modulus_bad: real % real.
    no_match("modulus", &[data("real"), data("real")]);
    // validate_exponentiation_bad: int ^ int is real, not assignable to int.
    let pow = resolve("pow", &[data("int"), data("int")]).unwrap();
    assert_eq!(promotion_cost(pow.ret.as_ref().unwrap(), &Type::Int), None);
    // removed_features: these functions no longer exist.
    for removed in [
        "fabs",
        "binomial_coefficient_log",
        "cov_exp_quad",
        "multiply_log",
        "if_else",
    ] {
        assert!(!is_builtin(removed), "{removed}");
    }
    // compound-assign: int += real, real ./= real, array[] matrix += ...
    let compound =
        |op, lhs: &str, rhs: &str| resolve_compound_assignment(op, &auto(lhs), &auto(rhs));
    assert!(compound("+", "int", "real").is_err());
    assert!(compound("./", "real", "real").is_err());
    assert!(compound("+", "array[] matrix", "array[] matrix").is_err());
    assert!(compound("+", "array[] row_vector", "array[] row_vector").is_err());
    assert!(compound("+", "matrix", "matrix").is_ok());
    // signature_sampling_known: `vector ~ bernoulli_logit(vector)`.
    no_match("bernoulli_logit_lpmf", &[data("vector"), auto("vector")]);
    // call_dist_no_suffix, binomial_coefficient_sample: not functions.
    assert!(!is_builtin("std_normal") && !is_builtin("binomial_coefficient"));
    assert!(distribution("binomial_coefficient").is_none());
    // prob-poisson_log-trunc-*: poisson_log has no CDFs to truncate with.
    assert!(!distribution("poisson_log").unwrap().supports_truncation());
}

/// `resolve`'s exact-match fast path relies on this: stanc3 would report
/// an exact call of such a pair as ambiguous.
#[test]
fn no_two_signatures_of_a_name_share_argument_types() {
    for name in names() {
        let mut seen = std::collections::HashSet::new();
        for sig in signatures_ref(name) {
            let types: Vec<&Type> = sig.args.iter().map(|(_, ty)| ty).collect();
            assert!(
                seen.insert(types),
                "{name}: duplicate {}",
                display_signature(sig)
            );
        }
    }
}

#[test]
fn fast_path_agrees_with_full_resolution() {
    for name in [
        "normal_lpdf",
        "pow",
        "add",
        "exp",
        "student_t_rng",
        "to_int",
    ] {
        for sig in signatures_ref(name) {
            let index = select_overload(signatures_ref(name), &sig.args).unwrap();
            assert_eq!(
                resolve(name, &sig.args).unwrap(),
                signatures_ref(name)[index]
            );
        }
    }
}
