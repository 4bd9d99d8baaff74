//! Dense linear algebra run by one lane's thread: the device functions
//! behind `cholesky_decompose`, the lower-triangular solves,
//! `gp_exp_quad_cov`, `softmax`, `log_softmax`, `cumulative_sum` and
//! `multiply_lower_tri_self_transpose`. Each is the interpreter's own loop
//! (`runtime::linalg`, bat-math's `transforms::linalg`) in the
//! same order, so results equal backend-cpu's to rounding.
//!
//! Matrices are column-major; a matrix is a pointer and a stride (element
//! `k` at `p[k * s]`), so the same function reads a thread-local array
//! (stride 1), shared data (stride 1) or a variable in the
//! structure-of-arrays lane state (stride `n_lanes`).

/// Prepended to every kernel file after the scalar helpers.
pub const LINALG_SOURCE: &str = r#"// ---- dense linear algebra per lane (language's interp/linalg.rs, bat-math's
// transforms/linalg.rs: same loops, same order). Element k of a matrix at p[k * s].
#define BAT_AT(p, s, k) ((p)[(long long)(k) * (s)])
// is_symmetric(a, n, 1e-8).
__device__ int bat_is_symmetric(const double* a, long long sa, int n) {
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < i; ++j) {
            const double x = BAT_AT(a, sa, j * n + i), y = BAT_AT(a, sa, i * n + j);
            if (!(fabs(x - y) <= 1e-8 * fmax(fmax(fabs(x), fabs(y)), 1.0))) return 0;
        }
    }
    return 1;
}
// Lower Cholesky factor (zeros above the diagonal); 0 when not positive definite.
__device__ int bat_cholesky(const double* a, long long sa, int k, double* l, long long sl) {
    for (int e = 0; e < k * k; ++e) BAT_AT(l, sl, e) = 0.0;
    for (int j = 0; j < k; ++j) {
        double d = BAT_AT(a, sa, j * k + j);
        for (int p = 0; p < j; ++p) { const double v = BAT_AT(l, sl, p * k + j); d -= v * v; }
        if (!(d > 0.0)) return 0;
        d = sqrt(d);
        BAT_AT(l, sl, j * k + j) = d;
        for (int i = j + 1; i < k; ++i) {
            double s = BAT_AT(a, sa, j * k + i);
            for (int p = 0; p < j; ++p) s -= BAT_AT(l, sl, p * k + i) * BAT_AT(l, sl, p * k + j);
            BAT_AT(l, sl, j * k + i) = s / d;
        }
    }
    return 1;
}
// X = L⁻¹ B for lower-triangular L (n×n), B n×c.
__device__ void bat_solve_lower(const double* l, long long sl, int n, const double* b, long long sb,
                                int c, double* x, long long sx) {
    for (int e = 0; e < n * c; ++e) BAT_AT(x, sx, e) = BAT_AT(b, sb, e);
    for (int col = 0; col < c; ++col) {
        for (int i = 0; i < n; ++i) {
            double s = BAT_AT(x, sx, col * n + i);
            for (int p = 0; p < i; ++p) s -= BAT_AT(l, sl, p * n + i) * BAT_AT(x, sx, col * n + p);
            BAT_AT(x, sx, col * n + i) = s / BAT_AT(l, sl, i * n + i);
        }
    }
}
// LU with partial pivoting of m (n×n, in place; rows swapped), permutation in perm.
// The pivot is the last row of largest |m[i, k]| (Rust's max_by on total_cmp).
__device__ void bat_lu(double* m, int n, int* perm) {
    for (int i = 0; i < n; ++i) perm[i] = i;
    for (int k = 0; k < n; ++k) {
        int p = k;
        for (int x = k + 1; x < n; ++x) {
            if (__double_as_longlong(fabs(m[k * n + x])) >= __double_as_longlong(fabs(m[k * n + p]))) p = x;
        }
        if (p != k) {
            for (int j = 0; j < n; ++j) { const double t = m[j * n + p]; m[j * n + p] = m[j * n + k]; m[j * n + k] = t; }
            const int t = perm[p]; perm[p] = perm[k]; perm[k] = t;
        }
        const double pivot = m[k * n + k];
        if (pivot == 0.0) continue;
        for (int i = k + 1; i < n; ++i) {
            const double f = m[k * n + i] / pivot;
            m[k * n + i] = f;
            for (int j = k + 1; j < n; ++j) m[j * n + i] -= f * m[j * n + k];
        }
    }
}
// B A⁻¹ for A n×n (only its lower triangle when `lower`: mdivide_right_tri_low)
// and B r×n, as the interpreter: the general solver on Aᵀ (m: n×n scratch,
// y: n, perm: n), one row of B at a time. 0 when Aᵀ is singular.
__device__ int bat_mdivide_right(const double* b, long long sb, int r, const double* l,
                                 long long sl, int n, int lower, double* x, long long sx,
                                 double* m, double* y, int* perm) {
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
            m[j * n + i] = (!lower || j >= i) ? BAT_AT(l, sl, i * n + j) : 0.0;
    bat_lu(m, n, perm);
    for (int k = 0; k < n; ++k) if (m[k * n + k] == 0.0) return 0;
    for (int row = 0; row < r; ++row) {
        for (int i = 0; i < n; ++i) y[i] = BAT_AT(b, sb, perm[i] * r + row);
        for (int i = 0; i < n; ++i)
            for (int p = 0; p < i; ++p) y[i] -= m[p * n + i] * y[p];
        for (int i = n - 1; i >= 0; --i) {
            for (int p = i + 1; p < n; ++p) y[i] -= m[p * n + i] * y[p];
            y[i] /= m[i * n + i];
        }
        for (int i = 0; i < n; ++i) BAT_AT(x, sx, i * r + row) = y[i];
    }
    return 1;
}
// X = A⁻¹ B for A n×n and B n×c (the identity when b is null: inverse), as the
// interpreter's solve (m: n×n scratch, y: n, perm: n). 0 when A is singular.
__device__ int bat_solve(const double* a, long long sa, int n, const double* b, long long sb,
                         int c, double* x, long long sx, double* m, double* y, int* perm) {
    for (int e = 0; e < n * n; ++e) m[e] = BAT_AT(a, sa, e);
    bat_lu(m, n, perm);
    for (int k = 0; k < n; ++k) if (m[k * n + k] == 0.0) return 0;
    for (int col = 0; col < c; ++col) {
        for (int i = 0; i < n; ++i)
            y[i] = b ? BAT_AT(b, sb, col * n + perm[i]) : (perm[i] == col ? 1.0 : 0.0);
        for (int i = 0; i < n; ++i)
            for (int p = 0; p < i; ++p) y[i] -= m[p * n + i] * y[p];
        for (int i = n - 1; i >= 0; --i) {
            for (int p = i + 1; p < n; ++p) y[i] -= m[p * n + i] * y[p];
            y[i] /= m[i * n + i];
        }
        for (int i = 0; i < n; ++i) BAT_AT(x, sx, col * n + i) = y[i];
    }
    return 1;
}
// log |det A| from the LU factors, as the interpreter (m: n×n scratch, perm: n).
__device__ double bat_log_determinant(const double* a, long long sa, int n, double* m, int* perm) {
    for (int e = 0; e < n * n; ++e) m[e] = BAT_AT(a, sa, e);
    bat_lu(m, n, perm);
    double s = 0.0;
    for (int k = 0; k < n; ++k) s += log(fabs(m[k * n + k]));
    return s;
}
// α² exp(−|x_i − x_j|² / (2ρ²)) for n points of d coordinates (point i at x[i * d ..]).
__device__ void bat_gp_exp_quad_cov(const double* x, long long sx, int n, int d, double alpha,
                                    double rho, double* k, long long sk) {
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            double sq = 0.0;
            for (int t = 0; t < d; ++t) {
                const double v = BAT_AT(x, sx, i * d + t) - BAT_AT(x, sx, j * d + t);
                sq += v * v;
            }
            BAT_AT(k, sk, j * n + i) = alpha * alpha * exp(-sq / (2.0 * rho * rho));
        }
    }
}
// bat-math's log_sum_exp of x[0..n): max + log Σ exp(x − max); the max itself when infinite.
__device__ double bat_log_sum_exp_at(const double* x, long long sx, int n) {
    double mx = -BAT_INF;
    for (int j = 0; j < n; ++j) mx = fmax(mx, BAT_AT(x, sx, j));
    if (isinf(mx)) return mx;
    double t = 0.0;
    for (int j = 0; j < n; ++j) t += exp(BAT_AT(x, sx, j) - mx);
    return mx + log(t);
}
// softmax and log_softmax as bat-math: exp(x − lse), x − lse (x and y may be the same).
__device__ void bat_softmax(const double* x, long long sx, int n, double* y, long long sy) {
    const double lse = bat_log_sum_exp_at(x, sx, n);
    for (int j = 0; j < n; ++j) BAT_AT(y, sy, j) = exp(BAT_AT(x, sx, j) - lse);
}
__device__ void bat_log_softmax(const double* x, long long sx, int n, double* y, long long sy) {
    const double lse = bat_log_sum_exp_at(x, sx, n);
    for (int j = 0; j < n; ++j) BAT_AT(y, sy, j) = BAT_AT(x, sx, j) - lse;
}
// Running sums in order (x and y may be the same).
__device__ void bat_cumulative_sum(const double* x, long long sx, int n, double* y, long long sy) {
    double acc = 0.0;
    for (int j = 0; j < n; ++j) { acc += BAT_AT(x, sx, j); BAT_AT(y, sy, j) = acc; }
}
// L Lᵀ for L the lower triangle of a (r×c; zeros above the diagonal), as the
// interpreter: its product of the zeroed L by its transpose, one fma per term.
__device__ void bat_multiply_lower_tri_self_transpose(const double* a, long long sa, int r, int c,
                                                      double* out, long long so) {
    for (int e = 0; e < r * r; ++e) BAT_AT(out, so, e) = 0.0;
    for (int j = 0; j < r; ++j) {
        for (int p = 0; p < c; ++p) {
            const double bpj = p <= j ? BAT_AT(a, sa, p * r + j) : 0.0;
            for (int i = 0; i < r; ++i) {
                const double aip = p <= i ? BAT_AT(a, sa, p * r + i) : 0.0;
                BAT_AT(out, so, j * r + i) = fma(aip, bpj, BAT_AT(out, so, j * r + i));
            }
        }
    }
}
"#;
