//! Constraint transforms: round trips, constraint satisfaction, log |J|
//! against the log-determinant of a finite-difference Jacobian (through the
//! coordinate projection Stan's density correction refers to), and the
//! reverse-mode rule against finite differences.

use bat_math::transforms::linalg::{at, cholesky};
use bat_math::transforms::*;
use proptest::prelude::*;

const POOL: usize = 48;

/// J[i][j] = ∂f_i/∂x_j by a fourth-order central difference.
fn fd_jacobian(f: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64]) -> Vec<Vec<f64>> {
    let rows = f(x).len();
    let mut jac = vec![vec![0.0; x.len()]; rows];
    for j in 0..x.len() {
        let h = 1e-4 * x[j].abs().max(1.0);
        let at_step = |d: f64| {
            let mut xs = x.to_vec();
            xs[j] += d;
            f(&xs)
        };
        let (m2, m1, p1, p2) = (at_step(-2.0 * h), at_step(-h), at_step(h), at_step(2.0 * h));
        for i in 0..rows {
            jac[i][j] = (m2[i] - 8.0 * m1[i] + 8.0 * p1[i] - p2[i]) / (12.0 * h);
        }
    }
    jac
}

/// log |det A| by LU decomposition with partial pivoting.
fn log_abs_det(mut a: Vec<Vec<f64>>) -> f64 {
    let n = a.len();
    let mut total = 0.0;
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap();
        a.swap(c, p);
        let pivot = a[c][c];
        total += pivot.abs().ln();
        for r in c + 1..n {
            let factor = a[r][c] / pivot;
            let pivot_row = a[c].clone();
            for (v, p) in a[r][c..].iter_mut().zip(&pivot_row[c..]) {
                *v -= factor * p;
            }
        }
    }
    total
}

/// Which coordinates of y Stan's log |J| is a density correction for.
type Projection = Box<dyn Fn(&[f64]) -> Vec<f64>>;

fn identity() -> Projection {
    Box::new(|y| y.to_vec())
}

/// Keeps the elements at the given (column-major) positions.
fn keep(positions: Vec<usize>) -> Projection {
    Box::new(move |y| positions.iter().map(|&i| y[i]).collect())
}

/// Row-major lower triangle (strict or with diagonal) of a K×K matrix.
fn lower_triangle(k: usize, strict: bool) -> Projection {
    let positions =
        (0..k).flat_map(|i| (0..(if strict { i } else { i + 1 })).map(move |j| at(k, i, j)));
    keep(positions.collect())
}

/// How log |J| is validated.
enum JacobianCheck {
    /// log |J| equals log |det ∂proj(y)/∂x| exactly.
    Exact(Projection),
    /// The transform is linear: log |det| is constant and Stan adds 0.
    ConstantZero(Projection),
    /// Not a Jacobian (unit_vector's radial density): checked separately.
    None,
}

fn check_transform(
    t: &dyn Transform,
    pool: &[f64],
    y_bar_pool: &[f64],
    logj_bar: f64,
    jacobian: JacobianCheck,
    satisfied: &dyn Fn(&[f64]) -> Result<(), String>,
) -> Result<(), TestCaseError> {
    let n = t.unconstrained_len();
    let x = &pool[..n];
    let out = t.constrain(x);
    prop_assert_eq!(out.value.len(), t.constrained_len());
    prop_assert!(out.log_jacobian.is_finite());
    if let Err(e) = satisfied(&out.value) {
        return Err(TestCaseError::fail(format!(
            "{}: constraint not satisfied: {e}",
            t.name()
        )));
    }

    // Round trip.
    let back = t
        .unconstrain(&out.value)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(back.len(), n);
    for (a, b) in back.iter().zip(x) {
        prop_assert!(
            (a - b).abs() <= 1e-7 * b.abs().max(1.0),
            "{}: round trip {:?} -> {:?}",
            t.name(),
            x,
            back
        );
    }

    // Reverse-mode rule against finite differences of ȳ·y + l̄·log|J|.
    let y_bar = &y_bar_pool[..t.constrained_len()];
    let objective = |xs: &[f64]| {
        let c = t.constrain(xs);
        vec![c.value.iter().zip(y_bar).map(|(a, b)| a * b).sum::<f64>() + logj_bar * c.log_jacobian]
    };
    let fd = fd_jacobian(&objective, x);
    let vjp = t.constrain_vjp(x, y_bar, logj_bar);
    prop_assert_eq!(vjp.len(), n);
    for j in 0..n {
        let expected = fd[0][j];
        prop_assert!(
            (vjp[j] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
            "{}: x̄[{}] = {} vs finite difference {}",
            t.name(),
            j,
            vjp[j],
            expected
        );
    }

    // log |J|.
    match jacobian {
        JacobianCheck::Exact(project) => {
            let f = |xs: &[f64]| project(&t.constrain(xs).value);
            let jac = fd_jacobian(&f, x);
            prop_assert_eq!(
                jac.len(),
                n,
                "{}: projection must keep {} coordinates",
                t.name(),
                n
            );
            let expected = if n == 0 { 0.0 } else { log_abs_det(jac) };
            prop_assert!(
                (out.log_jacobian - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                "{}: log|J| = {} but log|det J_fd| = {}",
                t.name(),
                out.log_jacobian,
                expected
            );
        }
        JacobianCheck::ConstantZero(project) => {
            prop_assert_eq!(out.log_jacobian, 0.0);
            let f = |xs: &[f64]| project(&t.constrain(xs).value);
            let here = log_abs_det(fd_jacobian(&f, x));
            let elsewhere: Vec<f64> = x.iter().map(|v| 0.3 - 1.7 * v).collect();
            let there = log_abs_det(fd_jacobian(&f, &elsewhere));
            prop_assert!(
                (here - there).abs() <= 1e-7 * here.abs().max(1.0),
                "{}: |J| not constant",
                t.name()
            );
        }
        JacobianCheck::None => {}
    }
    Ok(())
}

fn ok() -> impl Fn(&[f64]) -> Result<(), String> {
    |_| Ok(())
}

fn sums_to(target: f64, v: &[f64]) -> Result<(), String> {
    let s: f64 = v.iter().sum();
    if (s - target).abs() <= 1e-12 * v.len().max(1) as f64 {
        Ok(())
    } else {
        Err(format!("sum {s}"))
    }
}

fn pools() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, f64)> {
    (
        prop::collection::vec(-2.0..2.0f64, POOL),
        prop::collection::vec(-1.0..1.0f64, POOL),
        -1.0..1.0f64,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn scalar_bounds((pool, ybar, lb_) in pools(), len in 0..6usize, lb in -3.0..3.0f64, width in 0.1..5.0f64) {
        let y_ok = move |lo: f64, hi: f64| move |y: &[f64]| {
            if y.iter().all(|v| *v > lo && *v < hi) { Ok(()) } else { Err(format!("{y:?} outside ({lo}, {hi})")) }
        };
        let exact = || JacobianCheck::Exact(identity());
        check_transform(&Lower { lb, len }, &pool, &ybar, lb_, exact(), &y_ok(lb, f64::INFINITY))?;
        check_transform(&Upper { ub: lb, len }, &pool, &ybar, lb_, exact(), &y_ok(f64::NEG_INFINITY, lb))?;
        check_transform(&LowerUpper { lb, ub: lb + width, len }, &pool, &ybar, lb_, exact(), &y_ok(lb, lb + width))?;
        check_transform(&LowerUpper { lb, ub: f64::INFINITY, len }, &pool, &ybar, lb_, exact(), &y_ok(lb, f64::INFINITY))?;
        check_transform(&LowerUpper { lb: f64::NEG_INFINITY, ub: lb, len }, &pool, &ybar, lb_, exact(), &y_ok(f64::NEG_INFINITY, lb))?;
        check_transform(&LowerUpper { lb: f64::NEG_INFINITY, ub: f64::INFINITY, len }, &pool, &ybar, lb_, exact(), &ok())?;
        check_transform(&OffsetMultiplier { offset: lb, multiplier: width, len }, &pool, &ybar, lb_, exact(), &ok())?;
    }

    /// The bound transforms' rules w.r.t. the bounds themselves.
    #[test]
    fn scalar_bound_partials(x in -4.0..4.0f64, lb in -3.0..3.0f64, width in 0.1..5.0f64, yb in -1.0..1.0f64, ljb in -1.0..1.0f64) {
        let ub = lb + width;
        let phi = |x: f64, lb: f64, ub: f64| { let (y, lj) = lub_constrain(x, lb, ub); yb * y + ljb * lj };
        let d = |f: &dyn Fn(f64) -> f64, v: f64| { let h = 1e-5; (f(v - 2.0 * h) - 8.0 * f(v - h) + 8.0 * f(v + h) - f(v + 2.0 * h)) / (12.0 * h) };
        let (xb, lbb, ubb) = lub_constrain_vjp(x, lb, ub, yb, ljb);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-7 * b.abs().max(1.0);
        prop_assert!(close(xb, d(&|v| phi(v, lb, ub), x)));
        prop_assert!(close(lbb, d(&|v| phi(x, v, ub), lb)));
        prop_assert!(close(ubb, d(&|v| phi(x, lb, v), ub)));
        let (xb, lbb) = lb_constrain_vjp(x, lb, yb, ljb);
        let phi_lb = |x: f64, lb: f64| { let (y, lj) = lb_constrain(x, lb); yb * y + ljb * lj };
        prop_assert!(close(xb, d(&|v| phi_lb(v, lb), x)) && close(lbb, d(&|v| phi_lb(x, v), lb)));
        let (xb, ubb) = ub_constrain_vjp(x, ub, yb, ljb);
        let phi_ub = |x: f64, ub: f64| { let (y, lj) = ub_constrain(x, ub); yb * y + ljb * lj };
        prop_assert!(close(xb, d(&|v| phi_ub(v, ub), x)) && close(ubb, d(&|v| phi_ub(x, v), ub)));
        let (xb, ob, mb) = offset_multiplier_constrain_vjp(x, lb, width, yb, ljb);
        let phi_om = |x: f64, o: f64, m: f64| { let (y, lj) = offset_multiplier_constrain(x, o, m); yb * y + ljb * lj };
        prop_assert!(close(xb, d(&|v| phi_om(v, lb, width), x)));
        prop_assert!(close(ob, d(&|v| phi_om(x, v, width), lb)));
        prop_assert!(close(mb, d(&|v| phi_om(x, lb, v), width)));
    }

    #[test]
    fn ordered_vectors((pool, ybar, ljb) in pools(), len in 0..8usize) {
        let increasing = |y: &[f64]| if y.windows(2).all(|w| w[0] < w[1]) { Ok(()) } else { Err(format!("{y:?}")) };
        check_transform(&Ordered { len }, &pool, &ybar, ljb, JacobianCheck::Exact(identity()), &increasing)?;
        let positive = move |y: &[f64]| if y.first().is_none_or(|v| *v > 0.0) { increasing(y) } else { Err(format!("{y:?}")) };
        check_transform(&PositiveOrdered { len }, &pool, &ybar, ljb, JacobianCheck::Exact(identity()), &positive)?;
    }

    #[test]
    fn simplex((pool, ybar, ljb) in pools(), len in 1..9usize) {
        let drop_last = keep((0..len - 1).collect());
        let valid = |y: &[f64]| if y.iter().all(|v| *v > 0.0) { sums_to(1.0, y) } else { Err(format!("{y:?}")) };
        check_transform(&Simplex { len }, &pool, &ybar, ljb, JacobianCheck::Exact(drop_last), &valid)?;
    }

    #[test]
    fn sum_to_zero_vector((pool, ybar, ljb) in pools(), len in 1..9usize) {
        let drop_last = keep((0..len - 1).collect());
        let t = SumToZeroVector { len };
        check_transform(&t, &pool, &ybar, ljb, JacobianCheck::ConstantZero(drop_last), &|y| sums_to(0.0, y))?;
        // An isometry: ‖z‖ = ‖x‖.
        let x = &pool[..t.unconstrained_len()];
        let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
        prop_assert!((norm(&t.constrain(x).value) - norm(x)).abs() <= 1e-12 * norm(x).max(1.0));
    }

    #[test]
    fn sum_to_zero_matrix((pool, ybar, ljb) in pools(), rows in 1..5usize, cols in 1..5usize) {
        let t = SumToZeroMatrix { rows, cols };
        let top_left = keep((0..cols - 1).flat_map(|c| (0..rows - 1).map(move |r| at(rows, r, c))).collect());
        let valid = move |y: &[f64]| {
            for r in 0..rows { sums_to(0.0, &(0..cols).map(|c| y[at(rows, r, c)]).collect::<Vec<_>>())?; }
            for c in 0..cols { sums_to(0.0, &y[c * rows..(c + 1) * rows])?; }
            Ok(())
        };
        check_transform(&t, &pool, &ybar, ljb, JacobianCheck::ConstantZero(top_left), &valid)?;
        // Agrees with a transcription of Stan's own loop.
        let x = &pool[..t.unconstrained_len()];
        let stan = stan_sum_to_zero_matrix(x, rows - 1, cols - 1);
        for (a, b) in t.constrain(x).value.iter().zip(&stan) {
            prop_assert!((a - b).abs() <= 1e-12, "{:?} vs Stan {:?}", t.constrain(x).value, stan);
        }
    }

    #[test]
    fn unit_vector((pool, ybar, ljb) in pools(), len in 1..7usize) {
        let t = UnitVector { len };
        let unit = |y: &[f64]| {
            let sq: f64 = y.iter().map(|v| v * v).sum();
            if (sq - 1.0).abs() <= 1e-12 { Ok(()) } else { Err(format!("norm² {sq}")) }
        };
        // The round trip needs a free vector of norm 1 (the free value is y).
        let raw = &pool[..len];
        let norm = raw.iter().map(|v| v * v).sum::<f64>().sqrt();
        prop_assume!(norm > 0.1);
        let mut scaled: Vec<f64> = raw.iter().map(|v| v / norm).collect();
        scaled.extend_from_slice(&pool[len..]);
        check_transform(&t, &scaled, &ybar, ljb, JacobianCheck::None, &unit)?;
        let c = t.constrain(raw);
        prop_assert!((c.log_jacobian + 0.5 * norm * norm).abs() <= 1e-12 * norm * norm);
        // The VJP away from the unit sphere too.
        let y_bar = &ybar[..len];
        let vjp = t.constrain_vjp(raw, y_bar, ljb);
        let objective = |xs: &[f64]| { let c = t.constrain(xs); vec![c.value.iter().zip(y_bar).map(|(a, b)| a * b).sum::<f64>() + ljb * c.log_jacobian] };
        let fd = fd_jacobian(&objective, raw);
        for j in 0..len { prop_assert!((vjp[j] - fd[0][j]).abs() <= 1e-6 * fd[0][j].abs().max(1.0)); }
    }

    #[test]
    fn stochastic_matrices((pool, ybar, ljb) in pools(), rows in 1..5usize, cols in 1..5usize) {
        let columns = move |y: &[f64]| { for c in 0..cols { sums_to(1.0, &y[c * rows..(c + 1) * rows])?; } Ok(()) };
        let row_sums = move |y: &[f64]| { for r in 0..rows { sums_to(1.0, &(0..cols).map(|c| y[at(rows, r, c)]).collect::<Vec<_>>())?; } Ok(()) };
        let tc = StochasticColumn { rows, cols };
        check_transform(&tc, &pool, &ybar, ljb, JacobianCheck::None, &columns)?;
        let tr = StochasticRow { rows, cols };
        check_transform(&tr, &pool, &ybar, ljb, JacobianCheck::None, &row_sums)?;
        // log |J| is the sum of per-simplex terms; each simplex drops its last element.
        let x = &pool[..tc.unconstrained_len()];
        let keep_c: Vec<usize> = (0..cols).flat_map(|c| (0..rows - 1).map(move |r| at(rows, r, c))).collect();
        let f = |xs: &[f64]| { let v = tc.constrain(xs).value; keep_c.iter().map(|&i| v[i]).collect::<Vec<_>>() };
        let expected = if x.is_empty() { 0.0 } else { log_abs_det(fd_jacobian(&f, x)) };
        prop_assert!((tc.constrain(x).log_jacobian - expected).abs() <= 1e-6 * expected.abs().max(1.0));
        let x = &pool[..tr.unconstrained_len()];
        let keep_r: Vec<usize> = (0..cols - 1).flat_map(|c| (0..rows).map(move |r| at(rows, r, c))).collect();
        let f = |xs: &[f64]| { let v = tr.constrain(xs).value; keep_r.iter().map(|&i| v[i]).collect::<Vec<_>>() };
        let expected = if x.is_empty() { 0.0 } else { log_abs_det(fd_jacobian(&f, x)) };
        prop_assert!((tr.constrain(x).log_jacobian - expected).abs() <= 1e-6 * expected.abs().max(1.0));
    }

    #[test]
    fn cholesky_factor_cov((pool, ybar, ljb) in pools(), cols in 0..5usize, extra in 0..3usize) {
        let rows = cols + extra;
        let t = CholeskyFactorCov { rows, cols };
        let trapezoid = keep((0..rows).flat_map(|m| (0..=m.min(cols.saturating_sub(1))).filter(move |&n| n < cols).map(move |n| at(rows, m, n))).collect());
        let valid = move |y: &[f64]| {
            for c in 0..cols {
                if y[at(rows, c, c)].is_nan() || y[at(rows, c, c)] <= 0.0 { return Err("diagonal".into()); }
                for r in 0..c { if y[at(rows, r, c)] != 0.0 { return Err("upper".into()); } }
            }
            Ok(())
        };
        check_transform(&t, &pool, &ybar, ljb, JacobianCheck::Exact(trapezoid), &valid)?;
    }

    #[test]
    fn cov_matrix((pool, ybar, ljb) in pools(), k in 1..5usize) {
        let t = CovMatrix { k };
        let spd = move |y: &[f64]| {
            for i in 0..k { for j in 0..i { if (y[at(k, i, j)] - y[at(k, j, i)]).abs() > 0.0 { return Err("asymmetric".into()); } } }
            cholesky(y, k).map(|_| ()).ok_or_else(|| "not positive definite".to_string())
        };
        check_transform(&t, &pool, &ybar, ljb, JacobianCheck::Exact(lower_triangle(k, false)), &spd)?;
    }

    #[test]
    fn cholesky_factor_corr((pool, ybar, ljb) in pools(), k in 1..6usize) {
        let t = CholeskyFactorCorr { k };
        let valid = move |y: &[f64]| {
            for i in 0..k {
                let sq: f64 = (0..=i).map(|j| y[at(k, i, j)].powi(2)).sum();
                if (sq - 1.0).abs() > 1e-12 || y[at(k, i, i)].is_nan() || y[at(k, i, i)] <= 0.0 { return Err(format!("row {i}")); }
                for j in i + 1..k { if y[at(k, i, j)] != 0.0 { return Err("upper".into()); } }
            }
            Ok(())
        };
        check_transform(&t, &pool, &ybar, ljb, JacobianCheck::Exact(lower_triangle(k, true)), &valid)?;
    }

    #[test]
    fn corr_matrix((pool, ybar, ljb) in pools(), k in 1..6usize) {
        let t = CorrMatrix { k };
        let valid = move |y: &[f64]| {
            for i in 0..k {
                if (y[at(k, i, i)] - 1.0).abs() > 1e-12 { return Err("diagonal".into()); }
                for j in 0..i { if (y[at(k, i, j)] - y[at(k, j, i)]).abs() > 0.0 { return Err("asymmetric".into()); } }
            }
            cholesky(y, k).map(|_| ()).ok_or_else(|| "not positive definite".to_string())
        };
        check_transform(&t, &pool, &ybar, ljb, JacobianCheck::Exact(lower_triangle(k, true)), &valid)?;
    }
}

/// Stan's `sum_to_zero_constrain` for matrices, transcribed loop for loop
/// (stan/math/prim/constraint/sum_to_zero_constrain.hpp), as an independent
/// reference for the separable implementation.
fn stan_sum_to_zero_matrix(x: &[f64], n: usize, m: usize) -> Vec<f64> {
    let rows = n + 1;
    let mut z = vec![0.0; (n + 1) * (m + 1)];
    if n == 0 || m == 0 {
        return z;
    }
    let mut beta = vec![0.0; n];
    for j in (0..m).rev() {
        let mut ax_previous = 0.0;
        let a_j = 1.0 / (((j + 1) * (j + 2)) as f64).sqrt();
        let b_j = (j + 1) as f64 * a_j;
        for i in (0..n).rev() {
            let a_i = 1.0 / (((i + 1) * (i + 2)) as f64).sqrt();
            let b_i = (i + 1) as f64 * a_i;
            let b_i_x = b_i * x[at(n, i, j)] - ax_previous;
            z[at(rows, i, j)] = b_j * b_i_x - beta[i];
            beta[i] += a_j * b_i_x;
            z[at(rows, n, j)] -= z[at(rows, i, j)];
            z[at(rows, i, m)] -= z[at(rows, i, j)];
            ax_previous += a_i * x[at(n, i, j)];
        }
        z[at(rows, n, m)] -= z[at(rows, n, j)];
    }
    z
}

#[test]
fn known_values() {
    // Zero free vectors give the "centre" of each constraint.
    assert_eq!(Simplex { len: 4 }.constrain(&[0.0; 3]).value, vec![0.25; 4]);
    let chol = CholeskyFactorCorr { k: 3 }.constrain(&[0.0; 3]);
    assert_eq!(
        chol.value,
        vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(chol.log_jacobian, 0.0);
    let cov = CovMatrix { k: 3 }.constrain(&[0.0; 6]);
    assert_eq!(cov.value, vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    assert!((cov.log_jacobian - 3.0 * std::f64::consts::LN_2).abs() < 1e-15);
    // Stan's documented simplex log |J|: Σ log y + ½ log K.
    let x = [0.3, -1.2, 2.0];
    let s = Simplex { len: 4 }.constrain(&x);
    let direct: f64 = s.value.iter().map(|v| v.ln()).sum::<f64>() + 0.5 * 4f64.ln();
    assert!((s.log_jacobian - direct).abs() < 1e-12);
    // sum_to_zero_vector[3] of (1, 0): Stan's pivot coordinates.
    let z = SumToZeroVector { len: 3 }.constrain(&[1.0, 0.0]).value;
    let expected = [1.0 / 2f64.sqrt(), -1.0 / 2f64.sqrt(), 0.0];
    assert!(
        z.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-15),
        "{z:?}"
    );
    // Stable where 1 - tanh² underflows.
    assert!(
        CholeskyFactorCorr { k: 2 }
            .constrain(&[40.0])
            .log_jacobian
            .is_finite()
    );
}

#[test]
fn invalid_values_are_errors_not_panics() {
    let wide = CholeskyFactorCov { rows: 1, cols: 2 };
    assert!(wide.unconstrain(&[1.0, 0.0]).is_err());
    assert!(
        wide.constrain(&vec![0.0; wide.unconstrained_len()])
            .log_jacobian
            .is_nan()
    );
    let nan = f64::NAN;
    assert!(Simplex { len: 3 }.unconstrain(&[0.5, 0.5, 0.5]).is_err());
    assert!(Simplex { len: 3 }.unconstrain(&[1.2, -0.2, 0.0]).is_err());
    assert!(Simplex { len: 3 }.unconstrain(&[0.5, 0.5]).is_err());
    assert!(Simplex { len: 2 }.unconstrain(&[nan, 1.0]).is_err());
    assert!(Ordered { len: 3 }.unconstrain(&[1.0, 1.0, 2.0]).is_err());
    assert!(
        PositiveOrdered { len: 2 }
            .unconstrain(&[-1.0, 2.0])
            .is_err()
    );
    assert!(UnitVector { len: 2 }.unconstrain(&[1.0, 1.0]).is_err());
    assert!(SumToZeroVector { len: 2 }.unconstrain(&[1.0, 1.0]).is_err());
    assert!(
        SumToZeroMatrix { rows: 2, cols: 2 }
            .unconstrain(&[1.0, -1.0, 1.0, -1.0])
            .is_err()
    );
    assert!(Lower { lb: 0.0, len: 1 }.unconstrain(&[-1.0]).is_err());
    assert!(Upper { ub: 0.0, len: 1 }.unconstrain(&[1.0]).is_err());
    assert!(
        LowerUpper {
            lb: 0.0,
            ub: 1.0,
            len: 1
        }
        .unconstrain(&[1.5])
        .is_err()
    );
    assert!(
        OffsetMultiplier {
            offset: 0.0,
            multiplier: -1.0,
            len: 1
        }
        .unconstrain(&[1.0])
        .is_err()
    );
    assert!(
        CholeskyFactorCov { rows: 2, cols: 2 }
            .unconstrain(&[1.0, 0.0, 0.5, 1.0])
            .is_err()
    );
    assert!(
        CholeskyFactorCov { rows: 2, cols: 2 }
            .unconstrain(&[-1.0, 0.0, 0.0, 1.0])
            .is_err()
    );
    assert!(
        CholeskyFactorCorr { k: 2 }
            .unconstrain(&[1.0, 0.5, 0.0, 1.0])
            .is_err()
    );
    assert!(
        CovMatrix { k: 2 }
            .unconstrain(&[1.0, 2.0, 2.0, 1.0])
            .is_err()
    );
    assert!(
        CovMatrix { k: 2 }
            .unconstrain(&[1.0, 0.5, 0.0, 1.0])
            .is_err()
    );
    assert!(
        CorrMatrix { k: 2 }
            .unconstrain(&[2.0, 0.5, 0.5, 1.0])
            .is_err()
    );
    assert!(
        CorrMatrix { k: 2 }
            .unconstrain(&[1.0, 1.5, 1.5, 1.0])
            .is_err()
    );
    assert!(
        StochasticColumn { rows: 2, cols: 1 }
            .unconstrain(&[0.7, 0.7])
            .is_err()
    );
    assert!(
        StochasticRow { rows: 1, cols: 2 }
            .unconstrain(&[0.7, 0.7])
            .is_err()
    );
}

#[test]
fn constraint_enum_dispatches_to_the_transform() {
    let shapes: Vec<Constraint> = vec![
        Identity { len: 3 }.into(),
        Lower { lb: 1.0, len: 3 }.into(),
        Simplex { len: 4 }.into(),
        CorrMatrix { k: 3 }.into(),
        SumToZeroMatrix { rows: 2, cols: 4 }.into(),
    ];
    let x = [0.4, -0.3, 1.1];
    for c in shapes {
        let n = c.unconstrained_len();
        assert_eq!(n, 3, "{}", c.name());
        let out = c.constrain(&x[..n]);
        assert_eq!(out.value.len(), c.constrained_len());
        let back = c.unconstrain(&out.value).unwrap();
        assert!(
            back.iter().zip(&x).all(|(a, b)| (a - b).abs() < 1e-12),
            "{}",
            c.name()
        );
    }
    assert_eq!(Constraint::from(CovMatrix { k: 3 }).name(), "cov_matrix");
}
