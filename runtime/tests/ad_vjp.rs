//! Derivative rules of the linear-algebra primitives and of user-function
//! calls: each is used in a small model whose gradient program must match
//! central finite differences of the interpreter's log density at random
//! unconstrained points (a seeded property test: 12 points per model).

mod common;

use language::data::DataFile;
use runtime::Model;

/// Check the gradient of `source` (data as JSON) at random points.
fn check(name: &str, source: &str, data: &str) {
    let program = common::compile(source, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let data = DataFile::parse(data).unwrap();
    let model = Model::new(&program, &data).unwrap_or_else(|e| panic!("{name}: {e}"));
    let grad = language::ad::gradient(&program).unwrap_or_else(|ds| {
        panic!(
            "{name}: {}",
            ds.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        )
    });
    let mut rng = fastrand::Rng::with_seed(name.len() as u64 * 7919);
    let n = model.num_unconstrained();
    for point in 0..12 {
        let theta: Vec<f64> = (0..n).map(|_| rng.f64() * 1.6 - 0.8).collect();
        for jacobian in [true, false] {
            let lp = model.log_density(&theta, jacobian).unwrap();
            let (lp_ad, g) = model
                .log_density_gradient(&grad, &theta, jacobian)
                .unwrap_or_else(|e| panic!("{name}: gradient program: {e}"));
            assert!(
                (lp - lp_ad).abs() <= 1e-12 * lp.abs().max(1.0),
                "{name}: lp {lp_ad} vs {lp}"
            );
            for i in 0..n {
                let h = 1e-6;
                let (mut up, mut down) = (theta.clone(), theta.clone());
                up[i] += h;
                down[i] -= h;
                let fd = (model.log_density(&up, jacobian).unwrap()
                    - model.log_density(&down, jacobian).unwrap())
                    / (2.0 * h);
                let tol = 1e-6 * g[i].abs().max(1.0) + 1e-9 * lp.abs().max(1.0);
                assert!(
                    (fd - g[i]).abs() <= tol,
                    "{name}: point {point} (jacobian {jacobian}): d/dθ[{i}] = {}, finite difference {fd}",
                    g[i]
                );
            }
        }
    }
}

/// A 3×3 symmetric positive-definite matrix built from parameters.
const SPD: &str = "
parameters {
  vector[6] z;
}
transformed parameters {
  matrix[3, 3] B = [[1 + z[1], 0, 0], [z[2], 1.5 + z[3], 0], [z[4], z[5], 2 + z[6]]];
  matrix[3, 3] S = B * B' + diag_matrix(rep_vector(0.5, 3));
}
";

fn with_model(extra: &str) -> String {
    format!("{SPD}\nmodel {{\n  z ~ normal(0, 1);\n{extra}\n}}\n")
}

#[test]
fn cholesky_decompose_matches_finite_differences() {
    let src = with_model(
        "  matrix[3, 3] L = cholesky_decompose(S);
  target += sum(L .* [[1, 0, 0], [0.3, -2, 0], [0.7, 1.1, 0.4]]) + log(L[3, 3]);",
    );
    check("cholesky", &src, "{}");
}

#[test]
fn triangular_solves_match_finite_differences() {
    let src = with_model(
        "  matrix[3, 3] L = cholesky_decompose(S);
  vector[3] b = [z[1], 2 * z[2], 0.5]';
  row_vector[3] r = [z[3], 1, -z[4]];
  matrix[3, 2] M = [[z[5], 1], [0.2, z[6]], [1, 1]];
  target += dot_self(mdivide_left_tri_low(L, b));
  target += sum(mdivide_right_tri_low(r, L) .* [1, -1, 2]);
  target += sum(square(mdivide_left_tri_low(B, M)));
  target += sum(mdivide_right_tri_low(M', B));",
    );
    check("triangular_solves", &src, "{}");
}

#[test]
fn general_solves_and_determinants_match_finite_differences() {
    let src = with_model(
        "  vector[3] b = [z[1], 1, z[2]]';
  matrix[3, 2] M = [[z[5], 1], [0.2, z[6]], [1, 1]];
  target += dot_self(mdivide_left(S, b)) + sum(S \\ M);
  target += sum(mdivide_right(M', S) .* [[1, 2, 3], [0.5, -1, 1]]);
  target += log_determinant(S) + 0.1 * log_determinant(B);
  target += sum(inverse(S) .* B);
  target += sum(crossprod(B)) - sum(tcrossprod(B)) * 0.5;
  target += quad_form(S, b) * 0.01 + sum(quad_form(S, M)) * 0.01;
  target += sum(multiply_lower_tri_self_transpose(S)) * 0.1;
  target += prod(b) * 0.1;",
    );
    check("general_solves", &src, "{}");
}

#[test]
fn gp_exp_quad_cov_matches_finite_differences() {
    let src = "
data {
  int N;
  array[N] real x;
  array[N] vector[2] xv;
  vector[N] y;
}
parameters {
  real<lower=0> alpha;
  real<lower=0> rho;
  real<lower=0> sigma;
}
model {
  matrix[N, N] K = gp_exp_quad_cov(x, alpha, rho) + diag_matrix(rep_vector(square(sigma), N));
  matrix[N, N] Kv = gp_exp_quad_cov(xv, alpha, rho);
  y ~ multi_normal_cholesky(rep_vector(0, N), cholesky_decompose(K));
  target += 0.1 * sum(Kv);
}
";
    let data = r#"{"N": 4, "x": [-1.0, 0.3, 0.9, 12.0],
        "xv": [[0, 1], [1, 0.5], [-0.5, 2], [30, 1]], "y": [0.5, -0.2, 1.1, 0.3]}"#;
    check("gp_exp_quad_cov", src, data);
}

#[test]
fn tuple_unpacking_and_tuple_values_match_finite_differences() {
    let src = "
parameters {
  real a;
  vector[2] v;
}
model {
  real x = a;
  vector[2] w = v;
  tuple(real, vector[2], int) packed = (square(a), exp(v), 3);
  (x, w) = (w[2] * x, [x, sin(a)]');
  for (k in 1:2) {
    (x, w[k]) = (w[k] + x, x * packed.1);
  }
  target += normal_lpdf(x | 0, 3) + normal_lpdf(w | packed.2, 2) + packed.3;
  a ~ normal(0, 1);
  v ~ normal(0, 1);
}
";
    check("tuples", src, "{}");
}

#[test]
fn jacobian_increments_match_finite_differences() {
    // A user-written change of variables: `jacobian +=` counts only when
    // the Jacobian is on (checked at both settings).
    let src = "
functions {
  real scaled_jacobian(real u, real s) {
    jacobian += log(s);
    return u * s;
  }
}
parameters {
  real u;
  real<lower=0> s;
}
transformed parameters {
  real x = scaled_jacobian(u, s);
  real y = exp(u);
  jacobian += u;
}
model {
  x ~ normal(1, 2);
  y ~ lognormal(0, 1);
  s ~ gamma(2, 2);
}
";
    check("jacobian", src, "{}");
}

#[test]
fn target_read_inside_a_differentiated_function_is_not_supported() {
    let src = "
functions {
  void peek_lp(real x) {
    target += 1e-3 * tanh(target()) * x;
  }
}
parameters {
  real x;
}
model {
  x ~ normal(0, 1);
  peek_lp(x);
}
";
    let program = common::compile(src, "peek").unwrap();
    let errors = language::ad::gradient(&program).expect_err("target() inside a function");
    assert!(
        errors.iter().any(|d| d.message.contains("`target()`")),
        "{:?}",
        errors.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
}

#[test]
fn appends_and_quad_form_diag_match_finite_differences() {
    let src = with_model(
        "  vector[2] v = [z[1], exp(z[2])]';
  row_vector[3] r = [z[3], 1, z[4]];
  target += sum(quad_form_diag(S, [1, z[5], 2]') .* B);
  target += dot_self(append_row(v, [z[6], 2]')) + sum(append_row(z[1], v) .* [1, 2, 3]');
  target += sum(append_row(v, z[2]) .* [3, 1, -1]') + sum(append_col(r, z[1]) .* [1, 2, 3, 4]);
  target += sum(append_row(B, r) .* append_row(S, [1, 2, 3]));
  target += sum(append_col(S, S[:, 1] * z[5]) .* append_col(B, B[:, 2]));
  target += sum(append_col(B[1:2, :], [z[1], z[2]]') .* [[1, 2, 3, 4], [5, 6, 7, 8]]);
  target += sum(append_row(r, r * 2) .* [[1, 2, 3], [0.5, 0.1, 2]]);",
    );
    check("appends", &src, "{}");
}

#[test]
fn symmetric_eigendecompositions_match_finite_differences() {
    // Sign-invariant uses of the eigenvectors, as in kronecker_gp.
    let src = with_model(
        "  vector[3] lambda = eigenvalues_sym(S);
  matrix[3, 3] Q = eigenvectors_sym(S);
  target += dot_product(lambda, [1, -0.5, 0.25]') + log(lambda[1]);
  target += sum(square(Q) .* [[1, 2, 3], [0.5, -1, 2], [0.1, 0.2, 0.3]]);
  target += quad_form(diag_matrix(exp(-lambda)), Q' * [1, 2, 3]');",
    );
    check("eigen", &src, "{}");
}

#[test]
fn reductions_reshapes_and_matrix_division_match_finite_differences() {
    let src = with_model(
        "  vector[4] v = [z[1], 2 * z[2], z[3] - 1, 0.5]';
  array[3] real xs = {z[4], z[5] * 3, 1.0};
  target += min(v) + 2 * max(v) + min(xs) - max(xs);
  target += variance(v) + sd(xs) + 0.5 * sd(v) + variance(xs);
  target += sum(to_matrix(v, 2, 2) .* [[1, 2], [3, 4]]) + sum(to_matrix(B) .* S);
  target += sum(to_matrix(xs, 1, 3) .* [[1, -2, 3]]) + sum(to_matrix([z[6], 1]) .* [[2, 3]]);
  target += sum((B / S) .* [[1, 2, 3], [3, 4, 5], [0.5, 0.1, 1]]) + sum([z[1], 1, z[2]] / S);",
    );
    check("reductions", &src, "{}");
}

#[test]
fn slices_norms_and_array_appends_match_finite_differences() {
    let src = with_model(
        "  vector[4] v = [z[1], 2 * z[2], z[3] - 1, 0.5]';
  array[2] real xs = {z[4], z[5] * 3};
  target += sum(block(S, 2, 1, 2, 2) .* [[1, 2], [3, 4]]) + dot_product(col(S, 3), [1, -1, 2]');
  target += dot_product(row(B, 2), [0.5, 2, -1]) + norm1(v) + 3 * norm2(v) + norm2(xs);
  array[5] real joined = append_array(xs, {z[6], 1.0, z[1]});
  target += dot_product(to_vector(joined), [1, 2, 3, 4, 5]') + norm1(joined);
  // Not square: the lower triangle of a 2×3 and of a 3×2 matrix.
  target += sum(multiply_lower_tri_self_transpose(B[1:2, :]) .* [[1, 2], [3, 4]]);
  target += sum(multiply_lower_tri_self_transpose(B[:, 2:3]) .* S);",
    );
    check("slices_norms", &src, "{}");
}

#[test]
fn spd_solves_and_determinants_match_finite_differences() {
    let body = "  vector[3] b = [z[1], 1, z[2]]';
  matrix[3, 2] M = [[z[5], 1], [0.2, z[6]], [1, 1]];
  target += dot_self(mdivide_left_spd(S, b)) + sum(mdivide_left_spd(S, M) .* [[1, 2], [3, 4], [5, 6]]);
  target += log_determinant_spd(S);";
    let src = with_model(body);
    check("spd", &src, "{}");
    // The values equal those of the general forms.
    let general = with_model(&body.replace("_spd", ""));
    let data = DataFile::parse("{}").unwrap();
    let spd_model = Model::new(&common::compile(&src, "spd").unwrap(), &data).unwrap();
    let general_model = Model::new(&common::compile(&general, "general").unwrap(), &data).unwrap();
    for k in 0..5 {
        let theta: Vec<f64> = (0..6)
            .map(|i| ((i * 5 + k * 3) % 11) as f64 / 7.0 - 0.7)
            .collect();
        let (a, b) = (
            spd_model.log_density(&theta, true).unwrap(),
            general_model.log_density(&theta, true).unwrap(),
        );
        assert!((a - b).abs() <= 1e-10 * a.abs().max(1.0), "{a} vs {b}");
    }
}

#[test]
fn nested_jumps_match_finite_differences() {
    // break in an inner loop, continue in the outer loop, a return from
    // two loops deep in an `_lp` function, and jumps in transformed
    // parameters; the jumps depend on data only, so the density is smooth.
    let src = "
functions {
  real walk_lp(vector v, int stop) {
    real acc = 0;
    for (i in 1:rows(v)) {
      int j = 0;
      while (1) {
        j += 1;
        if (j > i) {
          break;
        }
        if (j == 2) {
          continue;
        }
        acc += v[i] * v[j];
        target += -0.01 * square(v[j]);
        if (i * j >= stop) {
          return acc;
        }
      }
    }
    return -acc;
  }
}
data {
  int stop;
}
parameters {
  vector[4] v;
}
transformed parameters {
  real partial = 0;
  for (i in 1:4) {
    if (i == 2) {
      continue;
    }
    for (j in i:4) {
      if (j == 4) {
        break;
      }
      partial += v[i] * exp(0.1 * v[j]);
    }
  }
}
model {
  v ~ normal(0, 1);
  target += 0.1 * walk_lp(v, stop) + 0.2 * walk_lp(v, stop + 4) - square(partial) / 20;
  for (n in 1:3) {
    if (n == 2) {
      continue;
    }
    target += walk_lp(v * n, 100) * 0.01;
  }
}
";
    check("nested_jumps", src, r#"{"stop": 6}"#);
}

#[test]
fn functions_returning_tuples_match_finite_differences() {
    let src = "
functions {
  tuple(real, vector, int) moments(vector v, real shift) {
    return (mean(v) + shift, v - shift, rows(v));
  }
  tuple(real, real) split(real x) {
    if (x > 0) {
      return (x, exp(x));
    }
    return (-x, exp(-x));
  }
}
parameters {
  vector[3] v;
  real shift;
}
model {
  tuple(real, vector[3], int) m = moments(v, shift);
  real a;
  real b;
  (a, b) = split(m.1 * 0.5 + 2);
  v ~ normal(0, 1);
  shift ~ normal(0, 1);
  target += m.1 * m.3 + dot_self(m.2) * 0.1 - a * 0.2 + log(b);
}
";
    check("tuple_functions", src, "{}");
}

/// An argument check has no derivative, so the operand it checks gets no
/// adjoint from it. In a branch (whose reverse recomputes its values)
/// `normal_id_glm(X, a, b, 1)` checks its own copy of the mean `a + X * b`,
/// which only the check reads: the reverse sweep must not pay for
/// `Xᵀ * 0` for it (diamonds did, on a 5000 × 24 matrix). The gradient
/// still matches finite differences.
#[test]
fn checked_operands_propagate_no_adjoint() {
    let source = "
        data { matrix[3, 2] X; vector[3] y; int flag; }
        parameters { vector[2] b; real a; }
        model { if (flag) y ~ normal_id_glm(X, a, b, 1); }";
    let data = r#"{"X": [[1, 2], [3, 4], [5, 6]], "y": [0.5, -1, 2], "flag": 1}"#;
    check("checked_operand", source, data);
    let program = common::compile(source, "checked_operand").unwrap();
    let grad = language::ad::gradient(&program).unwrap();
    let printed = language::ad::print_grad_program(&grad);
    let products = printed.matches("multiply(hoisted").count();
    assert_eq!(
        products, 1,
        "one product with Xᵀ (the mean's adjoint), none for the check's copy:\n{printed}"
    );
    // The branch runs once per evaluation, so its reverse reuses the
    // forward's `X * b` (shared by the check and the density) instead of
    // recomputing it.
    let forward_products = printed.matches("multiply(X, b)").count();
    assert_eq!(forward_products, 1, "X * b computed once:\n{printed}");
}

/// Activity reaches nested calls: inside the reverse of `outer` called
/// with data `lam`, the call `spd(lam, s, l)` passes data too, so its
/// reverse is the one for (data, parameter, parameter) and no adjoint of
/// `x` is computed (mcycle_gp's `gpa` → `spd_cov_exp_quad`). Likewise
/// `gp_exp_quad_cov` of points reached through two calls is a covariance
/// of data points (differentiable), not of parameter points. The gradient
/// matches finite differences.
#[test]
fn data_arguments_of_nested_calls_get_no_adjoint() {
    let source = "
        functions {
          vector spd(array[] vector x, real s, vector l) {
            vector[size(x)] out;
            for (m in 1:size(x)) {
              out[m] = square(s) * exp(-0.5 * square(l[1]) * dot_self(x[m]));
            }
            return out;
          }
          vector outer(matrix X, real s, vector l, vector z, array[] vector lam) {
            return X * (sqrt(spd(lam, s, l)) .* z);
          }
          real gpsum(array[] real pts, real a, real r) {
            return sum(gp_exp_quad_cov(pts, a, r));
          }
          real wrap(array[] real pts, real a, real r) {
            // A slice of data is data too.
            return gpsum(pts[1:size(pts)], a, r);
          }
        }
        data { matrix[3, 2] X; array[2] vector[1] lam; array[3] real pts; }
        parameters {
          real<lower=0> s; vector<lower=0>[1] l; vector[2] z; real<lower=0> r;
        }
        model {
          target += normal_lpdf(outer(X, s, l, z, lam) | 0, 1);
          target += 0.01 * wrap(pts, s, r);
          z ~ normal(0, 1);
          s ~ lognormal(0, 1);
          l ~ lognormal(0, 1);
          r ~ lognormal(0, 1);
        }";
    let data = r#"{"X": [[1, 2], [3, 4], [5, 6]], "lam": [[0.3], [1.2]],
                   "pts": [0.1, 0.7, 1.5]}"#;
    check("nested_data_args", source, data);
    let program = common::compile(source, "nested_data_args").unwrap();
    let grad = language::ad::gradient(&program).unwrap();
    let printed = language::ad::print_grad_program(&grad);
    for (wanted, unwanted) in [
        ("outer__rev_01110(", "outer__rev_11111("),
        ("spd__rev_011(", "spd__rev_111("),
        ("gpsum__rev_011(", "gpsum__rev_111("),
    ] {
        assert!(
            printed.contains(wanted) && !printed.contains(unwanted),
            "expected {wanted} and no {unwanted}:\n{printed}"
        );
    }
    assert!(
        !printed.contains("x_adj") && !printed.contains("pts_adj"),
        "no adjoint for the data arguments:\n{printed}"
    );
}
