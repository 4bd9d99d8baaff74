//! The native executor ([`NativeGradient`]: the generated code compiled
//! with g++ for the host and run in-process) against backend-cpu's
//! batched executor, lane by lane, bit for bit (IEEE arithmetic without
//! contracted multiply-adds — a matrix product's explicit `fma` per term
//! is the interpreter's `mul_add` —, and the same function implementations on
//! both sides: the C library's, or bat-math's branch-free `exp`/`log1p`
//! that the generated prelude reproduces operation for operation): a
//! representative set of examples and posteriordb models, failing lanes,
//! AD stacks that grow, and results that do not depend on the batch.

mod common;

use common::lanes::{Case, case_from, check_lane, load, reference, theta};
use std::path::PathBuf;

use backend_native::gradient::NativeGradient;
use runtime::ErrorKind;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus_model(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/corpus"))
        .join("posteriordb")
        .join(name);
    (dir.join("model.stan"), dir.join("data.json"))
}

fn example(name: &str) -> (PathBuf, PathBuf) {
    let path = repo_root().join("examples").join(format!("{name}.bat"));
    (path.clone(), path.with_extension("data.json"))
}

/// Lanes 0..k at their points (`theta(n, lane, seed)`), as the executor's
/// `[coordinate][lane]` columns.
fn columns(n: usize, lanes: &[usize], seed: u64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let points: Vec<Vec<f64>> = lanes.iter().map(|&l| theta(n, l, seed)).collect();
    let flat = (0..n)
        .flat_map(|c| points.iter().map(move |p| p[c]))
        .collect();
    (points, flat)
}

/// Evaluate `points` natively and on backend-cpu, check every lane, return
/// the native results.
fn compare(
    name: &str,
    case: &Case,
    native: &mut NativeGradient,
    points: &[Vec<f64>],
    jacobian: bool,
) -> Vec<codegen::gradient::LaneGradient> {
    let n = case.model.num_unconstrained();
    let k = points.len();
    let flat: Vec<f64> = (0..n)
        .flat_map(|c| points.iter().map(move |p| p[c]))
        .collect();
    let got = native
        .log_density_gradient_columns(&flat, k, jacobian)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let want = reference(case)
        .unwrap()
        .log_density_gradient(points, jacobian)
        .unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let at = format!("{name}: lane {i} (jacobian {jacobian})");
        check_lane(&at, g, w).unwrap_or_else(|e| panic!("{e}"));
        // On the CPU the compiled code is the same arithmetic as
        // backend-cpu's, function for function: the same bits (which the
        // native sampler's bit-for-bit draws rest on).
        if let (Ok((lp, grad)), Ok((lp0, grad0))) = (g, w) {
            let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            assert!(
                same(*lp, *lp0),
                "{at}: lp {lp:e} is not backend-cpu's {lp0:e} bit for bit"
            );
            for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                assert!(
                    same(*a, *b),
                    "{at}: gradient[{k}] {a:e} is not backend-cpu's {b:e} bit for bit"
                );
            }
        }
    }
    got
}

/// Scalars and vectors, AD stacks, loops with `break`/`continue`, recursive
/// user functions and a while loop whose trips differ by lane, GEMMs over
/// data matrices, bounds of every kind, a Gaussian process (Cholesky,
/// triangular solves) and ODE solves — bit for bit.
#[test]
fn native_gradients_equal_backend_cpu_lane_by_lane() {
    let models = [
        (
            "eight_schools_noncentered",
            example("eight_schools_noncentered"),
        ),
        ("loop_jumps", example("loop_jumps")),
        ("recursion_while", example("recursion_while")),
        (
            "correlated_gaussian_100",
            example("correlated_gaussian_100"),
        ),
        (
            "kidiq-kidscore_interaction",
            corpus_model("kidiq-kidscore_interaction"),
        ),
        ("sblrc-blr", corpus_model("sblrc-blr")),
        ("gp_pois_regr-gp_regr", corpus_model("gp_pois_regr-gp_regr")),
        (
            "hudson_lynx_hare-lotka_volterra",
            corpus_model("hudson_lynx_hare-lotka_volterra"),
        ),
    ];
    const LANES: usize = 40;
    for (name, (model, data)) in models {
        let case = load(name, &model, &data).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut native = NativeGradient::new(&case.cfg, case.model.clone(), LANES)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = case.model.num_unconstrained();
        let lanes: Vec<usize> = (0..LANES).collect();
        for (seed, jacobian) in [(11, true), (12, false)] {
            let (points, _) = columns(n, &lanes, seed);
            let got = compare(name, &case, &mut native, &points, jacobian);
            assert!(got.iter().any(Result::is_ok), "{name}: every lane failed");
        }
    }
}

/// The special functions whose implementations the two sides must share
/// (the C library's `lgamma`, `erf`, `erfc`, `tgamma`; bat-math's branch-free
/// `exp` under `inv_logit`; the constant √(2π)): each differed in the last
/// bit at some of these points before they were made the same.
#[test]
fn special_functions_give_backend_cpus_bits() {
    let dir = tempfile::tempdir().unwrap();
    let models = [
        (
            "unit_interval",
            "parameters { real<lower=0, upper=1> r; } model { r ~ beta(2, 2); }",
        ),
        (
            "student_t",
            "parameters { real mu; real<lower=0> nu; } model { 1.5 ~ student_t(nu, mu, 2); }",
        ),
        (
            "phi",
            "parameters { real x; } model { target += log(Phi(x)); }",
        ),
        (
            "neg_binomial",
            "parameters { real<lower=0> mu; real<lower=0> phi; } model { 4 ~ neg_binomial_2(mu, phi); }",
        ),
        (
            "beta",
            "parameters { real<lower=0> a; real<lower=0> b; } model { 0.3 ~ beta(a, b); }",
        ),
        (
            "tgamma",
            "parameters { real<lower=0> x; } model { target += log(tgamma(x + 0.5)); }",
        ),
    ];
    const LANES: usize = 300;
    for (name, source) in models {
        let case = case_from(dir.path(), name, source, "{}");
        let mut native = NativeGradient::new(&case.cfg, case.model.clone(), LANES)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = case.model.num_unconstrained();
        let lanes: Vec<usize> = (0..LANES).collect();
        let (points, _) = columns(n, &lanes, 5);
        compare(name, &case, &mut native, &points, true);
    }
}

/// One-sided bounds: the reverse sweep takes exp(x) from the constrained
/// value at a zero bound (`bat_lb_constrain_vjp_at`) and computes it at any
/// other bound — the same bits as backend-cpu either way, for lower and
/// upper bounds, scalars and vectors, bounds that are literals, data or
/// another parameter (whose adjoint the bound then takes).
#[test]
fn one_sided_bounds_give_backend_cpus_bits() {
    let dir = tempfile::tempdir().unwrap();
    let source = "data { real zero; }
parameters {
  real<lower=0> a;
  real<upper=0> b;
  vector<lower=0>[3] c;
  vector<upper=0>[2] d;
  real<lower=-1.5> e;
  real<upper=2> f;
  real<lower=zero> g;
  real<lower=e> h;
  real<upper=f> k;
}
model {
  a ~ gamma(2, 1);
  b ~ normal(-1, 1);
  c ~ exponential(1);
  d ~ normal(-0.5, 2);
  e ~ normal(0, 1);
  f ~ normal(1, 1);
  g ~ lognormal(0, 1);
  h ~ normal(e + 1, 1);
  k ~ normal(f - 1, 1);
}";
    let case = case_from(dir.path(), "one_sided", source, r#"{"zero": 0}"#);
    every_lane_evaluates_as_backend_cpu("one_sided", &case, 200, [21, 22]);
}

/// Softmax, log_softmax, cumulative sums, appends, to_matrix, rows, columns,
/// the norms, crossproducts, quadratic forms, solves, inverses and log
/// determinants, forward and in the reverse sweep: every lane the same
/// bits as backend-cpu.
#[test]
fn stacking_and_softmax_ops_give_backend_cpus_bits() {
    let dir = tempfile::tempdir().unwrap();
    let source = "data { vector[3] x; }
parameters {
  vector[3] v;
  row_vector[2] r;
  matrix[2, 3] m;
  real s;
}
model {
  v ~ normal(0, 1);
  r ~ normal(0, 1);
  to_vector(m) ~ normal(0, 1);
  s ~ normal(0, 1);
  target += dot_product(softmax(v), x) + log_softmax(v + x)[2];
  target += dot_product(cumulative_sum(v), [1, -2, 0.5]') + sum(cumulative_sum(r));
  vector[7] stacked = append_row(append_row(v, s), x);
  target += dot_product(stacked, linspaced_vector(7, -1, 1));
  matrix[3, 3] rows = append_row(m, append_col(r, s));
  target += sum(rows .* [[1, 2, 3], [0.5, 0.1, 2], [-1, 1, 0.25]]);
  matrix[2, 4] cols = append_col(m, [s, r[1]]');
  target += sum(cols) * 0.1 + sum(to_matrix(v, 3, 1)) + sum(to_matrix(m) .* m);
  array[4] real joined = append_array({s, v[1]}, {r[2], 1.5});
  target += dot_product(to_vector(joined), [1, 2, 3, 4]');
  target += dot_product(col(m, 2), r') + sum(row(m, 1)) + norm1(v) + norm2(r);
  matrix[2, 2] mmt = tcrossprod(m);
  matrix[3, 3] mtm = crossprod(m);
  target += sum(mmt .* [[1, 2], [3, 4]]) + sum(mtm) * 0.1;
  target += quad_form(mtm, v) * 0.01 + sum(quad_form(mtm, m')) * 0.01;
  target += sum(quad_form_diag(mtm, exp(v)) .* mtm) * 0.01;
  matrix[3, 3] spd = mtm + diag_matrix(exp(v) + 1);
  target += sum(spd \\ v) + sum((spd \\ mtm) .* mtm) * 0.01;
  // A matrix literal with a parameter in it: rows stored column-major.
  target += sum(r / [[2, s], [0.5, 3]]) + sum(m / spd) * 0.1;
  target += dot_product(col([[2, s], [0.5, 3]], 2), [1, -2]');
  target += log_determinant(spd) + sum(inverse(spd) .* mtm) * 0.1;
  target += sum(multiply_lower_tri_self_transpose(m) .* [[1, 2], [3, 4]]) + sum(multiply_lower_tri_self_transpose(spd));
  // Slices of a matrix (column-major: the row coordinate wraps).
  target += sum(spd[1:2, 2:3] .* [[1, 2], [3, 4]]) + sum(m[:, 2:3] * [1, -1]');
  target += sum(segment(v, 2, 2)) + sum(block(spd, 2, 1, 2, 2) .* mtm[1:2, 2:3]);
}";
    let case = case_from(dir.path(), "stacking", source, r#"{"x": [0.5, -1, 2]}"#);
    every_lane_evaluates_as_backend_cpu("stacking", &case, 64, [31, 32]);
}

/// `lanes` lanes of `case` at points from `seeds` (the Jacobian on at the
/// first, off at the second): every lane evaluates, bit for bit as
/// backend-cpu.
fn every_lane_evaluates_as_backend_cpu(name: &str, case: &Case, lanes: usize, seeds: [u64; 2]) {
    let mut native = NativeGradient::new(&case.cfg, case.model.clone(), lanes).unwrap();
    let n = case.model.num_unconstrained();
    let all: Vec<usize> = (0..lanes).collect();
    for (seed, jacobian) in seeds.into_iter().zip([true, false]) {
        let (points, _) = columns(n, &all, seed);
        let got = compare(name, case, &mut native, &points, jacobian);
        assert!(
            got.iter().all(Result::is_ok),
            "{name}: every lane evaluates"
        );
    }
}

/// `print` in the log density (model block, transformed parameters, a
/// function the model calls): no code when its arguments cannot fail — the
/// same bits as backend-cpu, which evaluates them and drops the line —
/// and refused when one may fail (it would reject the evaluation on the
/// CPU).
#[test]
fn prints_in_the_log_density_change_nothing_or_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let source = "functions {
  real twice(real x) { print(\"twice \", x); return 2 * x; }
}
data { vector[2] v; }
parameters { real mu; real<lower=0> s; }
transformed parameters { real m2 = twice(mu); print(\"m2 = \", m2, \" v \", v); }
model {
  print(\"mu \", mu, \" s \", s, \" target \", target(), \" sum \", exp(mu) + s);
  v ~ normal(m2, s);
}";
    let case = case_from(dir.path(), "prints", source, r#"{"v": [0.5, -1.5]}"#);
    every_lane_evaluates_as_backend_cpu("prints", &case, 50, [31, 32]);
    let failing = source.replace("\" v \", v)", "\" v \", v[3])");
    assert_ne!(failing, source);
    let case = case_from(
        dir.path(),
        "failing_print",
        &failing,
        r#"{"v": [0.5, -1.5]}"#,
    );
    let refused = NativeGradient::new(&case.cfg, case.model.clone(), 1)
        .err()
        .expect("a print that may fail is refused");
    assert!(
        refused
            .to_string()
            .contains("print of a value that may fail"),
        "{refused}"
    );
}

/// A lane's result is the same bits whether it is evaluated alone or among
/// 7 or 64 lanes (with other lanes at other points around it), on one
/// executor or a sibling sharing its compiled program.
#[test]
fn a_lane_gives_the_same_bits_in_any_batch() {
    let (model, data) = example("recursion_while");
    let case = load("recursion_while", &model, &data).unwrap();
    let n = case.model.num_unconstrained();
    let mut native = NativeGradient::new(&case.cfg, case.model.clone(), 64).unwrap();
    let all: Vec<usize> = (0..64).collect();
    let (_, flat) = columns(n, &all, 5);
    let batch = native
        .log_density_gradient_columns(&flat, 64, true)
        .unwrap();
    for k in [1, 7] {
        let mut small = native.sibling(k);
        for start in [0, 20, 57] {
            let lanes: Vec<usize> = (start..start + k).collect();
            let (_, flat) = columns(n, &lanes, 5);
            let got = small.log_density_gradient_columns(&flat, k, true).unwrap();
            for (i, g) in got.iter().enumerate() {
                let (lp, grad) = g.as_ref().unwrap();
                let (lp0, grad0) = batch[start + i].as_ref().unwrap();
                assert_eq!(lp.to_bits(), lp0.to_bits(), "lane {}", start + i);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(grad), bits(grad0), "lane {}", start + i);
            }
        }
    }
}

/// A negative scale rejects the lane (an argument check); an index
/// computed from a parameter is out of range for some lanes; the other
/// lanes go on. Errors have backend-cpu's kind and name the statement.
#[test]
fn lanes_fail_like_backend_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_from(
        dir.path(),
        "failing",
        "data { int N; vector[N] y; }\nparameters { real mu; real s; real k; }\n\
         model { y ~ normal(mu, s); target += y[1 + (k > 1)]; }\n",
        r#"{"N": 1, "y": [0.5]}"#,
    );
    // (mu, s, k): fine; rejected (s < 0); index 2 out of range (k > 1).
    let points = [
        vec![0.1, 1.5, 0.0],
        vec![0.1, -1.0, 0.0],
        vec![0.2, 2.0, 3.0],
        vec![0.3, 0.5, -2.0],
    ];
    let mut native = NativeGradient::new(&case.cfg, case.model.clone(), points.len()).unwrap();
    let got = compare("failing", &case, &mut native, &points, true);
    let kinds: Vec<Option<ErrorKind>> = got
        .iter()
        .map(|r| r.as_ref().err().map(|e| e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            Some(ErrorKind::Rejection),
            Some(ErrorKind::IndexOutOfRange),
            None
        ]
    );
    let err = got[2].as_ref().unwrap_err();
    assert!(
        err.message.contains("index out of range"),
        "{}",
        err.message
    );
    assert!(err.span.is_some());
    // The columns API lists the same failures.
    let flat: Vec<f64> = (0..3)
        .flat_map(|c| points.iter().map(move |p| p[c]))
        .collect();
    let evaluated = native.evaluate_columns(&flat, points.len(), true).unwrap();
    let failed: Vec<usize> = evaluated.failures.iter().map(|(i, _)| *i).collect();
    assert_eq!(failed, [1, 2]);
}

/// The AD stacks are sized from the interpreter at points in (−2, 2); a
/// lane far outside runs its loop many more times, overflows them, and the
/// batch is run again with larger stacks (recompiled), giving backend-cpu's
/// result for every lane.
#[test]
fn stacks_grow_when_a_lane_overflows_them() {
    let dir = tempfile::tempdir().unwrap();
    let case = case_from(
        dir.path(),
        "looping",
        "parameters { real<lower=0> a; }\nmodel {\n  real x = 0;\n  while (x < 10 * a) {\n    x = x + 1 + 0.001 * a;\n  }\n  target += -square(x) / 100 - a;\n}\n",
        "{}",
    );
    let mut native = NativeGradient::new(&case.cfg, case.model.clone(), 3).unwrap();
    let before = native.stack_capacities().to_vec();
    assert!(
        !before.is_empty() && before.iter().all(|&c| c < 200),
        "{before:?}"
    );
    // a = exp(4.5): about 900 trips; exp(0.5): 17.
    let points = [vec![0.5], vec![4.5], vec![-1.0]];
    let got = compare("looping", &case, &mut native, &points, true);
    assert!(got.iter().all(Result::is_ok), "{got:?}");
    let after = native.stack_capacities();
    assert!(
        after.iter().zip(&before).any(|(a, b)| a > b),
        "the stacks did not grow: {before:?} -> {after:?}"
    );
}
