//! Small dense helpers on column-major `&[f64]` matrices, enough for the
//! matrix transforms (no external linear-algebra dependency).

/// Index of `(row, col)` in a column-major matrix with `rows` rows.
#[inline]
pub fn at(rows: usize, row: usize, col: usize) -> usize {
    col * rows + row
}

/// Lower Cholesky factor of a symmetric positive-definite K×K matrix, or
/// `None` if it is not (numerically) positive definite.
pub fn cholesky(a: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0_f64; k * k];
    for j in 0..k {
        let mut d = a[at(k, j, j)];
        for p in 0..j {
            d -= l[at(k, j, p)].powi(2);
        }
        if !(d > 0.0) {
            return None;
        }
        let d = d.sqrt();
        l[at(k, j, j)] = d;
        for i in j + 1..k {
            let mut s = a[at(k, i, j)];
            for p in 0..j {
                s -= l[at(k, i, p)] * l[at(k, j, p)];
            }
            l[at(k, i, j)] = s / d;
        }
    }
    Some(l)
}

/// `L Lᵀ` for a K×K lower-triangular `L`.
pub fn multiply_lower_tri_self_transpose(l: &[f64], k: usize) -> Vec<f64> {
    let mut out = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..=i {
            let s: f64 = (0..=j).map(|p| l[at(k, i, p)] * l[at(k, j, p)]).sum();
            out[at(k, i, j)] = s;
            out[at(k, j, i)] = s;
        }
    }
    out
}

/// Adjoint of `Σ = L Lᵀ` w.r.t. lower-triangular `L`: `(Σ̄ + Σ̄ᵀ) L`,
/// restricted to the lower triangle.
pub fn multiply_lower_tri_self_transpose_vjp(l: &[f64], sigma_bar: &[f64], k: usize) -> Vec<f64> {
    let mut l_bar = vec![0.0; k * k];
    for i in 0..k {
        for j in 0..=i {
            l_bar[at(k, i, j)] = (0..k)
                .map(|p| (sigma_bar[at(k, i, p)] + sigma_bar[at(k, p, i)]) * l[at(k, p, j)])
                .sum();
        }
    }
    l_bar
}

/// Whether a K×K matrix is symmetric within `tol` (relative to magnitude).
pub fn is_symmetric(a: &[f64], k: usize, tol: f64) -> bool {
    (0..k).all(|i| {
        (0..i).all(|j| {
            let (x, y) = (a[at(k, i, j)], a[at(k, j, i)]);
            (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0)
        })
    })
}
