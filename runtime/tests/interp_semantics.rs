//! Semantics of the reference interpreter on small programs, against
//! closed forms and Stan's documented behaviour.

use language::data::DataFile;
use language::mir;
use language::value::Value;
use runtime::{ErrorKind, Model, Rng, RuntimeError};

fn model(source: &str, data: &str) -> Result<Model, RuntimeError> {
    let fe = language::compile_front_end(source);
    let errors: Vec<_> = fe.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(
        errors.is_empty(),
        "front end: {:?}",
        errors.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    let program =
        mir::lower(&fe.program, fe.checked.as_ref().unwrap(), "test").unwrap_or_else(|d| {
            panic!(
                "lowering: {:?}",
                d.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    Model::new(&program, &DataFile::parse(data).unwrap())
}

/// Generated quantities of a parameter-free program, by name.
fn gq(source: &str) -> Result<Vec<(String, Value)>, RuntimeError> {
    let m = model(source, "{}")?;
    m.generated_quantities(&[], Rng::new(1, 0, 0))
        .map(|d| d.values)
}

fn value(values: &[(String, Value)], name: &str) -> Value {
    values
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
        .clone()
}

fn real(v: &Value) -> f64 {
    v.as_real().unwrap()
}

fn reals(v: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    v.flatten_reals(&mut out);
    out
}

#[test]
fn recursion_fibonacci() {
    let vals = gq(
        "functions { int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); } }
        generated quantities { int f20 = fib(20); }",
    )
    .unwrap();
    assert_eq!(value(&vals, "f20"), Value::Int(6765));
}

/// Stan has no fixed recursion limit: a recursive function over a few
/// hundred data points runs (bat's first limit, 100 nested calls, stopped
/// it).
#[test]
fn recursion_hundreds_of_calls_deep_runs() {
    let vals = gq(
        "functions { int depth(int n) { if (n == 0) return 0; return 1 + depth(n - 1); } }
        generated quantities { int d = depth(900); }",
    )
    .unwrap();
    assert_eq!(value(&vals, "d"), Value::Int(900));
}

#[test]
fn runaway_recursion_is_a_clear_error() {
    let err = gq("functions { real down(real x) { return down(x - 1); } }
        generated quantities { real y = down(1); }")
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Fatal);
    assert!(
        err.message.contains("recursion too deep"),
        "{}",
        err.message
    );
}

#[test]
fn while_break_continue() {
    // Collatz steps of 27 is 111 (a data-dependent count).
    let vals = gq("generated quantities {
        int steps = 0; int n = 27;
        while (n != 1) { if (n % 2 == 0) n = n %/% 2; else n = 3 * n + 1; steps += 1; }
        int odd_sum = 0;
        for (i in 1:100) { if (i > 10) break; if (i % 2 == 0) continue; odd_sum += i; }
      }")
    .unwrap();
    assert_eq!(value(&vals, "steps"), Value::Int(111));
    assert_eq!(value(&vals, "odd_sum"), Value::Int(25));
}

#[test]
fn integer_division_truncates_toward_zero_and_overflow_errors() {
    let vals = gq("generated quantities { int a = -7 %/% 2; int b = -7 % 2; int c = 7 / 2; real d = 7.0 / 2; }").unwrap();
    assert_eq!(value(&vals, "a"), Value::Int(-3));
    assert_eq!(value(&vals, "b"), Value::Int(-1));
    assert_eq!(value(&vals, "c"), Value::Int(3));
    assert_eq!(real(&value(&vals, "d")), 3.5);
    let err =
        gq("generated quantities { int big = 2147483647; int x = big * big * big; }").unwrap_err();
    assert!(err.message.contains("overflow"), "{}", err.message);
}

#[test]
fn multi_indexing_and_slices() {
    let vals = gq("generated quantities {
        vector[5] v = [1, 2, 3, 4, 5]';
        array[3] int idx = {5, 1, 3};
        vector[3] picked = v[idx];
        vector[2] tail2 = v[4:];
        vector[3] mid = v[2:4];
        matrix[2, 3] m = [[1, 2, 3], [4, 5, 6]];
        row_vector[3] r2 = m[2];
        vector[2] c3 = m[:, 3];
        matrix[2, 2] sub = m[1:2, {3, 1}];
        real m23 = m[2, 3];
        v[{1, 2}] = [10, 20]';
      }")
    .unwrap();
    assert_eq!(reals(&value(&vals, "picked")), [5.0, 1.0, 3.0]);
    assert_eq!(reals(&value(&vals, "tail2")), [4.0, 5.0]);
    assert_eq!(reals(&value(&vals, "mid")), [2.0, 3.0, 4.0]);
    assert_eq!(reals(&value(&vals, "r2")), [4.0, 5.0, 6.0]);
    assert_eq!(reals(&value(&vals, "c3")), [3.0, 6.0]);
    // column-major: [[3, 1], [6, 4]]
    assert_eq!(reals(&value(&vals, "sub")), [3.0, 6.0, 1.0, 4.0]);
    assert_eq!(real(&value(&vals, "m23")), 6.0);
    assert_eq!(reals(&value(&vals, "v")), [10.0, 20.0, 3.0, 4.0, 5.0]);
}

#[test]
fn index_out_of_range_names_index_and_size() {
    let err = gq("generated quantities { vector[3] v = [1, 2, 3]'; real x = v[4]; }").unwrap_err();
    assert_eq!(err.kind, ErrorKind::IndexOutOfRange);
    assert!(
        err.message.contains("index 4") && err.message.contains("between 1 and 3"),
        "{}",
        err.message
    );
    assert!(err.span.is_some());
}

#[test]
fn tuple_unpacking() {
    let vals = gq(
        "functions { tuple(real, int) pair(real x) { return (2 * x, 7); } }
        generated quantities { real a; int b; (a, b) = pair(1.5); real c = pair(2).1; }",
    )
    .unwrap();
    assert_eq!(real(&value(&vals, "a")), 3.0);
    assert_eq!(value(&vals, "b"), Value::Int(7));
    assert_eq!(real(&value(&vals, "c")), 4.0);
}

#[test]
fn matrix_products_and_reductions() {
    let vals = gq("generated quantities {
        matrix[2, 2] a = [[1, 2], [3, 4]];
        vector[2] x = [5, 6]';
        vector[2] ax = a * x;
        row_vector[2] xa = x' * a;
        real xx = x' * x;
        matrix[2, 2] aa = a * a;
        vector[2] sol = a \\ ax;
        real ld = log_determinant(a);
        real s = sum(a);
        real mn = mean(x);
        real vr = variance([1, 2, 3, 4]');
        real lse = log_sum_exp([1, 2]');
        int isum = sum({1, 2, 3});
        matrix[2, 2] l = cholesky_decompose([[4, 2], [2, 3]]);
        vector[2] sm = softmax([0, log(3)]');
      }")
    .unwrap();
    assert_eq!(reals(&value(&vals, "ax")), [17.0, 39.0]);
    assert_eq!(reals(&value(&vals, "xa")), [23.0, 34.0]);
    assert_eq!(real(&value(&vals, "xx")), 61.0);
    assert_eq!(reals(&value(&vals, "aa")), [7.0, 15.0, 10.0, 22.0]);
    let sol = reals(&value(&vals, "sol"));
    assert!((sol[0] - 5.0).abs() < 1e-12 && (sol[1] - 6.0).abs() < 1e-12);
    assert!((real(&value(&vals, "ld")) - 2f64.ln()).abs() < 1e-12);
    assert_eq!(real(&value(&vals, "s")), 10.0);
    assert_eq!(real(&value(&vals, "mn")), 5.5);
    assert!((real(&value(&vals, "vr")) - 5.0 / 3.0).abs() < 1e-12);
    assert!((real(&value(&vals, "lse")) - (1f64.exp() + 2f64.exp()).ln()).abs() < 1e-12);
    assert_eq!(value(&vals, "isum"), Value::Int(6));
    let l = reals(&value(&vals, "l"));
    assert!((l[0] - 2.0).abs() < 1e-12 && (l[1] - 1.0).abs() < 1e-12 && l[2] == 0.0);
    assert!((l[3] - 2f64.sqrt()).abs() < 1e-12);
    let sm = reals(&value(&vals, "sm"));
    assert!((sm[0] - 0.25).abs() < 1e-12 && (sm[1] - 0.75).abs() < 1e-12);
}

#[test]
fn print_collects_output() {
    let m = model("generated quantities { print(\"x=\", 1 + 2); }", "{}").unwrap();
    let draw = m.generated_quantities(&[], Rng::new(1, 0, 0)).unwrap();
    assert_eq!(draw.output, ["x=3"]);
}

#[test]
fn reject_is_a_rejection_with_message() {
    let m = model(
        "parameters { real x; } model { if (x > 1) reject(\"too big: \", x); x ~ normal(0, 1); }",
        "{}",
    )
    .unwrap();
    assert!(m.log_density(&[0.5], true).is_ok());
    let err = m.log_density(&[2.0], true).unwrap_err();
    assert!(err.is_rejection());
    assert_eq!(err.message, "too big: 2");
}

#[test]
fn negative_scale_is_a_domain_error() {
    let m = model("parameters { real x; } model { x ~ normal(0, x); }", "{}").unwrap();
    let err = m.log_density(&[-1.0], true).unwrap_err();
    assert!(err.is_rejection(), "{err:?}");
    assert!(m.log_density(&[1.0], true).unwrap().is_finite());
}

#[test]
fn data_errors_name_the_variable() {
    let src = "data { int<lower=0> N; vector<lower=0>[N] y; } parameters { real mu; } model { y ~ normal(mu, 1); }";
    let err = model(src, r#"{"N": 2, "y": [1.0]}"#).err().unwrap();
    assert_eq!(err.kind, ErrorKind::Data);
    assert!(err.message.contains('y'), "{}", err.message);
    let err = model(src, r#"{"N": 2, "y": [1.0, -1.0]}"#).err().unwrap();
    assert!(err.message.contains("y[2]"), "{}", err.message);
    let err = model(src, r#"{"N": -1, "y": []}"#).err().unwrap();
    assert!(err.message.contains("N"), "{}", err.message);
}

#[test]
fn log_density_matches_closed_form_with_jacobian() {
    // sigma ~ exponential(2) on sigma = exp(u): lp = log 2 - 2 sigma, + u.
    let m = model(
        "parameters { real<lower=0> sigma; } model { target += exponential_lpdf(sigma | 2); }",
        "{}",
    )
    .unwrap();
    let u = 0.3f64;
    let s = u.exp();
    assert!((m.log_density(&[u], false).unwrap() - (2f64.ln() - 2.0 * s)).abs() < 1e-14);
    assert!((m.log_density(&[u], true).unwrap() - (2f64.ln() - 2.0 * s + u)).abs() < 1e-14);
    // bounds given by data and by an earlier parameter
    let m = model("data { real lo; } parameters { real<lower=lo> a; real<lower=a, upper=a + 2> b; } model { }", r#"{"lo": 1.5}"#).unwrap();
    let c = m.constrain(&[0.0, 0.0]).unwrap();
    assert_eq!(real(&c[0].1), 2.5);
    assert_eq!(real(&c[1].1), 3.5);
    assert_eq!(m.unconstrained_names(), ["a", "b"]);
}

#[test]
fn unconstrained_layout_names_follow_stan_order() {
    let m = model(
        "parameters { matrix[2, 2] S; array[2] vector[2] v; simplex[3] s; } model { }",
        "{}",
    )
    .unwrap();
    assert_eq!(m.num_unconstrained(), 4 + 4 + 2);
    assert_eq!(
        m.unconstrained_names(),
        [
            "S[1,1]", "S[2,1]", "S[1,2]", "S[2,2]", "v[1,1]", "v[1,2]", "v[2,1]", "v[2,2]", "s[1]",
            "s[2]"
        ]
    );
}

#[test]
fn tuple_components_are_checked_against_their_constraints() {
    let m = model(
        "parameters { real x; }
         transformed parameters {
           tuple(real<lower=0>, real<lower=1>) t = (x, 2.0);
           array[2] tuple(real, real<upper=0>) a = {(x, -1.0), (1.0, -x * x)};
         }
         model { }",
        "{}",
    )
    .unwrap();
    assert!(m.log_density(&[1.5], true).is_ok());
    let err = m.log_density(&[-1.0], true).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Constraint);
    assert!(
        err.message.contains("t.1") && err.message.contains("greater than or equal to 0"),
        "{}",
        err.message
    );
    // x = 0: `t.1` holds, `a[2].2` = -0.0 <= 0 holds too.
    assert!(m.log_density(&[0.0], true).is_ok());
    let m = model(
        "parameters { real x; }
         transformed parameters { array[2] tuple(real, real<upper=0>) a = {(x, -1.0), (1.0, x)}; }
         model { }",
        "{}",
    )
    .unwrap();
    let err = m.log_density(&[0.5], true).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Constraint);
    assert!(err.message.contains("a[2].2"), "{}", err.message);
}

#[test]
fn transformed_parameter_constraint_is_checked() {
    let m = model(
        "parameters { real x; } transformed parameters { real<lower=0> y = x; } model { }",
        "{}",
    )
    .unwrap();
    assert!(m.log_density(&[1.0], true).is_ok());
    let err = m.log_density(&[-1.0], true).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Constraint);
    assert!(err.message.contains('y'), "{}", err.message);
}

#[test]
fn structured_data_constraints_are_checked() {
    let src = "data { simplex[3] s; cov_matrix[2] S; } parameters { real x; } model { x ~ normal(0, 1); }";
    let good = r#"{"s": [0.2, 0.3, 0.5], "S": [[2, 1], [1, 2]]}"#;
    assert!(model(src, good).is_ok());
    let err = model(src, r#"{"s": [0.2, 0.3, 0.6], "S": [[2, 1], [1, 2]]}"#)
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Data);
    assert!(
        err.message.contains("`s`") && err.message.contains("simplex"),
        "{}",
        err.message
    );
    let err = model(src, r#"{"s": [0.2, 0.3, 0.5], "S": [[2, 1], [0, 2]]}"#)
        .err()
        .unwrap();
    assert!(err.message.contains("`S`"), "{}", err.message);
    let err = model(src, r#"{"s": [0.2, 0.8], "S": [[2, 1], [1, 2]]}"#)
        .err()
        .unwrap();
    assert!(err.message.contains('s'), "{}", err.message);
}

#[test]
fn int_data_must_be_int() {
    let src = "data { int N; } parameters { real x; } model { x ~ normal(0, 1); }";
    let err = model(src, r#"{"N": 2.5}"#).err().unwrap();
    assert_eq!(err.kind, ErrorKind::Data);
    assert!(err.message.contains('N'), "{}", err.message);
}

#[test]
fn unconstrain_inverts_constrain() {
    let src = "parameters { real<lower=0> s; simplex[3] p; cholesky_factor_corr[3] L; array[2] real<lower=-1, upper=2> u; } model { }";
    let m = model(src, "{}").unwrap();
    let theta: Vec<f64> = (0..m.num_unconstrained())
        .map(|i| 0.1 * i as f64 - 0.3)
        .collect();
    let values = m.constrain(&theta).unwrap();
    let json: Vec<String> = values
        .iter()
        .map(|(name, v)| format!("\"{name}\": {}", to_json(v)))
        .collect();
    let back = m
        .unconstrain(&DataFile::parse(&format!("{{{}}}", json.join(", "))).unwrap())
        .unwrap();
    for (a, b) in back.iter().zip(&theta) {
        assert!((a - b).abs() < 1e-10, "{back:?} vs {theta:?}");
    }
}

/// Stan JSON of a value (matrices as arrays of rows).
fn to_json(v: &Value) -> String {
    let list = |items: Vec<String>| format!("[{}]", items.join(", "));
    match v {
        Value::Int(i) => i.to_string(),
        Value::Real(x) => format!("{x:e}"),
        Value::Vector(x) | Value::RowVector(x) => {
            list(x.iter().map(|x| format!("{x:e}")).collect())
        }
        Value::Matrix { rows, cols, data } => list(
            (0..*rows)
                .map(|i| {
                    list(
                        (0..*cols)
                            .map(|j| format!("{:e}", data[j * rows + i]))
                            .collect(),
                    )
                })
                .collect(),
        ),
        Value::Array(items) => list(items.iter().map(to_json).collect()),
        other => panic!("no JSON for {other:?}"),
    }
}

fn lgamma(x: f64) -> f64 {
    // exact for the small integers used below
    (1..(x as i64)).map(|k| (k as f64).ln()).sum()
}

#[test]
fn more_densities_match_closed_forms() {
    let vals = gq("generated quantities {
        real u_in = uniform_lpdf(0.3 | 0, 2);
        real u_out = uniform_lpdf(3 | 0, 2);
        real lg = logistic_lpdf(1.2 | 0.5, 2);
        real wb = weibull_lpdf(1.5 | 2, 3);
        real cat1 = categorical_lpmf(2 | [0.2, 0.5, 0.3]');
        real cat2 = categorical_lpmf({1, 3} | [0.2, 0.5, 0.3]');
        real catl = categorical_logit_lpmf(2 | [1, 2, 3]');
        real catl2 = categorical_logit_lpmf({2, 3} | [1, 2, 3]');
        real dir = dirichlet_lpdf([0.2, 0.3, 0.5]' | [2, 3, 4]');
        real glm = bernoulli_logit_glm_lpmf({1, 0} | [[1, 2], [3, 4]], 0.5, [0.1, -0.2]');
      }")
    .unwrap();
    let close = |name: &str, expected: f64| {
        let got = real(&value(&vals, name));
        assert!(
            (got - expected).abs() < 1e-12 * expected.abs().max(1.0),
            "{name}: {got} vs {expected}"
        );
    };
    close("u_in", -(2f64.ln()));
    assert_eq!(real(&value(&vals, "u_out")), f64::NEG_INFINITY);
    let z: f64 = 0.35;
    close("lg", -z - 2.0 * (-z).exp().ln_1p() - 2f64.ln());
    close("wb", 2f64.ln() + 1.5f64.ln() - 2.0 * 3f64.ln() - 0.25);
    close("cat1", 0.5f64.ln());
    close("cat2", 0.2f64.ln() + 0.3f64.ln());
    let lse = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
    close("catl", 2.0 - lse);
    close("catl2", 5.0 - 2.0 * lse);
    close(
        "dir",
        lgamma(9.0) - lgamma(2.0) - lgamma(3.0) - lgamma(4.0)
            + 0.2f64.ln()
            + 2.0 * 0.3f64.ln()
            + 3.0 * 0.5f64.ln(),
    );
    let inv_logit = |x: f64| 1.0 / (1.0 + (-x).exp());
    close("glm", inv_logit(0.2).ln() + (1.0 - inv_logit(0.0)).ln());
}

#[test]
fn lkj_corr_cholesky_kernel() {
    let m = model(
        "parameters { cholesky_factor_corr[3] L; } model { L ~ lkj_corr_cholesky(2.5); }",
        "{}",
    )
    .unwrap();
    let kernel = |theta: &[f64]| {
        let l = reals(&m.constrain(theta).unwrap()[0].1);
        // column-major 3×3: L[2,2] = l[4], L[3,3] = l[8]
        (1.0 + 3.0) * l[4].ln() + 3.0 * l[8].ln()
    };
    let a = [0.1, -0.4, 0.7];
    let b = [-0.3, 0.2, 0.5];
    let ours = m.log_density(&b, false).unwrap() - m.log_density(&a, false).unwrap();
    assert!((ours - (kernel(&b) - kernel(&a))).abs() < 1e-12);
}

#[test]
fn user_lp_void_functions_and_jacobian_statement() {
    let src = "functions {
        void add_prior_lp(real x) { target += -0.5 * x^2; }
        real twice(real x) { return 2 * x; }
      }
      parameters { real x; }
      transformed parameters { real y = twice(x); jacobian += log(2); }
      model { add_prior_lp(y); }";
    let m = model(src, "{}").unwrap();
    let x = 0.7;
    let base = -0.5 * (2.0f64 * x).powi(2);
    assert!((m.log_density(&[x], false).unwrap() - base).abs() < 1e-14);
    assert!((m.log_density(&[x], true).unwrap() - (base + 2f64.ln())).abs() < 1e-14);
}

#[test]
fn fatal_error_stops_and_is_not_a_rejection() {
    let m = model(
        "parameters { real x; } model { if (x > 0) fatal_error(\"bad x\"); }",
        "{}",
    )
    .unwrap();
    let err = m.log_density(&[1.0], true).unwrap_err();
    assert!(!err.is_rejection());
    assert_eq!(err.message, "bad x");
}

#[test]
fn multi_normal_matches_closed_form() {
    // y − μ = (1, −1), Σ = [[2, 0.5], [0.5, 1]]: det 1.75, Σ⁻¹ = [[1, −0.5], [−0.5, 2]] / 1.75
    let vals = gq("generated quantities {
        real a = multi_normal_lpdf([1, 0]' | [0, 1]', [[2, 0.5], [0.5, 1]]);
        real b = multi_normal_cholesky_lpdf([1, 0]' | [0, 1]', cholesky_decompose([[2, 0.5], [0.5, 1]]));
      }")
    .unwrap();
    let quad = (1.0 + 1.0 + 2.0) / 1.75;
    let expected = -0.5 * quad - 0.5 * 1.75f64.ln() - (2.0 * std::f64::consts::PI).ln();
    for name in ["a", "b"] {
        let got = real(&value(&vals, name));
        assert!(
            (got - expected).abs() < 1e-12,
            "{name}: {got} vs {expected}"
        );
    }
    let err = gq(
        "generated quantities { real a = multi_normal_lpdf([1, 0]' | [0, 1]', [[1, 2], [2, 1]]); }",
    )
    .unwrap_err();
    assert!(err.is_rejection(), "{err:?}");
}

#[test]
fn traced_log_density_keeps_prints_and_data_is_readable() {
    let m = model(
        "data { int N; } transformed data { int M = 2 * N; } parameters { real x; } model { print(\"x=\", x); x ~ normal(0, 1); }",
        r#"{"N": 3}"#,
    )
    .unwrap();
    let (lp, out) = m.log_density_traced(&[0.5], true);
    assert!((lp.unwrap() + 0.125).abs() < 1e-14);
    assert_eq!(out, ["x=0.5"]);
    assert_eq!(m.data_value("M"), Some(&Value::Int(6)));
}

#[test]
fn multi_normal_of_an_array_sums_the_vectors() {
    let vals = gq("generated quantities {
        matrix[2, 2] L = cholesky_decompose([[2, 0.5], [0.5, 1]]);
        array[3] vector[2] y = {[1, 0]', [0.5, -1]', [2, 2]'};
        vector[2] mu = [0, 1]';
        array[3] vector[2] mus = {[0, 1]', [1, 1]', [-1, 0]'};
        real joint = multi_normal_cholesky_lpdf(y | mu, L);
        real each = multi_normal_cholesky_lpdf(y[1] | mu, L) + multi_normal_cholesky_lpdf(y[2] | mu, L)
                    + multi_normal_cholesky_lpdf(y[3] | mu, L);
        real joint2 = multi_normal_lpdf(y | mus, [[2, 0.5], [0.5, 1]]);
        real each2 = multi_normal_cholesky_lpdf(y[1] | mus[1], L) + multi_normal_cholesky_lpdf(y[2] | mus[2], L)
                    + multi_normal_cholesky_lpdf(y[3] | mus[3], L);
      }")
    .unwrap();
    for (a, b) in [("joint", "each"), ("joint2", "each2")] {
        let (x, y) = (real(&value(&vals, a)), real(&value(&vals, b)));
        assert!((x - y).abs() < 1e-12, "{a} {x} vs {b} {y}");
    }
}

#[test]
fn further_densities_match_closed_forms() {
    let vals = gq("generated quantities {
        real nb = neg_binomial_2_lpmf(3 | 2.5, 1.5);
        real nbl = neg_binomial_2_log_lpmf(3 | log(2.5), 1.5);
        real de = double_exponential_lpdf(1.5 | 0.5, 2);
        real chi = chi_square_lpdf(1.5 | 3);
        real ichi = inv_chi_square_lpdf(1.5 | 3);
        real sichi = scaled_inv_chi_square_lpdf(1.5 | 3, 0.5);
        real gb = gumbel_lpdf(1.5 | 0.5, 2);
        real ry = rayleigh_lpdf(1.5 | 2);
        real pa = pareto_lpdf(3 | 1.5, 2);
        real pa_out = pareto_lpdf(1 | 1.5, 2);
        real bb = beta_binomial_lpmf(2 | 5, 2, 3);
        real sn = skew_normal_lpdf(1.5 | 0.5, 2, 0);
        real pglm = poisson_log_glm_lpmf({1, 4} | [[1, 2], [3, 4]], 0.5, [0.1, -0.2]');
        int ch = choose(7, 3);
      }")
    .unwrap();
    let close = |name: &str, expected: f64| {
        let got = real(&value(&vals, name));
        assert!(
            (got - expected).abs() < 1e-12 * expected.abs().max(1.0),
            "{name}: {got} vs {expected}"
        );
    };
    let ln = f64::ln;
    let lgam = |x: f64| -> f64 { bat_math::scalar::lgamma(x) };
    // NB2: C(n+φ−1, n) (μ/(μ+φ))^n (φ/(μ+φ))^φ
    let (n, mu, phi) = (3.0, 2.5, 1.5);
    let nb = lgam(n + phi) - lgam(n + 1.0) - lgam(phi)
        + n * ln(mu / (mu + phi))
        + phi * ln(phi / (mu + phi));
    close("nb", nb);
    close("nbl", nb);
    close("de", -ln(2.0) - ln(2.0) - 0.5);
    close("chi", -1.5 * ln(2.0) - lgam(1.5) + 0.5 * ln(1.5) - 0.75);
    close(
        "ichi",
        -1.5 * ln(2.0) - lgam(1.5) - 2.5 * ln(1.5) - 0.5 / 1.5,
    );
    close(
        "sichi",
        1.5 * ln(1.5) - lgam(1.5) + 3.0 * ln(0.5) - 2.5 * ln(1.5) - 3.0 * 0.25 / 3.0,
    );
    close("gb", -ln(2.0) - 0.5 - (-0.5f64).exp());
    close("ry", ln(1.5) - 2.0 * ln(2.0) - 1.5 * 1.5 / 8.0);
    close("pa", ln(2.0) + 2.0 * ln(1.5) - 3.0 * ln(3.0));
    assert_eq!(real(&value(&vals, "pa_out")), f64::NEG_INFINITY);
    let lbeta = |a: f64, b: f64| lgam(a) + lgam(b) - lgam(a + b);
    close("bb", ln(10.0) + lbeta(4.0, 6.0) - lbeta(2.0, 3.0));
    // α = 0: the normal density
    close(
        "sn",
        -0.5 * (2.0 * std::f64::consts::PI).ln() - ln(2.0) - 0.125,
    );
    let eta: [f64; 2] = [0.2, 0.0];
    close(
        "pglm",
        (eta[0] - eta[0].exp()) + (4.0 * eta[1] - eta[1].exp() - ln(24.0)),
    );
    assert_eq!(value(&vals, "ch"), Value::Int(35));
}

#[test]
fn truncated_distributions_and_log_cdfs() {
    // y ~ normal(mu, 1) T[0, ]: kernel −½(y − μ)² − log(1 − Φ(−μ))
    let m = model(
        "data { real y; } parameters { real mu; } model { y ~ normal(mu, 1) T[0, ]; }",
        r#"{"y": 0.5}"#,
    )
    .unwrap();
    let phi = |x: f64| bat_math::scalar::Phi(x);
    let lp = |mu: f64| -0.5 * (0.5 - mu).powi(2) - (1.0 - phi(-mu)).ln();
    let ours = m.log_density(&[0.3], false).unwrap() - m.log_density(&[-0.4], false).unwrap();
    assert!((ours - (lp(0.3) - lp(-0.4))).abs() < 1e-12, "{ours}");
    let below = model(
        "data { real y; } parameters { real mu; } model { y ~ normal(mu, 1) T[0, 2]; }",
        r#"{"y": -0.5}"#,
    )
    .unwrap();
    assert_eq!(below.log_density(&[0.0], false).unwrap(), f64::NEG_INFINITY);
    let two_sided = model(
        "data { real y; } parameters { real mu; } model { y ~ normal(mu, 1) T[0, 2]; }",
        r#"{"y": 0.5}"#,
    )
    .unwrap();
    let lp2 = |mu: f64| -0.5 * (0.5 - mu).powi(2) - (phi(2.0 - mu) - phi(-mu)).ln();
    let ours = two_sided.log_density(&[0.3], false).unwrap()
        - two_sided.log_density(&[-0.4], false).unwrap();
    assert!((ours - (lp2(0.3) - lp2(-0.4))).abs() < 1e-12, "{ours}");

    let vals = gq("generated quantities {
        real n_lcdf = normal_lcdf(1 | 0.5, 2);
        real n_lccdf = normal_lccdf(1 | 0.5, 2);
        real e_lcdf = exponential_lcdf(1.5 | 2);
        real c_lcdf = cauchy_lcdf(1 | 0, 1);
        real t_lcdf = student_t_lcdf(0.7 | 3, 0.2, 1.5);
        real t_lccdf = student_t_lccdf(0.7 | 3, 0.2, 1.5);
        real g_lcdf = gamma_lcdf(1.5 | 2, 3);
        real g_lccdf = gamma_lccdf(1.5 | 2, 3);
      }")
    .unwrap();
    let get = |n: &str| real(&value(&vals, n));
    assert!((get("n_lcdf") - phi(0.25).ln()).abs() < 1e-14);
    assert!((get("n_lccdf") - phi(-0.25).ln()).abs() < 1e-14);
    assert!((get("e_lcdf") - (1.0 - (-3f64).exp()).ln()).abs() < 1e-14);
    assert!((get("c_lcdf") - 0.75f64.ln()).abs() < 1e-14);
    // complementary tails add up to one
    assert!((get("t_lcdf").exp() + get("t_lccdf").exp() - 1.0).abs() < 1e-12);
    assert!((get("g_lcdf").exp() + get("g_lccdf").exp() - 1.0).abs() < 1e-12);
    // gamma(2, 3) cdf at 1.5: 1 − e^{−4.5}(1 + 4.5)
    assert!((get("g_lcdf") - (1.0 - (-4.5f64).exp() * 5.5).ln()).abs() < 1e-12);
}

#[test]
fn truncated_mass_functions_renormalise_over_the_integers() {
    // y ~ poisson(λ) T[1, ]: log p(y) − log(1 − e^{−λ})
    let m = model("data { int y; } parameters { real<lower=0> lambda; } model { y ~ poisson(lambda) T[1, ]; }", r#"{"y": 2}"#).unwrap();
    let kernel = |l: f64| 2.0 * l.ln() - l - (1.0 - (-l).exp()).ln();
    let (a, b) = (0.3f64, -0.2f64);
    let ours = m.log_density(&[a], false).unwrap() - m.log_density(&[b], false).unwrap();
    assert!(
        (ours - (kernel(a.exp()) - kernel(b.exp()))).abs() < 1e-12,
        "{ours}"
    );
    // T[1, 3]: the mass of {1, 2, 3}
    let m = model("data { int y; } parameters { real<lower=0> lambda; } model { y ~ poisson(lambda) T[1, 3]; }", r#"{"y": 2}"#).unwrap();
    let kernel = |l: f64| 2.0 * l.ln() - l - (l * (-l).exp() * (1.0 + l / 2.0 + l * l / 6.0)).ln();
    let ours = m.log_density(&[a], false).unwrap() - m.log_density(&[b], false).unwrap();
    assert!(
        (ours - (kernel(a.exp()) - kernel(b.exp()))).abs() < 1e-12,
        "{ours}"
    );
    let vals = gq("generated quantities { real c = neg_binomial_2_lcdf(2 | 3, 1.5); real cc = neg_binomial_2_lccdf(2 | 3, 1.5); }").unwrap();
    let (c, cc) = (real(&value(&vals, "c")), real(&value(&vals, "cc")));
    assert!((c.exp() + cc.exp() - 1.0).abs() < 1e-12);
    // P(N ≤ 2) summed from the mass function
    let lg = bat_math::scalar::lgamma;
    let pmf = |n: f64| {
        (lg(n + 1.5) - lg(n + 1.0) - lg(1.5) + n * (3.0f64 / 4.5).ln() + 1.5 * (1.5f64 / 4.5).ln())
            .exp()
    };
    assert!((c.exp() - (pmf(0.0) + pmf(1.0) + pmf(2.0))).abs() < 1e-12);
}

/// A matrix product sums its terms in order from 0 with one rounding per
/// term (`s = a.mul_add(b, s)`), as every backend's product kernel does:
/// `-1 + (1 + 2⁻³⁰)(1 − 2⁻³⁰)` is `-2⁻⁶⁰` fused, `0` with the product
/// rounded first (to 1) — for a row vector times a vector, a matrix times a
/// vector, a row vector times a matrix and a matrix times a matrix.
#[test]
fn matrix_products_round_once_per_term() {
    let vals = gq("generated quantities {
          real e = 2.0 ^ -30;
          row_vector[2] x = [-1, 1 + e];
          vector[2] y = [1, 1 - e]';
          real rv = x * y;
          vector[1] mv = to_matrix(x) * y;
          row_vector[1] rm = x * to_matrix(y);
          matrix[1, 1] mm = to_matrix(x) * to_matrix(y);
        }")
    .unwrap();
    let fused = -(2f64.powi(-60));
    assert_eq!(real(&value(&vals, "rv")), fused);
    for name in ["mv", "rm", "mm"] {
        assert_eq!(reals(&value(&vals, name)), vec![fused], "{name}");
    }
}
