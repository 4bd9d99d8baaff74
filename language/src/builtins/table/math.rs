//! The Stan Math functions that are not distributions: the vectorised
//! families via generators, the container-generic ones via loops over
//! types, and the rest from `fixed.sigs`.

use super::generators::{BARE_TYPES, Class, MAX_DEPTH, Returns};
use super::{Builder, arr, ty};
use crate::types::{AdLevel, FunctionType, Type};

/// Unary functions applied elementwise to any int/real container; the
/// result replaces ints by reals.
const UNARY_INTS_TO_REALS: &[&str] = &[
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "digamma",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "inv",
    "inv_cloglog",
    "inv_erfc",
    "inv_logit",
    "inv_Phi",
    "inv_sqrt",
    "inv_square",
    "lambert_w0",
    "lambert_wm1",
    "lgamma",
    "log",
    "log10",
    "log1m",
    "log1m_exp",
    "log1m_inv_logit",
    "log1p",
    "log1p_exp",
    "log2",
    "log_inv_logit",
    "logit",
    "Phi",
    "Phi_approx",
    "round",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "std_normal_qf",
    "std_normal_log_qf",
    "tan",
    "tanh",
    "tgamma",
    "trunc",
    "trigamma",
];

const BINARY_VEC: &[&str] = &[
    "atan2",
    "beta",
    "fdim",
    "fmax",
    "fmin",
    "fmod",
    "hypot",
    "lbeta",
    "lchoose",
    "lmultiply",
    "log_diff_exp",
    "log_falling_factorial",
    "log_inv_logit_diff",
    "log_modified_bessel_first_kind",
    "log_rising_factorial",
    "log_sum_exp",
    "pow",
];

const BINARY_VEC_INT_REAL: &[&str] = &[
    "bessel_first_kind",
    "bessel_second_kind",
    "binary_log_loss",
    "lmgamma",
    "modified_bessel_first_kind",
    "modified_bessel_second_kind",
];

pub(super) fn register(b: &mut Builder) {
    use Returns::*;
    // The generated families are deferred: expanded on first lookup.
    b.defer("abs", |b| {
        b.unary_vectorized("abs", Class::DeepVectorized, SameAsArg);
        b.unary_vectorized("abs", Class::DeepComplexVectorized, ComplexToReals);
    });
    for name in ["conj", "minus"] {
        b.defer(name, move |b| {
            b.unary_vectorized(name, Class::DeepComplexVectorized, SameAsArg)
        });
    }
    b.defer("minus", |b| {
        b.unary_vectorized("minus", Class::DeepVectorized, SameAsArg)
    });
    for name in ["get_imag", "get_real"] {
        b.defer(name, move |b| {
            b.unary_vectorized(name, Class::DeepComplexVectorized, ComplexToReals)
        });
    }
    for &name in UNARY_INTS_TO_REALS {
        b.defer(name, move |b| {
            b.unary_vectorized(name, Class::DeepVectorized, IntsToReals)
        });
    }
    b.unary_vectorized("step", Class::Real, IntsToReals);

    for &name in BINARY_VEC {
        b.defer(name, move |b| b.binary_vec(name));
    }
    b.defer("pow", |b| b.binary_vec_complex_complex("pow"));
    for &name in BINARY_VEC_INT_REAL {
        b.defer(name, move |b| b.binary_vec_int_real(name));
    }
    for name in ["gamma_p", "gamma_q", "owens_t"] {
        b.defer(name, move |b| b.binary_vec_real_real(name));
    }
    b.defer("to_complex", |b| {
        b.binary_vec_reals_to_complex("to_complex")
    });
    b.defer("choose", |b| b.binary_vec_int_int("choose"));
    for name in ["falling_factorial", "rising_factorial"] {
        b.defer(name, move |b| {
            b.binary_vec_int_int(name);
            b.binary_vec_real_int(name);
        });
    }
    b.defer("ldexp", |b| b.binary_vec_real_int("ldexp"));
    b.ternary_vec("fma");
    b.defer("student_t_qf", register_student_t_qf);

    register_transforms(b);
    register_container_generic(b);
    register_operators(b);
    register_higher_order(b);
    b.add_text(include_str!("fixed.sigs"));
}

/// Quantile functions of distributions newer than the Generate.ml revision
/// this table follows. `student_t_qf` is inferred from the stanc3 corpus
/// (good/function-signatures/.../student_t_qf_3.stan): vectorised over all
/// four arguments, returning a vector when any argument is a container.
fn register_student_t_qf(b: &mut Builder) {
    use super::generators::combinations;
    let classes = [Class::VReal, Class::VReal, Class::VReal, Class::VReal];
    for args in combinations(&classes) {
        let ret = if args.iter().all(|t| *t == Type::Real) {
            Type::Real
        } else {
            Type::Vector
        };
        b.add("student_t_qf", ret, args);
    }
}

/// Constraining transforms and their inverses and Jacobians.
fn register_transforms(b: &mut Builder) {
    for transform in ["lower_bound", "upper_bound"] {
        for suffix in ["jacobian", "constrain", "unconstrain"] {
            let name = format!("{transform}_{suffix}");
            b.defer(&name.clone(), move |b| b.first_arg_vector_binary(&name));
        }
    }
    for transform in ["lower_upper_bound", "offset_multiplier"] {
        for suffix in ["jacobian", "constrain", "unconstrain"] {
            let name = format!("{transform}_{suffix}");
            b.defer(&name.clone(), move |b| b.first_arg_vector_ternary(&name));
        }
    }
    for name in [
        "ordered",
        "positive_ordered",
        "simplex",
        "unit_vector",
        "sum_to_zero",
    ] {
        for suffix in ["jacobian", "constrain", "unconstrain"] {
            b.nested_unary(&format!("{name}_{suffix}"), Type::Vector);
        }
    }
    for suffix in ["jacobian", "constrain", "unconstrain"] {
        b.nested_unary(&format!("sum_to_zero_{suffix}"), Type::Matrix);
    }
    for d in 0..MAX_DEPTH {
        let m = arr(&Type::Matrix, d);
        let v = arr(&Type::Vector, d);
        for name in ["corr_matrix", "cov_matrix", "cholesky_factor_corr"] {
            b.add(
                &format!("{name}_constrain"),
                m.clone(),
                vec![v.clone(), Type::Int],
            );
            b.add(&format!("{name}_unconstrain"), v.clone(), vec![m.clone()]);
            b.add(
                &format!("{name}_jacobian"),
                m.clone(),
                vec![v.clone(), Type::Int],
            );
        }
        let (name, int2) = ("cholesky_factor_cov", vec![v.clone(), Type::Int, Type::Int]);
        b.add(&format!("{name}_constrain"), m.clone(), int2.clone());
        b.add(&format!("{name}_unconstrain"), v.clone(), vec![m.clone()]);
        b.add(&format!("{name}_jacobian"), m.clone(), int2);
        for name in ["stochastic_column", "stochastic_row"] {
            for suffix in ["jacobian", "constrain", "unconstrain"] {
                b.add(&format!("{name}_{suffix}"), m.clone(), vec![m.clone()]);
            }
        }
    }
}

/// Functions generic over element types and array depth.
fn register_container_generic(b: &mut Builder) {
    for d in 1..MAX_DEPTH {
        for t in &BARE_TYPES {
            let a = arr(t, d);
            b.add("append_array", a.clone(), vec![a.clone(), a]);
        }
    }
    for d in 0..MAX_DEPTH {
        for t in &BARE_TYPES {
            b.add("dims", ty("array[] int"), vec![arr(t, d + 1)]);
        }
    }
    for t in &BARE_TYPES {
        for d in 1..4 {
            let a = arr(t, d);
            b.add("head", a.clone(), vec![a.clone(), Type::Int]);
        }
    }
    for t in &BARE_TYPES {
        for d in 1..10 {
            b.add("num_elements", Type::Int, vec![arr(t, d)]);
        }
    }
    for t in &BARE_TYPES {
        b.add("rep_array", arr(t, 1), vec![t.clone(), Type::Int]);
        b.add(
            "rep_array",
            arr(t, 2),
            vec![t.clone(), Type::Int, Type::Int],
        );
        b.add(
            "rep_array",
            arr(t, 3),
            vec![t.clone(), Type::Int, Type::Int, Type::Int],
        );
        for d in 1..3 {
            let a = arr(t, d);
            b.add("rep_array", arr(t, d + 1), vec![a.clone(), Type::Int]);
            b.add(
                "rep_array",
                arr(t, d + 2),
                vec![a.clone(), Type::Int, Type::Int],
            );
            b.add(
                "rep_array",
                arr(t, d + 3),
                vec![a, Type::Int, Type::Int, Type::Int],
            );
        }
    }
    for d in 1..MAX_DEPTH {
        for t in &BARE_TYPES {
            let a = arr(t, d);
            b.add("reverse", a.clone(), vec![a]);
        }
    }
    b.add("reverse", Type::ComplexVector, vec![Type::ComplexVector]);
    b.add(
        "reverse",
        Type::ComplexRowVector,
        vec![Type::ComplexRowVector],
    );
    for t in &BARE_TYPES {
        for d in 1..4 {
            let a = arr(t, d);
            b.add("segment", a.clone(), vec![a, Type::Int, Type::Int]);
        }
    }
    for d in 1..MAX_DEPTH {
        for t in &BARE_TYPES {
            b.add("size", Type::Int, vec![arr(t, d)]);
        }
    }
    for t in &BARE_TYPES {
        b.add("size", Type::Int, vec![t.clone()]);
    }
    for t in &BARE_TYPES {
        for d in 1..4 {
            let a = arr(t, d);
            b.add("tail", a.clone(), vec![a, Type::Int]);
        }
    }
    for d in 1..10 {
        b.add("to_array_1d", ty("array[] real"), vec![arr(&Type::Real, d)]);
        b.add("to_array_1d", ty("array[] int"), vec![arr(&Type::Int, d)]);
    }
    for d in 0..MAX_DEPTH {
        for t in [Type::Real, Type::Int] {
            b.add_qualified(
                "to_int",
                Some(arr(&Type::Int, d)),
                vec![(AdLevel::DataOnly, arr(&t, d))],
            );
        }
    }
    let vectors = [Type::Vector, Type::RowVector, ty("array[] real")];
    for t1 in &vectors {
        for t2 in &vectors {
            for name in ["hypergeometric_3F2", "hypergeometric_pFq"] {
                b.add(name, Type::Real, vec![t1.clone(), t2.clone(), Type::Real]);
            }
        }
    }
    let mix_vectors = [ty("array[] real"), Type::Vector, Type::RowVector];
    for v1 in &mix_vectors {
        for v2 in &mix_vectors {
            b.add("log_mix", Type::Real, vec![v1.clone(), v2.clone()]);
        }
        b.add(
            "log_mix",
            Type::Real,
            vec![v1.clone(), ty("array[] vector")],
        );
        b.add(
            "log_mix",
            Type::Real,
            vec![v1.clone(), ty("array[] row_vector")],
        );
    }
    // beta_proportion_rng does not take an int first argument (stanc3 XXX).
    let real_vectors = [
        Type::Real,
        ty("array[] real"),
        Type::Vector,
        Type::RowVector,
    ];
    let all_vectors = [
        Type::Real,
        ty("array[] real"),
        Type::Vector,
        Type::RowVector,
        Type::Int,
        ty("array[] int"),
    ];
    for t in &real_vectors {
        for u in &all_vectors {
            let scalar = matches!(t, Type::Real) && matches!(u, Type::Real | Type::Int);
            let ret = if scalar {
                Type::Real
            } else {
                ty("array[] real")
            };
            b.add("beta_proportion_rng", ret, vec![t.clone(), u.clone()]);
        }
    }
}

/// The functions behind Stan's operators (`a + b` is `add(a, b)`).
fn register_operators(b: &mut Builder) {
    for name in ["add", "subtract", "elt_multiply", "elt_divide"] {
        for t in &BARE_TYPES {
            b.add(name, t.clone(), vec![t.clone(), t.clone()]);
        }
    }
    for name in ["elt_multiply", "elt_divide"] {
        for (c, s) in [
            (Type::Vector, Type::Real),
            (Type::RowVector, Type::Real),
            (Type::Matrix, Type::Real),
            (Type::ComplexVector, Type::Complex),
            (Type::ComplexRowVector, Type::Complex),
            (Type::ComplexMatrix, Type::Complex),
        ] {
            b.add(name, c.clone(), vec![c.clone(), s.clone()]);
            b.add(name, c.clone(), vec![s, c]);
        }
    }
    let primitives = [Type::Int, Type::Real];
    for t1 in &primitives {
        for t2 in &primitives {
            for op in [
                "logical_eq",
                "logical_neq",
                "logical_lt",
                "logical_lte",
                "logical_gt",
                "logical_gte",
            ] {
                b.add(op, Type::Int, vec![t1.clone(), t2.clone()]);
            }
        }
    }
}

/// Higher-order functions whose signatures are fixed (the function
/// argument has a fixed type); the variadic ones are in `special`.
fn register_higher_order(b: &mut Builder) {
    let auto = |t: &str| (AdLevel::AutoDiff, ty(t));
    let data = |t: &str| (AdLevel::DataOnly, ty(t));
    let function = |args: Vec<(AdLevel, Type)>, ret: &str| {
        (
            AdLevel::AutoDiff,
            Type::Function(Box::new(FunctionType {
                args,
                ret: Some(ty(ret)),
            })),
        )
    };
    let tolerances = || vec![data("real"), data("real"), data("real")];

    let solver_fn = function(
        vec![
            auto("vector"),
            auto("vector"),
            data("array[] real"),
            data("array[] int"),
        ],
        "vector",
    );
    for name in ["algebra_solver", "algebra_solver_newton"] {
        let base = vec![
            solver_fn.clone(),
            auto("vector"),
            auto("vector"),
            data("array[] real"),
            data("array[] int"),
        ];
        b.add_qualified(name, Some(Type::Vector), base.clone());
        b.add_qualified(name, Some(Type::Vector), [base, tolerances()].concat());
    }

    let integrand = function(
        vec![
            auto("real"),
            auto("real"),
            auto("array[] real"),
            data("array[] real"),
            data("array[] int"),
        ],
        "real",
    );
    let integrate_args = vec![
        integrand,
        auto("real"),
        auto("real"),
        auto("array[] real"),
        data("array[] real"),
        data("array[] int"),
    ];
    b.add_qualified("integrate_1d", Some(Type::Real), integrate_args.clone());
    b.add_qualified(
        "integrate_1d",
        Some(Type::Real),
        [integrate_args, vec![data("real")]].concat(),
    );

    let ode_fn = function(
        vec![
            auto("real"),
            auto("array[] real"),
            auto("array[] real"),
            data("array[] real"),
            data("array[] int"),
        ],
        "array[] real",
    );
    let ode_args = vec![
        ode_fn,
        auto("array[] real"),
        auto("real"),
        auto("array[] real"),
        auto("array[] real"),
        data("array[] real"),
        data("array[] int"),
    ];
    let ode_ret = Some(ty("array[,] real"));
    b.add_qualified("integrate_ode", ode_ret.clone(), ode_args.clone());
    for name in [
        "integrate_ode_adams",
        "integrate_ode_bdf",
        "integrate_ode_rk45",
    ] {
        b.add_qualified(name, ode_ret.clone(), ode_args.clone());
        b.add_qualified(
            name,
            ode_ret.clone(),
            [ode_args.clone(), tolerances()].concat(),
        );
    }

    let map_fn = function(
        vec![
            auto("vector"),
            auto("vector"),
            data("array[] real"),
            data("array[] int"),
        ],
        "vector",
    );
    b.add_qualified(
        "map_rect",
        Some(Type::Vector),
        vec![
            map_fn,
            auto("vector"),
            auto("array[] vector"),
            data("array[,] real"),
            data("array[,] int"),
        ],
    );
}
