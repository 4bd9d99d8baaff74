//! Dense linear algebra on column-major matrices for the interpreter
//! (LU with partial pivoting, triangular solves, symmetric eigen by Jacobi).

use super::error::{Result, RuntimeError};

#[inline]
fn at(rows: usize, i: usize, j: usize) -> usize {
    j * rows + i
}

/// `a (m×k) * b (k×n)`: each element summed over p = 0..k in order from
/// 0.0, one fused multiply-add per term (`s = a.mul_add(b, s)`: one
/// rounding, as the batched executors' product kernels compute it with
/// their FMA instructions — the GEMM kernels run at the core's FMA rate
/// only so; a separate multiply and add were two instructions per term).
/// Every backend computes `multiply` this way, so a lane's result is the
/// same bits everywhere.
pub(crate) fn matmul(a: &[f64], m: usize, k: usize, b: &[f64], n: usize) -> Vec<f64> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has FMA (checked above).
        return unsafe { matmul_fma(a, m, k, b, n) };
    }
    matmul_any(a, m, k, b, n)
}

/// [`matmul`] where `mul_add` is an instruction (without the target
/// feature it is a call to the C library's `fma`, the same numbers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn matmul_fma(a: &[f64], m: usize, k: usize, b: &[f64], n: usize) -> Vec<f64> {
    matmul_any(a, m, k, b, n)
}

#[inline(always)]
fn matmul_any(a: &[f64], m: usize, k: usize, b: &[f64], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for j in 0..n {
        for p in 0..k {
            let bpj = b[at(k, p, j)];
            for i in 0..m {
                let o = &mut out[at(m, i, j)];
                *o = a[at(m, i, p)].mul_add(bpj, *o);
            }
        }
    }
    out
}

pub(crate) fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for j in 0..cols {
        for i in 0..rows {
            out[at(cols, j, i)] = a[at(rows, i, j)];
        }
    }
    out
}

/// LU factorisation with partial pivoting: (LU packed, permutation, sign).
fn lu(a: &[f64], n: usize) -> (Vec<f64>, Vec<usize>, f64) {
    let mut m = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut sign = 1.0;
    for k in 0..n {
        let p = (k..n)
            .max_by(|&x, &y| m[at(n, x, k)].abs().total_cmp(&m[at(n, y, k)].abs()))
            .unwrap_or(k);
        if p != k {
            for j in 0..n {
                m.swap(at(n, p, j), at(n, k, j));
            }
            perm.swap(p, k);
            sign = -sign;
        }
        let pivot = m[at(n, k, k)];
        if pivot == 0.0 {
            continue;
        }
        for i in k + 1..n {
            let f = m[at(n, i, k)] / pivot;
            m[at(n, i, k)] = f;
            for j in k + 1..n {
                m[at(n, i, j)] -= f * m[at(n, k, j)];
            }
        }
    }
    (m, perm, sign)
}

/// Solve `A X = B` (A n×n, B n×c).
pub(crate) fn solve(a: &[f64], n: usize, b: &[f64], c: usize) -> Result<Vec<f64>> {
    let (m, perm, _) = lu(a, n);
    if (0..n).any(|k| m[at(n, k, k)] == 0.0) {
        return Err(RuntimeError::rejection("matrix is singular"));
    }
    let mut x = vec![0.0; n * c];
    for col in 0..c {
        let mut y: Vec<f64> = (0..n).map(|i| b[at(n, perm[i], col)]).collect();
        for i in 0..n {
            for p in 0..i {
                y[i] -= m[at(n, i, p)] * y[p];
            }
        }
        for i in (0..n).rev() {
            for p in i + 1..n {
                y[i] -= m[at(n, i, p)] * y[p];
            }
            y[i] /= m[at(n, i, i)];
        }
        for i in 0..n {
            x[at(n, i, col)] = y[i];
        }
    }
    Ok(x)
}

pub(crate) fn inverse(a: &[f64], n: usize) -> Result<Vec<f64>> {
    let mut eye = vec![0.0; n * n];
    for i in 0..n {
        eye[at(n, i, i)] = 1.0;
    }
    solve(a, n, &eye, n)
}

/// log |det A|.
pub(crate) fn log_determinant(a: &[f64], n: usize) -> f64 {
    let (m, _, _) = lu(a, n);
    (0..n).map(|k| m[at(n, k, k)].abs().ln()).sum()
}

/// Solve `L X = B` with lower-triangular L (n×n), B n×c.
pub(crate) fn solve_lower(l: &[f64], n: usize, b: &[f64], c: usize) -> Vec<f64> {
    let mut x = b.to_vec();
    for col in 0..c {
        for i in 0..n {
            let mut s = x[at(n, i, col)];
            for p in 0..i {
                s -= l[at(n, i, p)] * x[at(n, p, col)];
            }
            x[at(n, i, col)] = s / l[at(n, i, i)];
        }
    }
    x
}

/// Eigenvalues (ascending) and eigenvectors (columns) of a symmetric
/// matrix by cyclic Jacobi rotations.
pub(crate) fn eigen_sym(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut m = a.to_vec();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[at(n, i, i)] = 1.0;
    }
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[at(n, i, j)].powi(2))
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[at(n, p, q)];
                if apq == 0.0 {
                    continue;
                }
                let theta = (m[at(n, q, q)] - m[at(n, p, p)]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (mkp, mkq) = (m[at(n, k, p)], m[at(n, k, q)]);
                    m[at(n, k, p)] = c * mkp - s * mkq;
                    m[at(n, k, q)] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[at(n, p, k)], m[at(n, q, k)]);
                    m[at(n, p, k)] = c * mpk - s * mqk;
                    m[at(n, q, k)] = s * mpk + c * mqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[at(n, k, p)], v[at(n, k, q)]);
                    v[at(n, k, p)] = c * vkp - s * vkq;
                    v[at(n, k, q)] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| m[at(n, i, i)].total_cmp(&m[at(n, j, j)]));
    let values = order.iter().map(|&i| m[at(n, i, i)]).collect();
    let mut vectors = vec![0.0; n * n];
    for (new, &old) in order.iter().enumerate() {
        for k in 0..n {
            vectors[at(n, k, new)] = v[at(n, k, old)];
        }
    }
    (values, vectors)
}
