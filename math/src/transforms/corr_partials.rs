//! The shared core of `cholesky_factor_corr` and `corr_matrix`: the Cholesky
//! factor of a correlation matrix built from partial correlations
//! `z ∈ (-1, 1)`, indexed row-major over the strict lower triangle:
//! `L[i,0] = z[i,0]`, `L[i,j] = z[i,j]·√(1 - Σ_{l<j} L[i,l]²)`,
//! `L[i,i] = √(1 - Σ_{l<i} L[i,l]²)`.

use super::linalg::at;

/// Position of (i, j), i > j, in the row-major strict lower triangle.
pub(crate) fn row_major_index(i: usize, j: usize) -> usize {
    i * (i - 1) / 2 + j
}

/// Position of (i, j), i > j, in the column-major strict lower triangle of a
/// K×K matrix (the order of Stan's canonical partial correlations).
pub(crate) fn column_major_index(k: usize, i: usize, j: usize) -> usize {
    j * (2 * k - j - 1) / 2 + (i - j - 1)
}

/// `log(1 - tanh²x) = log sech²x`, exact for large |x| (where `1 - tanh²`
/// would round to 0).
pub(crate) fn log_sech2(x: f64) -> f64 {
    let a = x.abs();
    2.0 * (std::f64::consts::LN_2 - a - (-2.0 * a).exp().ln_1p())
}

/// L (column-major K×K) from row-major partial correlations.
pub(crate) fn cholesky_from_partials(z: &[f64], k: usize) -> Vec<f64> {
    let mut l = vec![0.0; k * k];
    if k == 0 {
        return l;
    }
    l[0] = 1.0;
    for i in 1..k {
        let first = z[row_major_index(i, 0)];
        l[at(k, i, 0)] = first;
        let mut sum_sqs = first * first;
        for j in 1..i {
            let v = z[row_major_index(i, j)] * (1.0 - sum_sqs).sqrt();
            l[at(k, i, j)] = v;
            sum_sqs += v * v;
        }
        l[at(k, i, i)] = (1.0 - sum_sqs).sqrt();
    }
    l
}

/// Adjoint of [`cholesky_from_partials`] w.r.t. `z`, given `L̄` (lower part).
/// Using `L[i,j] = z_j Π_{l<j} √(1-z_l²)` (and `L[i,i] = Π_{l<i} √(1-z_l²)`):
/// `z̄_l = L̄[i,l]·Π_{m<l}√(1-z_m²) - z_l/(1-z_l²) · Σ_{j>l} L̄[i,j] L[i,j]`.
pub(crate) fn cholesky_from_partials_vjp(
    z: &[f64],
    l: &[f64],
    l_bar: &[f64],
    k: usize,
) -> Vec<f64> {
    let mut z_bar = vec![0.0; z.len()];
    for i in 1..k {
        let mut suffix = l_bar[at(k, i, i)] * l[at(k, i, i)];
        for j in (0..i).rev() {
            let zj = z[row_major_index(i, j)];
            let q = 1.0 - zj * zj;
            // Π_{m<j} √(1 - z_m²) recovered as √(1 - Σ_{m<j} L[i,m]²).
            let sum_sqs: f64 = (0..j).map(|m| l[at(k, i, m)].powi(2)).sum();
            let scale = (1.0 - sum_sqs).sqrt();
            z_bar[row_major_index(i, j)] = l_bar[at(k, i, j)] * scale - zj / q * suffix;
            suffix += l_bar[at(k, i, j)] * l[at(k, i, j)];
        }
    }
    z_bar
}

/// Inverse of [`cholesky_from_partials`] (row-major partial correlations).
pub(crate) fn partials_from_cholesky(l: &[f64], k: usize) -> Vec<f64> {
    let mut z = vec![0.0; k * k.saturating_sub(1) / 2];
    for i in 1..k {
        let mut sum_sqs = 0.0_f64;
        for j in 0..i {
            let v = l[at(k, i, j)];
            z[row_major_index(i, j)] = v / (1.0 - sum_sqs).sqrt();
            sum_sqs += v * v;
        }
    }
    z
}
