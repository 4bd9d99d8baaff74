//! The device's ODE integrators, C++ templates over the right-hand side
//! and the output observer in every kernel file's prelude: Dormand–Prince
//! (`bat_math::ode::dopri5`: `ode_rk45`, `integrate_ode_rk45`, `ode_adams`)
//! and Cash–Karp (`bat_math::ode::cash_karp`: `ode_ckrk`), each the CPU's
//! operation for operation (see [`super::ode`] for why).
//!
//! What both steppers share is written once: the Runge–Kutta stage sums
//! (`bat_rk_sum`, the CPU's left-to-right sums of `dt * b * k`), Boost's
//! error norm (`bat_ode_error`) and its step-size controller for a 5(4)
//! pair (`bat_ode_control`), and the failure codes. The drivers differ as
//! the CPU's do: Dormand–Prince steps freely and interpolates the output
//! times (dense output, `max_num_steps` counted before each step),
//! Cash–Karp cuts each step to end on the next output time and resumes the
//! longer step afterwards (`max_num_steps` counted after each accepted
//! step).

/// The integrators' source (prepended to every kernel file).
pub const ODE_SOURCE: &str = r#"
// ---- ODE solves (codegen::ode_integrators): bat_math::ode, operation for operation ----
#define BAT_ODE_MAX_STEPS 1
#define BAT_ODE_TOO_SMALL 2
#define BAT_ODE_NON_FINITE 3
#define BAT_DP_A2 (1.0 / 5.0)
#define BAT_DP_A3 (3.0 / 10.0)
#define BAT_DP_A4 (4.0 / 5.0)
#define BAT_DP_A5 (8.0 / 9.0)
#define BAT_DP_B21 (1.0 / 5.0)
#define BAT_DP_B31 (3.0 / 40.0)
#define BAT_DP_B32 (9.0 / 40.0)
#define BAT_DP_B41 (44.0 / 45.0)
#define BAT_DP_B42 (-56.0 / 15.0)
#define BAT_DP_B43 (32.0 / 9.0)
#define BAT_DP_B51 (19372.0 / 6561.0)
#define BAT_DP_B52 (-25360.0 / 2187.0)
#define BAT_DP_B53 (64448.0 / 6561.0)
#define BAT_DP_B54 (-212.0 / 729.0)
#define BAT_DP_B61 (9017.0 / 3168.0)
#define BAT_DP_B62 (-355.0 / 33.0)
#define BAT_DP_B63 (46732.0 / 5247.0)
#define BAT_DP_B64 (49.0 / 176.0)
#define BAT_DP_B65 (-5103.0 / 18656.0)
#define BAT_DP_C1 (35.0 / 384.0)
#define BAT_DP_C3 (500.0 / 1113.0)
#define BAT_DP_C4 (125.0 / 192.0)
#define BAT_DP_C5 (-2187.0 / 6784.0)
#define BAT_DP_C6 (11.0 / 84.0)
#define BAT_DP_DC1 (BAT_DP_C1 - 5179.0 / 57600.0)
#define BAT_DP_DC3 (BAT_DP_C3 - 7571.0 / 16695.0)
#define BAT_DP_DC4 (BAT_DP_C4 - 393.0 / 640.0)
#define BAT_DP_DC5 (BAT_DP_C5 - -92097.0 / 339200.0)
#define BAT_DP_DC6 (BAT_DP_C6 - 187.0 / 2100.0)
#define BAT_DP_DC7 (-1.0 / 40.0)
#define BAT_CK_A2 (1.0 / 5.0)
#define BAT_CK_A3 (3.0 / 10.0)
#define BAT_CK_A4 (3.0 / 5.0)
#define BAT_CK_A5 1.0
#define BAT_CK_A6 (7.0 / 8.0)
#define BAT_CK_B21 (1.0 / 5.0)
#define BAT_CK_B31 (3.0 / 40.0)
#define BAT_CK_B32 (9.0 / 40.0)
#define BAT_CK_B41 (3.0 / 10.0)
#define BAT_CK_B42 (-9.0 / 10.0)
#define BAT_CK_B43 (6.0 / 5.0)
#define BAT_CK_B51 (-11.0 / 54.0)
#define BAT_CK_B52 (5.0 / 2.0)
#define BAT_CK_B53 (-70.0 / 27.0)
#define BAT_CK_B54 (35.0 / 27.0)
#define BAT_CK_B61 (1631.0 / 55296.0)
#define BAT_CK_B62 (175.0 / 512.0)
#define BAT_CK_B63 (575.0 / 13824.0)
#define BAT_CK_B64 (44275.0 / 110592.0)
#define BAT_CK_B65 (253.0 / 4096.0)
#define BAT_CK_C1 (37.0 / 378.0)
#define BAT_CK_C3 (250.0 / 621.0)
#define BAT_CK_C4 (125.0 / 594.0)
#define BAT_CK_C6 (512.0 / 1771.0)
#define BAT_CK_DC1 (BAT_CK_C1 - 2825.0 / 27648.0)
#define BAT_CK_DC3 (BAT_CK_C3 - 18575.0 / 48384.0)
#define BAT_CK_DC4 (BAT_CK_C4 - 13525.0 / 55296.0)
#define BAT_CK_DC5 (-277.0 / 14336.0)
#define BAT_CK_DC6 (BAT_CK_C6 - 1.0 / 4.0)
// Boost's less_eq_with_sign: t1 <= t2 up to machine epsilon, along dt.
__device__ inline bool bat_ode_leq(double t1, double t2, double dt) {
    if (dt > 0.0) return t1 - t2 <= 2.220446049250313e-16;
    return t2 - t1 <= 2.220446049250313e-16;
}
// std::max(a, b): b only if a < b (a NaN b is ignored).
__device__ inline double bat_ode_max(double a, double b) { return a < b ? b : a; }
// Rust's saturating `x as i64` (the deprecated interface's real max_num_steps).
__device__ inline long long bat_ode_steps(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return 9223372036854775807LL;
    if (x <= -9223372036854775808.0) return (-9223372036854775807LL - 1);
    return (long long)x;
}
// out = base + dt*b[0]*k[0] + dt*b[1]*k[1] + ... summed left to right
// (without base when it is null), as the CPU's stage sums.
__device__ inline void bat_rk_sum(int n, double* out, const double* base, double dt, int terms,
                                  const double* b, const double* const* k) {
    for (int i = 0; i < n; ++i) {
        double acc = base ? base[i] + dt * b[0] * k[0][i] : dt * b[0] * k[0][i];
        for (int j = 1; j < terms; ++j) acc = acc + dt * b[j] * k[j][i];
        out[i] = acc;
    }
}
// The stages k2..k6 of a six-stage explicit Runge–Kutta step of size dt
// from (t, x) with k1 = dxdt: k[s] = f(t + dt * c[s], x + dt*b*k1 + ...),
// b the tableau's rows one after another (1, 2, ..., 5 coefficients).
template <class F>
__device__ inline void bat_rk_stages(F& f, int n, const double* x, const double* dxdt, double t,
                                     double dt, const double* c, const double* b,
                                     double* const* k, double* x_tmp) {
    const double* terms[5] = {dxdt, k[0], k[1], k[2], k[3]};
    int first = 0;
    for (int s = 0; s < 5; ++s) {
        bat_rk_sum(n, x_tmp, x, dt, s + 1, b + first, terms);
        f(t + dt * c[s], (const double*)x_tmp, k[s]);
        first += s + 1;
    }
}
// Boost's error norm of a trial step of size dt from (x, dxdt).
__device__ inline double bat_ode_error(int n, const double* xerr, const double* x,
                                       const double* dxdt, double dt, double rtol, double atol) {
    const double a_dxdt = fabs(dt);
    double err = 0.0;
    for (int i = 0; i < n; ++i) {
        const double e = fabs(xerr[i]) / (atol + rtol * (fabs(x[i]) + a_dxdt * fabs(dxdt[i])));
        err = bat_ode_max(err, fabs(e));
    }
    return err;
}
// Boost's step-size controller of a 5(4) pair: whether the step of size
// *dt is accepted, and the next step size in *dt.
__device__ inline bool bat_ode_control(double err, double* dt) {
    if (err > 1.0) {
        *dt = *dt * bat_ode_max(9.0 / 10.0 * pow(err, -1.0 / 3.0), 1.0 / 5.0);
        return false;
    }
    if (err < 0.5) {
        err = bat_ode_max(pow(5.0, -5.0), err);
        *dt = *dt * (9.0 / 10.0 * pow(err, -1.0 / 5.0));
    }
    return true;
}
__device__ inline bool bat_ode_all_finite(int n, const double* x) {
    for (int i = 0; i < n; ++i)
        if (!isfinite(x[i])) return false;
    return true;
}
// Work doubles of each integrator for n states.
#define BAT_DOPRI5_WORK(n) (12 * (n))
#define BAT_CASH_KARP_WORK(n) (10 * (n))
// y' = f(t, y), y(t0) = z0 (n values) at the nt sorted times ts: calls
// observe(i, y(ts[i])) in order. w: BAT_DOPRI5_WORK(n) doubles. Returns 0,
// or a BAT_ODE_* failure with its time in *fail_time.
template <class F, class O>
__device__ int bat_dopri5(F& f, O& observe, int n, double* w, const double* z0, double t0,
                          const double* ts, int nt, double rtol, double atol,
                          long long max_steps, double* fail_time) {
    double* x = w;
    double* dxdt = w + n;
    double* x_old = w + 2 * n;
    double* dxdt_old = w + 3 * n;
    double* k2 = w + 4 * n;
    double* k3 = w + 5 * n;
    double* k4 = w + 6 * n;
    double* k5 = w + 7 * n;
    double* k6 = w + 8 * n;
    double* x_tmp = w + 9 * n;
    double* xerr = w + 10 * n;
    double* out = w + 11 * n;
    for (int i = 0; i < BAT_DOPRI5_WORK(n); ++i) w[i] = 0.0;
    for (int i = 0; i < n; ++i) x[i] = z0[i];
    double t = t0, t_old = t0, dt = 0.1;
    bool deriv_ready = false;
    const double last = ts[nt - 1];
    int next = 0;
    long long steps = 0;
    while (next < nt) {
        while (next < nt && bat_ode_leq(ts[next], t, dt)) {
            // Hairer's dense output of DOPRI5 in the last step.
            const double tt = ts[next];
            const double h = t - t_old;
            const double theta = (tt - t_old) / h;
            const double x1 = 5.0 * (2558722523.0 - 31403016.0 * theta) / 11282082432.0;
            const double x3 = 100.0 * (882725551.0 - 15701508.0 * theta) / 32700410799.0;
            const double x4 = 25.0 * (443332067.0 - 31403016.0 * theta) / 1880347072.0;
            const double x5 = 32805.0 * (23143187.0 - 3489224.0 * theta) / 199316789632.0;
            const double x6 = 55.0 * (29972135.0 - 7076736.0 * theta) / 822651844.0;
            const double x7 = 10.0 * (7414447.0 - 829305.0 * theta) / 29380423.0;
            const double theta_m_1 = theta - 1.0;
            const double theta_sq = theta * theta;
            const double a = theta_sq * (3.0 - 2.0 * theta);
            const double b = theta_sq * theta_m_1;
            const double c = theta_sq * theta_m_1 * theta_m_1;
            const double d = theta * theta_m_1 * theta_m_1;
            const double b1 = h * (a * BAT_DP_C1 - c * x1 + d);
            const double b3 = h * (a * BAT_DP_C3 + c * x3);
            const double b4 = h * (a * BAT_DP_C4 - c * x4);
            const double b5 = h * (a * BAT_DP_C5 + c * x5);
            const double b6 = h * (a * BAT_DP_C6 - c * x6);
            const double b7 = h * (b + c * x7);
            for (int i = 0; i < n; ++i)
                out[i] = x_old[i] + b1 * dxdt_old[i] + b3 * k3[i] + b4 * k4[i] + b5 * k5[i]
                    + b6 * k6[i] + b7 * dxdt[i];
            observe(next, (const double*)out);
            ++next;
            steps = 0;
        }
        if (next == nt) break;
        if (steps >= max_steps) { *fail_time = ts[next]; return BAT_ODE_MAX_STEPS; }
        ++steps;
        if (!bat_ode_leq(t + dt, last, dt)) {
            // The last step ends exactly on the last output time.
            dt = last - t;
            deriv_ready = false;
        }
        if (!deriv_ready) { f(t, (const double*)x, dxdt); deriv_ready = true; }
        t_old = t;
        int tries = 0;
        for (;;) {
            // The six stages: the new state into x_old, its derivative into
            // dxdt_old, the error into xerr (Boost's FSAL try_step).
            const double* dd = dxdt;
            // The last stage is at t + dt (dt * 1.0: the same number).
            const double c[5] = {BAT_DP_A2, BAT_DP_A3, BAT_DP_A4, BAT_DP_A5, 1.0};
            const double b[15] = {BAT_DP_B21,
                                  BAT_DP_B31, BAT_DP_B32,
                                  BAT_DP_B41, BAT_DP_B42, BAT_DP_B43,
                                  BAT_DP_B51, BAT_DP_B52, BAT_DP_B53, BAT_DP_B54,
                                  BAT_DP_B61, BAT_DP_B62, BAT_DP_B63, BAT_DP_B64, BAT_DP_B65};
            double* const k[5] = {k2, k3, k4, k5, k6};
            bat_rk_stages(f, n, x, dd, t, dt, c, b, k, x_tmp);
            const double* sol[6] = {dd, k3, k4, k5, k6, dxdt_old};
            const double weights[5] = {BAT_DP_C1, BAT_DP_C3, BAT_DP_C4, BAT_DP_C5, BAT_DP_C6};
            bat_rk_sum(n, x_old, x, dt, 5, weights, sol);
            f(t + dt, (const double*)x_old, dxdt_old);
            const double dc[6] = {BAT_DP_DC1, BAT_DP_DC3, BAT_DP_DC4, BAT_DP_DC5, BAT_DP_DC6, BAT_DP_DC7};
            bat_rk_sum(n, xerr, nullptr, dt, 6, dc, sol);
            const double err = bat_ode_error(n, xerr, x, dd, dt, rtol, atol);
            const double h = dt;
            const bool accepted = bat_ode_control(err, &dt);
            if (accepted) t += h;
            if (tries >= 500) { *fail_time = t; return BAT_ODE_TOO_SMALL; }
            ++tries;
            if (accepted) break;
        }
        double* s = x; x = x_old; x_old = s;
        s = dxdt; dxdt = dxdt_old; dxdt_old = s;
        if (!bat_ode_all_finite(n, x) || !bat_ode_all_finite(n, dxdt)) {
            *fail_time = t;
            return BAT_ODE_NON_FINITE;
        }
    }
    return 0;
}
// bat_math::ode::cash_karp::integrate_times: as bat_dopri5, with
// w: BAT_CASH_KARP_WORK(n) doubles.
template <class F, class O>
__device__ int bat_cash_karp(F& f, O& observe, int n, double* w, const double* z0, double t0,
                             const double* ts, int nt, double rtol, double atol,
                             long long max_steps, double* fail_time) {
    double* x = w;
    double* dxdt = w + n;
    double* k2 = w + 2 * n;
    double* k3 = w + 3 * n;
    double* k4 = w + 4 * n;
    double* k5 = w + 5 * n;
    double* k6 = w + 6 * n;
    double* x_tmp = w + 7 * n;
    double* x_new = w + 8 * n;
    double* xerr = w + 9 * n;
    for (int i = 0; i < BAT_CASH_KARP_WORK(n); ++i) w[i] = 0.0;
    for (int i = 0; i < n; ++i) x[i] = z0[i];
    double t = t0, dt = 0.1;
    for (int next = 0; next < nt; ++next) {
        const double target = ts[next];
        // Accepted steps since the last output (Boost's max_step_checker).
        long long steps = 0;
        int failed = 0;
        while (target - t > 2.220446049250313e-16) {
            // Rust's f64::min and f64::max (fmin, fmax: NaN ignored).
            const double current = fmin(dt, target - t);
            f(t, (const double*)x, dxdt);
            const double* d = dxdt;
            const double c[5] = {BAT_CK_A2, BAT_CK_A3, BAT_CK_A4, BAT_CK_A5, BAT_CK_A6};
            const double b[15] = {BAT_CK_B21,
                                  BAT_CK_B31, BAT_CK_B32,
                                  BAT_CK_B41, BAT_CK_B42, BAT_CK_B43,
                                  BAT_CK_B51, BAT_CK_B52, BAT_CK_B53, BAT_CK_B54,
                                  BAT_CK_B61, BAT_CK_B62, BAT_CK_B63, BAT_CK_B64, BAT_CK_B65};
            double* const k[5] = {k2, k3, k4, k5, k6};
            bat_rk_stages(f, n, x, d, t, current, c, b, k, x_tmp);
            const double* sol[4] = {d, k3, k4, k6};
            const double weights[4] = {BAT_CK_C1, BAT_CK_C3, BAT_CK_C4, BAT_CK_C6};
            bat_rk_sum(n, x_new, x, current, 4, weights, sol);
            const double* err_terms[5] = {d, k3, k4, k5, k6};
            const double dc[5] = {BAT_CK_DC1, BAT_CK_DC3, BAT_CK_DC4, BAT_CK_DC5, BAT_CK_DC6};
            bat_rk_sum(n, xerr, nullptr, current, 5, dc, err_terms);
            const double err = bat_ode_error(n, xerr, x, d, current, rtol, atol);
            double next_dt = current;
            if (bat_ode_control(err, &next_dt)) {
                t += current;
                double* s = x; x = x_new; x_new = s;
                if (!bat_ode_all_finite(n, x)) { *fail_time = t; return BAT_ODE_NON_FINITE; }
                ++steps;
                if (steps > max_steps) { *fail_time = target; return BAT_ODE_MAX_STEPS; }
                failed = 0;
                dt = fmax(dt, next_dt);
            } else {
                if (failed >= 500) { *fail_time = t; return BAT_ODE_TOO_SMALL; }
                ++failed;
                dt = next_dt;
            }
        }
        observe(next, (const double*)x);
    }
    return 0;
}
"#;
