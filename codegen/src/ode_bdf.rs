//! The device's stiff integrator (`ode_bdf`, `integrate_ode_bdf`): a C++
//! template copying `bat_math::ode::bdf` (bat's variable-order,
//! variable-step BDF of Shampine & Reichelt with a simplified Newton
//! corrector on a dense LU of one n × n block) operation for operation, so
//! that through the CUDA-on-CPU shim its steps, orders and Newton
//! decisions are the CPU's: the same difference-table rescaling
//! (`compute_r`, `change_d`), RMS norms summed from −0.0 as Rust's
//! `Iterator::sum`, partial pivoting choosing the last of equal pivots
//! (`Iterator::max_by`), `f64::powi` as compiler-rt's `__powidf2`,
//! `f64::min`/`max` as `fmin`/`fmax`, and `next_up` as `nextafter`.

/// The BDF integrator's source (prepended to every kernel file, after
/// [`super::ode::ODE_SOURCE`], whose failure codes it uses).
pub const BDF_SOURCE: &str = r#"
// ---- ODE solves (codegen::ode_bdf): bat_math::ode::bdf, operation for operation ----
#define BAT_BDF_MAX_ORDER 5
#define BAT_BDF_NEWTON_MAXITER 4
// Work doubles for N coupled states in blocks of n.
#define BAT_BDF_WORK(N, n) (17 * (N) + 2 * (n) * (n) + (n))
// Rust's f64::powi (compiler-rt's __powidf2).
__device__ inline double bat_powi(double a, int b) {
    const bool recip = b < 0;
    double r = 1.0;
    for (;;) {
        if (b & 1) r *= a;
        b /= 2;
        if (b == 0) break;
        a *= a;
    }
    return recip ? 1.0 / r : r;
}
// RMS norm of x ./ scale (sums from -0.0, as Rust's Iterator::sum).
__device__ inline double bat_bdf_rms(int len, const double* x, const double* scale) {
    if (len == 0) return 0.0;
    double s = -0.0;
    for (int e = 0; e < len; ++e) {
        const double q = x[e] / scale[e];
        s += q * q;
    }
    return sqrt(s / (double)len);
}
__device__ inline double bat_bdf_gamma(int k) {
    double s = -0.0;
    for (int j = 1; j <= k; ++j) s += 1.0 / (double)j;
    return s;
}
__device__ inline double bat_bdf_error_const(int k) { return 1.0 / (double)(k + 1); }
// R(order, factor) of Shampine & Reichelt, row-major (order + 1)^2.
__device__ inline void bat_bdf_compute_r(int order, double factor, double* m) {
    const int n = order + 1;
    for (int i = 0; i < n * n; ++i) m[i] = 0.0;
    for (int j = 0; j < n; ++j) m[j] = 1.0;
    for (int i = 1; i < n; ++i)
        for (int j = 1; j < n; ++j)
            m[i * n + j] = ((double)i - 1.0 - factor * (double)j) / (double)i;
    for (int i = 1; i < n; ++i)
        for (int j = 0; j < n; ++j) m[i * n + j] *= m[(i - 1) * n + j];
}
// D[..=order] <- (R U)^T D[..=order] for a step multiplied by factor (D: rows of len).
__device__ inline void bat_bdf_change_d(double* D, int len, int order, double factor) {
    const int n = order + 1;
    double r[36], u[36], ru[36], old[6];
    bat_bdf_compute_r(order, factor, r);
    bat_bdf_compute_r(order, 1.0, u);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double s = -0.0;
            for (int k = 0; k < n; ++k) s += r[i * n + k] * u[k * n + j];
            ru[i * n + j] = s;
        }
    for (int e = 0; e < len; ++e) {
        for (int i = 0; i < n; ++i) old[i] = D[i * len + e];
        for (int j = 0; j < n; ++j) {
            double s = -0.0;
            for (int i = 0; i < n; ++i) s += ru[i * n + j] * old[i];
            D[j * len + e] = s;
        }
    }
}
// |x| > |y| in Rust's f64::total_cmp of absolute values (a NaN is largest).
__device__ inline bool bat_bdf_abs_gt(double x, double y) {
    if (isnan(x)) return !isnan(y);
    if (isnan(y)) return false;
    return x > y;
}
// P A = L U in place (n x n row-major); false if singular.
__device__ inline bool bat_lu_factor(int n, double* a, double* piv) {
    for (int col = 0; col < n; ++col) {
        int pivot = col;
        for (int r = col + 1; r < n; ++r)
            if (!bat_bdf_abs_gt(fabs(a[pivot * n + col]), fabs(a[r * n + col]))) pivot = r;
        const double p = a[pivot * n + col];
        if (p == 0.0 || !isfinite(p)) return false;
        if (pivot != col)
            for (int c = 0; c < n; ++c) {
                const double s = a[pivot * n + c];
                a[pivot * n + c] = a[col * n + c];
                a[col * n + c] = s;
            }
        piv[col] = (double)pivot;
        for (int r = col + 1; r < n; ++r) {
            const double factor = a[r * n + col] / p;
            a[r * n + col] = factor;
            for (int c = col + 1; c < n; ++c) a[r * n + c] -= factor * a[col * n + c];
        }
    }
    return true;
}
__device__ inline void bat_lu_solve(int n, const double* lu, const double* piv, double* b) {
    for (int col = 0; col < n; ++col) {
        const int p = (int)piv[col];
        const double s = b[col];
        b[col] = b[p];
        b[p] = s;
    }
    for (int r = 0; r < n; ++r) {
        double acc = b[r];
        for (int c = 0; c < r; ++c) acc -= lu[r * n + c] * b[c];
        b[r] = acc;
    }
    for (int r = n - 1; r >= 0; --r) {
        double acc = b[r];
        for (int c = r + 1; c < n; ++c) acc -= lu[r * n + c] * b[c];
        b[r] = acc / lu[r * n + r];
    }
}
// z' = f(t, z), z(t0) = z0 (N values in blocks of n; jac(t, z, J) writes
// the n x n Jacobian of the states) at the nt sorted times ts: calls
// observe(i, z(ts[i])) in order. w: BAT_BDF_WORK(N, n) doubles. Returns 0,
// or a BAT_ODE_* failure with its time in *fail_time.
template <class F, class G, class O>
__device__ int bat_bdf(F& f, G& jac, O& observe, int N, int n, double* w, const double* z0,
                       double t0, const double* ts, int nt, double rtol, double atol,
                       long long max_steps, double* fail_time) {
    double* D = w;  // (BAT_BDF_MAX_ORDER + 3) rows of N
    double* fz = w + 8 * N;
    double* y_predict = w + 9 * N;
    double* psi = w + 10 * N;
    double* scale = w + 11 * N;
    double* y = w + 12 * N;
    double* d = w + 13 * N;
    double* dy = w + 14 * N;
    double* err = w + 15 * N;
    double* out = w + 16 * N;
    double* J = w + 17 * N;
    double* lu = J + n * n;
    double* piv = lu + n * n;
    for (int i = 0; i < BAT_BDF_WORK(N, n); ++i) w[i] = 0.0;
    const double t_bound = ts[nt - 1];
    // Bdf::new.
    f(t0, z0, fz);
    if (!bat_ode_all_finite(N, fz)) { *fail_time = t0; return BAT_ODE_NON_FINITE; }
    jac(t0, z0, J);
    double h_abs;
    {
        // initial_step: Hairer–Wanner's for a method of order 1.
        const double interval = fabs(t_bound - t0);
        if (interval == 0.0 || N == 0) {
            h_abs = interval;
        } else {
            for (int e = 0; e < N; ++e) scale[e] = atol + fabs(z0[e]) * rtol;
            const double d0 = bat_bdf_rms(N, z0, scale);
            const double d1 = bat_bdf_rms(N, fz, scale);
            double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
            h0 = fmin(h0, interval);
            for (int e = 0; e < N; ++e) y[e] = z0[e] + h0 * fz[e];
            f(t0 + h0, (const double*)y, dy);
            for (int e = 0; e < N; ++e) dy[e] = dy[e] - fz[e];
            const double d2 = bat_bdf_rms(N, dy, scale) / h0;
            const double h1 = (d1 <= 1e-15 && d2 <= 1e-15) ? fmax(1e-6, h0 * 1e-3)
                                                           : pow(0.01 / fmax(d1, d2), 1.0 / 2.0);
            h_abs = fmin(fmin(100.0 * h0, h1), interval);
        }
    }
    for (int e = 0; e < N; ++e) {
        D[e] = z0[e];
        D[N + e] = fz[e] * h_abs;
    }
    double t = t0;
    const double newton_tol = fmax(10.0 * 2.220446049250313e-16 / rtol, fmin(0.03, sqrt(rtol)));
    int order = 1;
    int n_equal_steps = 0;
    bool lu_valid = false;
    int next = 0;
    long long steps = 0;
    while (next < nt) {
        while (next < nt && ts[next] <= t) {
            // The difference table's polynomial at ts[next].
            const double tt = ts[next];
            for (int e = 0; e < N; ++e) out[e] = D[e];
            double p = 1.0;
            for (int i = 0; i < order; ++i) {
                const double shift = t - h_abs * (double)i;
                p *= (tt - shift) / (h_abs * (double)(i + 1));
                for (int e = 0; e < N; ++e) out[e] += D[(i + 1) * N + e] * p;
            }
            observe(next, (const double*)out);
            ++next;
            steps = 0;
        }
        if (next == nt) break;
        if (steps >= max_steps) { *fail_time = ts[next]; return BAT_ODE_MAX_STEPS; }
        ++steps;
        // Bdf::step: one accepted step.
        const double min_step = 10.0 * fabs(nextafter(t, BAT_INF) - t);
        double h = h_abs;
        if (h < min_step) {
            bat_bdf_change_d(D, N, order, min_step / h);
            h = min_step;
            n_equal_steps = 0;
        }
        bool current_jac = false;
        const double alpha = bat_bdf_gamma(order);
        double t_new, safety, error_norm;
        for (;;) {
            if (h < min_step) { *fail_time = t; return BAT_ODE_TOO_SMALL; }
            t_new = t + h;
            if (t_new > t_bound) {
                t_new = t_bound;
                bat_bdf_change_d(D, N, order, fabs(t_new - t) / h);
                n_equal_steps = 0;
                lu_valid = false;
            }
            const double hh = t_new - t;
            h = fabs(hh);
            for (int e = 0; e < N; ++e) {
                double s = -0.0;
                for (int i = 0; i <= order; ++i) s += D[i * N + e];
                y_predict[e] = s;
            }
            for (int e = 0; e < N; ++e) scale[e] = atol + rtol * fabs(y_predict[e]);
            for (int e = 0; e < N; ++e) {
                double s = -0.0;
                for (int i = 1; i <= order; ++i) s += D[i * N + e] * bat_bdf_gamma(i);
                psi[e] = s / alpha;
            }
            const double c = hh / alpha;
            bool converged;
            int iterations;
            for (;;) {
                if (!lu_valid) {
                    for (int i = 0; i < n * n; ++i) lu[i] = -c * J[i];
                    for (int i = 0; i < n; ++i) lu[i * n + i] += 1.0;
                    lu_valid = bat_lu_factor(n, lu, piv);
                }
                converged = false;
                iterations = BAT_BDF_NEWTON_MAXITER;
                if (lu_valid) {
                    // Bdf::newton from the prediction.
                    for (int e = 0; e < N; ++e) { y[e] = y_predict[e]; d[e] = 0.0; }
                    bool has_old = false;
                    double dy_norm_old = 0.0;
                    for (int k = 0; k < BAT_BDF_NEWTON_MAXITER; ++k) {
                        iterations = k + 1;
                        f(t_new, (const double*)y, fz);
                        if (!bat_ode_all_finite(N, fz)) break;
                        for (int e = 0; e < N; ++e) dy[e] = c * fz[e] - psi[e] - d[e];
                        for (int b = 0; b < N; b += n) bat_lu_solve(n, lu, piv, dy + b);
                        const double dy_norm = bat_bdf_rms(N, dy, scale);
                        const double rate = has_old ? dy_norm / dy_norm_old : 0.0;
                        if (has_old && (rate >= 1.0
                                        || bat_powi(rate, BAT_BDF_NEWTON_MAXITER - k) / (1.0 - rate) * dy_norm
                                            > newton_tol))
                            break;
                        for (int e = 0; e < N; ++e) {
                            y[e] += dy[e];
                            d[e] += dy[e];
                        }
                        if (dy_norm == 0.0 || (has_old && rate / (1.0 - rate) * dy_norm < newton_tol)) {
                            converged = true;
                            break;
                        }
                        dy_norm_old = dy_norm;
                        has_old = true;
                    }
                }
                if (converged || current_jac) break;
                jac(t_new, (const double*)y_predict, J);
                lu_valid = false;
                current_jac = true;
            }
            if (!converged) {
                h *= 0.5;
                bat_bdf_change_d(D, N, order, 0.5);
                n_equal_steps = 0;
                lu_valid = false;
                continue;
            }
            safety = 0.9 * (double)(2 * BAT_BDF_NEWTON_MAXITER + 1)
                / (double)(2 * BAT_BDF_NEWTON_MAXITER + iterations);
            for (int e = 0; e < N; ++e) scale[e] = atol + rtol * fabs(y[e]);
            const double ec = bat_bdf_error_const(order);
            for (int e = 0; e < N; ++e) err[e] = ec * d[e];
            error_norm = bat_bdf_rms(N, err, scale);
            if (error_norm > 1.0) {
                const double factor = fmax(0.2, safety * pow(error_norm, -1.0 / (double)(order + 1)));
                h *= factor;
                bat_bdf_change_d(D, N, order, factor);
                n_equal_steps = 0;
                continue;
            }
            break;
        }
        if (!bat_ode_all_finite(N, y)) { *fail_time = t_new; return BAT_ODE_NON_FINITE; }
        ++n_equal_steps;
        t = t_new;
        h_abs = h;
        for (int e = 0; e < N; ++e) {
            D[(order + 2) * N + e] = d[e] - D[(order + 1) * N + e];
            D[(order + 1) * N + e] = d[e];
        }
        for (int i = order; i >= 0; --i)
            for (int e = 0; e < N; ++e) D[i * N + e] += D[(i + 1) * N + e];
        if (n_equal_steps < order + 1) continue;
        double norms[3];
        if (order > 1) {
            const double ec = bat_bdf_error_const(order - 1);
            for (int e = 0; e < N; ++e) err[e] = ec * D[order * N + e];
            norms[0] = bat_bdf_rms(N, err, scale);
        } else {
            norms[0] = BAT_INF;
        }
        norms[1] = error_norm;
        if (order < BAT_BDF_MAX_ORDER) {
            const double ec = bat_bdf_error_const(order + 1);
            for (int e = 0; e < N; ++e) err[e] = ec * D[(order + 2) * N + e];
            norms[2] = bat_bdf_rms(N, err, scale);
        } else {
            norms[2] = BAT_INF;
        }
        int best = 0;
        double best_factor = -BAT_INF;
        for (int i = 0; i < 3; ++i) {
            const double factor = pow(norms[i], -1.0 / (double)(order + i));
            if (factor > best_factor) { best = i; best_factor = factor; }
        }
        int new_order = order + best - 1;
        if (new_order < 1) new_order = 1;
        if (new_order > BAT_BDF_MAX_ORDER) new_order = BAT_BDF_MAX_ORDER;
        order = new_order;
        const double factor = fmin(10.0, safety * best_factor);
        h_abs *= factor;
        bat_bdf_change_d(D, N, order, factor);
        n_equal_steps = 0;
        lu_valid = false;
    }
    return 0;
}
"#;
