//! The elementwise primitives the CUDA code generator supports: each one's
//! value and partial derivatives as CUDA C over `double`s, written to
//! compute exactly what bat-math computes (the interpreter's reference),
//! so that kernels match the interpreter to rounding.

use language::mir::Prim;

/// A scalar primitive: `value` and `partials[k]` are C expressions in the
/// arguments `x`, `y`, `z` (helpers `bat_*` are defined in the prelude).
pub struct ScalarFn {
    pub prim: Prim,
    pub arity: usize,
    pub value: &'static str,
    pub partials: &'static [&'static str],
}

macro_rules! table {
    ($( $prim:ident / $arity:literal => $value:literal, [$($partial:literal),*]; )*) => {
        pub const SCALAR_FNS: &[ScalarFn] = &[
            $( ScalarFn { prim: Prim::$prim, arity: $arity, value: $value, partials: &[$($partial),*] }, )*
        ];
    };
}

table! {
    Add / 2 => "x + y", ["1.0", "1.0"];
    Sub / 2 => "x - y", ["1.0", "-1.0"];
    Neg / 1 => "-x", ["-1.0"];
    Mul / 2 => "x * y", ["y", "x"];
    Div / 2 => "x / y", ["1.0 / y", "-x / (y * y)"];
    EltMul / 2 => "x * y", ["y", "x"];
    EltDiv / 2 => "x / y", ["1.0 / y", "-x / (y * y)"];
    Pow / 2 => "pow(x, y)", ["y == 0.0 ? 0.0 : y * pow(x, y - 1.0)", "x == 0.0 ? 0.0 : pow(x, y) * log(x)"];
    Exp / 1 => "exp(x)", ["exp(x)"];
    Expm1 / 1 => "expm1(x)", ["exp(x)"];
    Log / 1 => "log(x)", ["1.0 / x"];
    Log1p / 1 => "log1p(x)", ["1.0 / (1.0 + x)"];
    Log1m / 1 => "bat_log1m(x)", ["-1.0 / (1.0 - x)"];
    Sqrt / 1 => "sqrt(x)", ["0.5 / sqrt(x)"];
    Square / 1 => "x * x", ["2.0 * x"];
    Inv / 1 => "1.0 / x", ["-1.0 / (x * x)"];
    InvSqrt / 1 => "1.0 / sqrt(x)", ["-0.5 / (x * sqrt(x))"];
    InvSquare / 1 => "1.0 / (x * x)", ["-2.0 / (x * x * x)"];
    Abs / 1 => "fabs(x)", ["bat_sign(x)"];
    Sin / 1 => "sin(x)", ["cos(x)"];
    Cos / 1 => "cos(x)", ["-sin(x)"];
    Atan / 1 => "atan(x)", ["1.0 / (1.0 + x * x)"];
    Sinh / 1 => "sinh(x)", ["cosh(x)"];
    Cosh / 1 => "cosh(x)", ["sinh(x)"];
    Tanh / 1 => "tanh(x)", ["1.0 - tanh(x) * tanh(x)"];
    Log1pExp / 1 => "bat_log1p_exp(x)", ["bat_inv_logit(x)"];
    Log1mExp / 1 => "bat_log1m_exp(x)", ["-1.0 / expm1(-x)"];
    Logit / 1 => "log(x / (1.0 - x))", ["1.0 / (x * (1.0 - x))"];
    InvLogit / 1 => "bat_inv_logit(x)", ["bat_inv_logit(x) * bat_inv_logit(-x)"];
    LogInvLogit / 1 => "bat_log_inv_logit(x)", ["bat_inv_logit(-x)"];
    Log1mInvLogit / 1 => "bat_log1m_inv_logit(x)", ["-bat_inv_logit(x)"];
    Fmax / 2 => "fmax(x, y)", ["(fmax(x, y) == x || y != y) ? 1.0 : 0.0", "(fmax(x, y) == x || y != y) ? 0.0 : 1.0"];
    Fmin / 2 => "fmin(x, y)", ["(fmin(x, y) == x || y != y) ? 1.0 : 0.0", "(fmin(x, y) == x || y != y) ? 0.0 : 1.0"];
    Hypot / 2 => "hypot(x, y)", ["x / hypot(x, y)", "y / hypot(x, y)"];
    Atan2 / 2 => "atan2(x, y)", ["y / (x * x + y * y)", "-x / (x * x + y * y)"];
    LogSumExp2 / 2 => "bat_log_sum_exp2(x, y)", ["bat_log_sum_exp2_d0(x, y)", "bat_log_sum_exp2_d0(y, x)"];
    Lmultiply / 2 => "bat_lmultiply(x, y)", ["log(y)", "x / y"];
    MultiplyLog / 2 => "bat_lmultiply(x, y)", ["log(y)", "x / y"];
    Floor / 1 => "floor(x)", ["0.0"];
    Ceil / 1 => "ceil(x)", ["0.0"];
    Trunc / 1 => "trunc(x)", ["0.0"];
    Fma / 3 => "bat_fma(x, y, z)", ["y", "x", "1.0"];
    Lt / 2 => "(x < y ? 1.0 : 0.0)", [];
    Leq / 2 => "(x <= y ? 1.0 : 0.0)", [];
    Gt / 2 => "(x > y ? 1.0 : 0.0)", [];
    Geq / 2 => "(x >= y ? 1.0 : 0.0)", [];
    Eq / 2 => "(x == y ? 1.0 : 0.0)", [];
    Neq / 2 => "(x != y ? 1.0 : 0.0)", [];
    Not / 1 => "(x == 0.0 ? 1.0 : 0.0)", [];
    Step / 1 => "(x < 0.0 ? 0.0 : 1.0)", [];
    IsNan / 1 => "(isnan(x) ? 1.0 : 0.0)", [];
    IsInf / 1 => "(isinf(x) ? 1.0 : 0.0)", [];
    Exp2 / 1 => "exp2(x)", ["exp2(x) * BAT_LN_2"];
    Log2 / 1 => "log2(x)", ["1.0 / (x * BAT_LN_2)"];
    Log10 / 1 => "log10(x)", ["1.0 / (x * BAT_LN_10)"];
    Cbrt / 1 => "cbrt(x)", ["1.0 / (3.0 * (cbrt(x) * cbrt(x)))"];
    Tan / 1 => "tan(x)", ["1.0 + tan(x) * tan(x)"];
    Asin / 1 => "asin(x)", ["1.0 / sqrt(1.0 - x * x)"];
    Acos / 1 => "acos(x)", ["-1.0 / sqrt(1.0 - x * x)"];
    Asinh / 1 => "asinh(x)", ["1.0 / sqrt(x * x + 1.0)"];
    Acosh / 1 => "acosh(x)", ["1.0 / sqrt(x * x - 1.0)"];
    Atanh / 1 => "atanh(x)", ["1.0 / (1.0 - x * x)"];
    Round / 1 => "round(x)", ["0.0"];
    InvCloglog / 1 => "1.0 - exp(-exp(x))", ["exp(x - exp(x))"];
    Lgamma / 1 => "lgamma(x)", ["bat_digamma(x)"];
    Digamma / 1 => "bat_digamma(x)", ["bat_trigamma(x)"];
    Trigamma / 1 => "bat_trigamma(x)", [];
    Tgamma / 1 => "tgamma(x)", ["tgamma(x) * bat_digamma(x)"];
    Erf / 1 => "erf(x)", ["bat_erf_d(x)"];
    Erfc / 1 => "erfc(x)", ["-bat_erf_d(x)"];
    Phi / 1 => "bat_Phi(x)", ["bat_std_normal_pdf(x)"];
    PhiApprox / 1 => "bat_inv_logit(0.07056 * (x * x * x) + 1.5976 * x)", ["bat_inv_logit(0.07056 * (x * x * x) + 1.5976 * x) * bat_inv_logit(-(0.07056 * (x * x * x) + 1.5976 * x)) * (3.0 * 0.07056 * x * x + 1.5976)"];
    InvPhi / 1 => "bat_inv_Phi(x)", ["1.0 / bat_std_normal_pdf(bat_inv_Phi(x))"];
    LogPhi / 1 => "bat_log_Phi(x)", ["exp(-0.5 * x * x - BAT_HALF_LOG_TWO_PI - bat_log_Phi(x))"];
    Fdim / 2 => "fmax(x - y, 0.0)", ["(x > y ? 1.0 : 0.0)", "(x > y ? -1.0 : 0.0)"];
    Fmod / 2 => "fmod(x, y)", ["1.0", "-trunc(x / y)"];
    LogDiffExp / 2 => "bat_log_diff_exp(x, y)", ["-1.0 / expm1(y - x)", "-1.0 / expm1(x - y)"];
    Lbeta / 2 => "bat_lbeta(x, y)", ["bat_digamma(x) - bat_digamma(x + y)", "bat_digamma(y) - bat_digamma(x + y)"];
    Lchoose / 2 => "bat_lchoose(x, y)", ["bat_digamma(x + 1.0) - bat_digamma(x - y + 1.0)", "bat_digamma(x - y + 1.0) - bat_digamma(y + 1.0)"];
    LogFallingFactorial / 2 => "(x < 0.0 ? BAT_NAN : lgamma(x + 1.0) - lgamma(x - y + 1.0))", ["bat_digamma(x + 1.0) - bat_digamma(x - y + 1.0)", "bat_digamma(x - y + 1.0)"];
    LogRisingFactorial / 2 => "(x < 0.0 ? BAT_NAN : lgamma(x + y) - lgamma(x))", ["bat_digamma(x + y) - bat_digamma(x)", "bat_digamma(x + y)"];
    LogInvLogitDiff / 2 => "bat_log_inv_logit_diff(x, y)", ["bat_inv_logit(-x) + 1.0 / expm1(x - y)", "-bat_inv_logit(y) - 1.0 / expm1(x - y)"];
    IncBeta / 3 => "bat_inc_beta(x, y, z)", ["bat_inc_beta_da(x, y, z)", "bat_inc_beta_db(x, y, z)", "bat_inc_beta_dx(x, y, z)"];
    BinaryLogLoss / 2 => "(x != 0.0 ? -log(y) : -bat_log1m(y))", ["0.0", "(x != 0.0 ? -1.0 / y : 1.0 / (1.0 - y))"];
}

pub fn scalar_fn(prim: Prim, arity: usize) -> Option<&'static ScalarFn> {
    SCALAR_FNS
        .iter()
        .find(|f| f.prim == prim && f.arity == arity)
}

/// The C function name of a primitive's value (`bat_exp`) or partial
/// (`bat_exp_d0`).
pub fn c_name(f: &ScalarFn, partial: Option<usize>) -> String {
    let base = format!("bat_p_{}_{}", f.prim.name(), f.arity);
    match partial {
        None => base,
        Some(k) => format!("{base}_d{k}"),
    }
}

/// The prelude every kernel file starts with: helpers, then one device
/// function per primitive value and partial.
pub fn prelude() -> String {
    let mut out = String::from(HELPERS);
    let params = ["double x", "double y", "double z"];
    for f in SCALAR_FNS {
        let params = params[..f.arity].join(", ");
        out.push_str(&format!(
            "__device__ inline double {}({params}) {{ return {}; }}\n",
            c_name(f, None),
            f.value
        ));
        for (k, partial) in f.partials.iter().enumerate() {
            out.push_str(&format!(
                "__device__ inline double {}({params}) {{ return {partial}; }}\n",
                c_name(f, Some(k))
            ));
        }
    }
    out
}

/// Helpers mirroring bat-math's scalar functions (same branches, same
/// constants).
const HELPERS: &str = r#"// Generated by bat (backend-cuda). One thread per active lane; lane state is
// structure-of-arrays: slot k of lane l is state[k * n_lanes + l] (unless
// BAT_SLOT says otherwise, below).
// BAT_SLOT(k): the index of slot k of lane `lane` in `state`; BAT_SLOT_STRIDE:
// the distance between a lane's consecutive slots. A host build (the native
// executor) defines both first, for lane-major state.
#ifndef BAT_SLOT
#define BAT_SLOT(k) ((long long)(k) * (long long)n_lanes + lane)
#define BAT_SLOT_STRIDE ((long long)n_lanes)
#endif
#define S(k) state[BAT_SLOT(k)]
#define D(k) data[(k)]
#define BAT_NAN (__longlong_as_double(0x7ff8000000000000LL))
#define BAT_INF (__longlong_as_double(0x7ff0000000000000LL))
#define BAT_LOG_EPSILON (-36.04365338911715)
#define BAT_LN_2 (0.6931471805599453)
#define BAT_LN_10 (2.302585092994046)
#define BAT_PI (3.141592653589793)
#define BAT_HALF_LOG_TWO_PI (0.9189385332046728)
#define BAT_SQRT_TWO_PI (2.5066282746310007)
#define BAT_FRAC_1_SQRT_2 (0.7071067811865476)
__device__ inline double bat_sign(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : (x == 0.0 ? 0.0 : BAT_NAN)); }
__device__ inline double bat_fma(double x, double y, double z) { return fma(x, y, z); }
__device__ inline double bat_log1m(double x) { return x > 1.0 ? BAT_NAN : log1p(-x); }
__device__ inline double bat_log1p_exp(double a) { return a > 0.0 ? a + log1p(exp(-a)) : log1p(exp(a)); }
__device__ inline double bat_log1m_exp(double a) {
    if (a > 0.0) return BAT_NAN;
    if (a > -BAT_LN_2) return log(-expm1(a));
    return bat_log1m(exp(a));
}
// bat-math's branch-free exp and log1p (scalar/branchless.rs), operation
// for operation (fma where it has mul_add), so that inv_logit and
// log_inv_logit give its bits: the C library's exp differs from them in
// the last bit for some arguments.
__device__ inline double bat_pow2(int k) { return __longlong_as_double((long long)(k + 1023) << 52); }
__device__ inline double bat_exp_nonpos(double x) {
    x = x < -746.0 ? -746.0 : x;
    const double shift = 6755399441055744.0;
    const double shifted = x * __longlong_as_double(0x3ff71547652b82feLL) + shift;
    const double kf = shifted - shift;
    const int k = (int)(unsigned int)((unsigned long long)__double_as_longlong(shifted) & 0xffffffffULL);
    const double hi = x - kf * __longlong_as_double(0x3fe62e42fee00000LL);
    const double lo = kf * __longlong_as_double(0x3dea39ef35793c76LL);
    const double r = hi - lo;
    const double r2 = r * r;
    const double r4 = r2 * r2;
    const double e = fma(r4,
        fma(r4, fma(r, __longlong_as_double(0x3e5af793aa928e77LL), __longlong_as_double(0x3e928a0204b22411LL)),
            fma(r2, fma(r, __longlong_as_double(0x3ec71dde87c6b792LL), __longlong_as_double(0x3efa019aa9410fe9LL)),
                fma(r, __longlong_as_double(0x3f2a01a01b674a68LL), __longlong_as_double(0x3f56c16c17cf4a9aLL)))),
        fma(r2, fma(r, __longlong_as_double(0x3f8111111110e57aLL), __longlong_as_double(0x3fa5555555553169LL)),
            fma(r, __longlong_as_double(0x3fc555555555555cLL), 0.5)));
    const double y = 1.0 - ((lo - r2 * e) - hi);
    const int k1 = k >> 1;
    return y * bat_pow2(k1) * bat_pow2(k - k1);
}
__device__ inline double bat_log1p_unit(double t) {
    const double u = 1.0 + t;
    const bool big = t > 1.4142135623730951 - 1.0;
    const double k = big ? 1.0 : 0.0;
    const double f = big ? u * 0.5 - 1.0 : t;
    const double c = big ? (t - (u - 1.0)) / u : 0.0;
    const double hfsq = 0.5 * f * f;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double z2 = z * z;
    const double z4 = z2 * z2;
    const double r = z * fma(z4,
        fma(z2, __longlong_as_double(0x3fc2f112df3e5244LL), fma(z, __longlong_as_double(0x3fc39a09d078c69fLL), __longlong_as_double(0x3fc7466496cb03deLL))),
        fma(z2, fma(z, __longlong_as_double(0x3fcc71c51d8e78afLL), __longlong_as_double(0x3fd2492494229359LL)),
            fma(z, __longlong_as_double(0x3fd999999997fa04LL), __longlong_as_double(0x3fe5555555555593LL))));
    return k * __longlong_as_double(0x3fe62e42fee00000LL)
        - ((hfsq - (s * (hfsq + r) + (k * __longlong_as_double(0x3dea39ef35793c76LL) + c))) - f);
}
__device__ inline double bat_inv_logit(double a) {
    const double e = bat_exp_nonpos(-fabs(a));
    const double q = (a < 0.0 ? e : 1.0) / (1.0 + e);
    return a < BAT_LOG_EPSILON ? e : q;
}
__device__ inline double bat_log_inv_logit(double u) {
    const double l = bat_log1p_unit(bat_exp_nonpos(-fabs(u)));
    return u < 0.0 ? u - l : -l;
}
__device__ inline double bat_log1m_inv_logit(double u) { return u > 0.0 ? -u - log1p(exp(-u)) : -log1p(exp(u)); }
__device__ inline double bat_log_sum_exp2(double a, double b) {
    if (a == -BAT_INF) return b;
    if (a == BAT_INF && b == BAT_INF) return BAT_INF;
    return a > b ? a + bat_log1p_exp(b - a) : b + bat_log1p_exp(a - b);
}
__device__ inline double bat_log_sum_exp2_d0(double a, double b) {
    if (a == -BAT_INF && b == -BAT_INF) return 0.0;
    return bat_inv_logit(a - b);
}
__device__ inline double bat_lmultiply(double x, double y) { return (x == 0.0 && y == 0.0) ? 0.0 : x * log(y); }
__device__ inline long long bat_ix(long long k, long long n, int* err) {
    if (k < 1 || k > n) { *err = 1; return 0; }
    return k - 1;
}
// ---- parameter transforms (bat-math's transforms/bounds.rs, affine.rs)
__device__ inline double bat_lb_constrain(double x, double lb, double* lj) {
    if (lb == -BAT_INF) { *lj = 0.0; return x; }
    *lj = x;
    return exp(x) + lb;
}
__device__ inline double bat_ub_constrain(double x, double ub, double* lj) {
    if (ub == BAT_INF) { *lj = 0.0; return x; }
    *lj = x;
    return ub - exp(x);
}
__device__ inline double bat_lub_constrain(double x, double lb, double ub, double* lj) {
    if (lb == -BAT_INF && ub == BAT_INF) { *lj = 0.0; return x; }
    if (lb == -BAT_INF) return bat_ub_constrain(x, ub, lj);
    if (ub == BAT_INF) return bat_lb_constrain(x, lb, lj);
    const double diff = ub - lb;
    *lj = log(diff) - fabs(x) - 2.0 * bat_log1p_exp(-fabs(x));
    return diff * bat_inv_logit(x) + lb;
}
__device__ inline double bat_affine_constrain(double x, double o, double m, double* lj) {
    *lj = log(m);
    return o + m * x;
}
__device__ inline double bat_lb_constrain_vjp(double x, double lb, double yb, double lpb, double* lbb) {
    if (lb == -BAT_INF) { *lbb = 0.0; return yb; }
    *lbb = yb;
    return yb * exp(x) + lpb;
}
__device__ inline double bat_ub_constrain_vjp(double x, double ub, double yb, double lpb, double* ubb) {
    if (ub == BAT_INF) { *ubb = 0.0; return yb; }
    *ubb = yb;
    return -yb * exp(x) + lpb;
}
// The same with the constrained value y at hand: at a zero bound, exp(x)
// is y (or −y) bit for bit (exp(x) ± 0 is exact), so the reverse sweep
// does not compute the exponential a second time (one of the two libm
// calls of a half-Cauchy scale's gradient).
__device__ inline double bat_lb_constrain_vjp_at(double x, double y, double lb, double yb, double lpb, double* lbb) {
    if (lb == -BAT_INF) { *lbb = 0.0; return yb; }
    *lbb = yb;
    return yb * (lb == 0.0 ? y : exp(x)) + lpb;
}
__device__ inline double bat_ub_constrain_vjp_at(double x, double y, double ub, double yb, double lpb, double* ubb) {
    if (ub == BAT_INF) { *ubb = 0.0; return yb; }
    *ubb = yb;
    return -yb * (ub == 0.0 ? -y : exp(x)) + lpb;
}
__device__ inline double bat_lub_constrain_vjp(double x, double lb, double ub, double yb, double lpb,
                                               double* lbb, double* ubb) {
    if (lb == -BAT_INF && ub == BAT_INF) { *lbb = 0.0; *ubb = 0.0; return yb; }
    if (lb == -BAT_INF) { *lbb = 0.0; return bat_ub_constrain_vjp(x, ub, yb, lpb, ubb); }
    if (ub == BAT_INF) { *ubb = 0.0; return bat_lb_constrain_vjp(x, lb, yb, lpb, lbb); }
    const double diff = ub - lb;
    const double s = bat_inv_logit(x);
    const double oms = bat_inv_logit(-x);
    *lbb = yb * oms - lpb / diff;
    *ubb = yb * s + lpb / diff;
    return yb * diff * s * oms + lpb * (oms - s);
}
__device__ inline double bat_affine_constrain_vjp(double x, double o, double m, double yb, double lpb,
                                                  double* ob, double* mb) {
    (void)o;
    *ob = yb;
    *mb = yb * x + lpb / m;
    return yb * m;
}
// ---- special functions (bat-math's scalar/gamma.rs, normal.rs, exp_log.rs)
__device__ inline bool bat_nonpositive_integer(double x) { return x <= 0.0 && x == floor(x); }
__device__ inline double bat_tan_pi(double x) { return tan(BAT_PI * (x - round(x))); }
__device__ inline double bat_sin_pi(double x) { return sin(BAT_PI * (x - 2.0 * round(x / 2.0))); }
__device__ double bat_digamma(double x) {
    if (isnan(x) || x == -BAT_INF || bat_nonpositive_integer(x)) return BAT_NAN;
    if (x == BAT_INF) return x;
    double acc = 0.0;
    if (x < 0.0) {
        // digamma(1 - x) - pi / tan_pi(x), with 1 - x > 1.
        acc = -BAT_PI / bat_tan_pi(x);
        x = 1.0 - x;
        double inner = 0.0;
        while (x < 10.0) { inner -= 1.0 / x; x += 1.0; }
        const double f = 1.0 / (x * x);
        const double series = f * (-1.0 / 12.0 + f * (1.0 / 120.0 + f * (-1.0 / 252.0 + f * (1.0 / 240.0
            + f * (-1.0 / 132.0 + f * (691.0 / 32760.0 + f * (-1.0 / 12.0)))))));
        return (inner + log(x) - 0.5 / x + series) + acc;
    }
    while (x < 10.0) { acc -= 1.0 / x; x += 1.0; }
    const double f = 1.0 / (x * x);
    const double series = f * (-1.0 / 12.0 + f * (1.0 / 120.0 + f * (-1.0 / 252.0 + f * (1.0 / 240.0
        + f * (-1.0 / 132.0 + f * (691.0 / 32760.0 + f * (-1.0 / 12.0)))))));
    return acc + log(x) - 0.5 / x + series;
}
__device__ double bat_trigamma_positive(double x) {
    double acc = 0.0;
    while (x < 10.0) { acc += 1.0 / (x * x); x += 1.0; }
    const double inv = 1.0 / x;
    const double f = inv * inv;
    const double series = inv * (1.0 + inv * 0.5 + f * (1.0 / 6.0 + f * (-1.0 / 30.0 + f * (1.0 / 42.0
        + f * (-1.0 / 30.0 + f * (5.0 / 66.0 + f * (-691.0 / 2730.0)))))));
    return acc + series;
}
__device__ double bat_trigamma(double x) {
    if (isnan(x) || x == -BAT_INF || bat_nonpositive_integer(x)) return BAT_NAN;
    if (x == BAT_INF) return 0.0;
    if (x < 0.0) {
        const double s = bat_sin_pi(x);
        return BAT_PI * BAT_PI / (s * s) - bat_trigamma_positive(1.0 - x);
    }
    return bat_trigamma_positive(x);
}
__device__ inline double bat_lgamma_stirling(double x) { return BAT_HALF_LOG_TWO_PI + (x - 0.5) * log(x) - x; }
__device__ double bat_lgamma_stirling_diff(double x) {
    if (isnan(x)) return BAT_NAN;
    if (x == 0.0) return BAT_INF;
    if (x < 10.0) return lgamma(x) - bat_lgamma_stirling(x);
    const double series[6] = {0.08333333333333333, -0.002777777777777778, 0.0007936507936507937,
                              -0.0005952380952380952, 0.0008417508417508418, -0.0019175269175269176};
    const double inv_sq = 1.0 / (x * x);
    double multiplier = 1.0 / x;
    double result = series[0] * multiplier;
    for (int k = 1; k < 6; ++k) { multiplier *= inv_sq; result += series[k] * multiplier; }
    return result;
}
__device__ double bat_lbeta(double a, double b) {
    if (isnan(a) || isnan(b)) return BAT_NAN;
    const double x = a < b ? a : b;
    const double y = a < b ? b : a;
    if (x == 0.0) return BAT_INF;
    if (isinf(y)) return -BAT_INF;
    if (y < 10.0) return lgamma(x) + lgamma(y) - lgamma(x + y);
    const double x_over_xy = x / (x + y);
    if (x < 10.0) {
        const double stirling_diff = bat_lgamma_stirling_diff(y) - bat_lgamma_stirling_diff(x + y);
        const double stirling = (y - 0.5) * bat_log1m(x_over_xy) + x * (1.0 - log(x + y));
        return stirling + lgamma(x) + stirling_diff;
    }
    const double stirling_diff = bat_lgamma_stirling_diff(x) + bat_lgamma_stirling_diff(y)
        - bat_lgamma_stirling_diff(x + y);
    const double stirling = (x - 0.5) * log(x_over_xy) + y * bat_log1m(x_over_xy) + BAT_HALF_LOG_TWO_PI
        - 0.5 * log(y);
    return stirling + stirling_diff;
}
__device__ double bat_lchoose(double n, double k) {
    if (isnan(n) || isnan(k)) return BAT_NAN;
    if (n > -1.0 && k > n / 2.0 + 1e-8) k = n - k;
    const double n_plus_1 = n + 1.0;
    const double n_plus_1_mk = n_plus_1 - k;
    if (n < -1.0 || k < -1.0 || n_plus_1_mk < 0.0) return BAT_NAN;
    if (k == 0.0) return 0.0;
    if (n_plus_1 < 10.0) return lgamma(n_plus_1) - lgamma(k + 1.0) - lgamma(n_plus_1_mk);
    return -bat_lbeta(n_plus_1_mk, k + 1.0) - log1p(n);
}
__device__ inline double bat_erf_d(double x) { return 2.0 / sqrt(BAT_PI) * exp(-x * x); }
__device__ inline double bat_std_normal_pdf(double x) { return exp(-0.5 * x * x) / BAT_SQRT_TWO_PI; }
__device__ inline double bat_Phi(double x) {
    if (isnan(x)) return BAT_NAN;
    if (x < -37.5) return 0.0;
    if (x < -5.0) return 0.5 * erfc(-BAT_FRAC_1_SQRT_2 * x);
    if (x > 8.25) return 1.0;
    return 0.5 * (1.0 + erf(BAT_FRAC_1_SQRT_2 * x));
}
__device__ double bat_log_Phi(double x) {
    if (isnan(x)) return BAT_NAN;
    if (x == BAT_INF) return 0.0;
    if (x == -BAT_INF) return -BAT_INF;
    if (x > 0.0) return log1p(-0.5 * erfc(BAT_FRAC_1_SQRT_2 * x));
    if (x > -30.0) return log(0.5 * erfc(-BAT_FRAC_1_SQRT_2 * x));
    const double inv_x2 = 1.0 / (x * x);
    double term = 1.0, sum = 1.0;
    for (int k = 1; k < 10; ++k) { term *= -(double)(2 * k - 1) * inv_x2; sum += term; }
    return -0.5 * x * x - BAT_HALF_LOG_TWO_PI - log(-x) + log(sum);
}
__device__ inline double bat_phi_minus(double x, double p) {
    if (x > 0.0) return (1.0 - p) - 0.5 * erfc(BAT_FRAC_1_SQRT_2 * x);
    return 0.5 * erfc(-BAT_FRAC_1_SQRT_2 * x) - p;
}
__device__ double bat_inv_Phi(double p) {
    const double A[6] = {-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269,
                         -30.66479806614716, 2.506628277459239};
    const double B[5] = {-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972,
                         -13.28068155288572};
    const double C[6] = {-0.007784894002430293, -0.3223964580411365, -2.400758277161838,
                         -2.549732539343734, 4.374664141464968, 2.938163982698783};
    const double D[4] = {0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416};
    if (!(p >= 0.0 && p <= 1.0)) return BAT_NAN;
    if (p < 8e-311) return -BAT_INF;
    if (p == 1.0) return BAT_INF;
    double x;
    if (p < 0.02425) {
        const double q = sqrt(-2.0 * log(p));
        x = (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0);
    } else if (p <= 0.97575) {
        const double q = p - 0.5;
        const double r = q * q;
        x = (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0);
    } else {
        const double q = sqrt(-2.0 * log1p(-p));
        x = -((((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
              / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0));
    }
    for (int k = 0; k < 2; ++k) {
        if (fabs(x) >= 37.6) break;
        const double u = bat_phi_minus(x, p) * BAT_SQRT_TWO_PI * exp(0.5 * x * x);
        x -= u / (1.0 + 0.5 * x * u);
    }
    return x;
}
__device__ double bat_log_diff_exp(double x, double y) {
    if (x <= y) return (x < BAT_INF && x == y) ? -BAT_INF : BAT_NAN;
    return x + bat_log1m_exp(y - x);
}
__device__ double bat_log_inv_logit_diff(double x, double y) {
    if (isinf(x) && x == y) return BAT_NAN;
    return bat_log_inv_logit(x) + bat_log1m_exp(y - x) + bat_log1m_inv_logit(y);
}
// ---- inc_beta and its partials (bat-math's scalar/incomplete.rs): the same
// continued fraction run on forward-mode dual numbers for the shape partials.
struct BatDual { double v, d; };
__device__ inline BatDual bat_dual(double v, double d) { BatDual r; r.v = v; r.d = d; return r; }
__device__ inline BatDual operator+(BatDual a, BatDual b) { return bat_dual(a.v + b.v, a.d + b.d); }
__device__ inline BatDual operator-(BatDual a, BatDual b) { return bat_dual(a.v - b.v, a.d - b.d); }
__device__ inline BatDual operator*(BatDual a, BatDual b) { return bat_dual(a.v * b.v, a.d * b.v + a.v * b.d); }
__device__ inline BatDual operator/(BatDual a, BatDual b) {
    return bat_dual(a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v));
}
__device__ inline BatDual operator-(BatDual a) { return bat_dual(-a.v, -a.d); }
__device__ inline BatDual operator+(BatDual a, double o) { return bat_dual(a.v + o, a.d); }
__device__ inline BatDual operator-(BatDual a, double o) { return bat_dual(a.v - o, a.d); }
__device__ inline BatDual operator*(BatDual a, double o) { return bat_dual(a.v * o, a.d * o); }
__device__ inline BatDual bat_dual_exp(BatDual a) { const double e = exp(a.v); return bat_dual(e, a.d * e); }
__device__ inline BatDual bat_dual_guard(BatDual v) { return fabs(v.v) < 1e-300 ? bat_dual(1e-300, v.d) : v; }
__device__ BatDual bat_beta_cf(BatDual a, BatDual b, double x) {
    const BatDual qab = a + b;
    const BatDual qap = a + 1.0;
    const BatDual qam = a - 1.0;
    const BatDual one = bat_dual(1.0, 0.0);
    BatDual c = one;
    BatDual d = bat_dual_guard(one - qab * x / qap);
    d = one / d;
    BatDual h = d;
    for (int mi = 1; mi < 100000; ++mi) {
        const double m = (double)mi;
        const double m2 = 2.0 * m;
        BatDual aa = (b - m) * (m * x) / ((qam + m2) * (a + m2));
        d = one / bat_dual_guard(one + aa * d);
        c = bat_dual_guard(one + aa / c);
        h = h * d * c;
        aa = -((a + m) * (qab + m)) * x / ((a + m2) * (qap + m2));
        d = one / bat_dual_guard(one + aa * d);
        c = bat_dual_guard(one + aa / c);
        const BatDual del = d * c;
        h = h * del;
        if (fabs(del.v - 1.0) < 1e-16 && fabs(del.d) <= 1e-16 * fmax(fabs(h.d / h.v), 1.0)) break;
    }
    return h;
}
__device__ BatDual bat_beta_log_front(BatDual a, BatDual b, double x) {
    const double dab = bat_digamma(a.v + b.v);
    const BatDual lbeta = bat_dual(bat_lbeta(a.v, b.v),
                                   a.d * (bat_digamma(a.v) - dab) + b.d * (bat_digamma(b.v) - dab));
    const BatDual naive = a * log(x) + b * log1p(-x) - lbeta;
    const double av = a.v, bv = b.v;
    if (av < 10.0 || bv < 10.0) return naive;
    const double sum = av + bv;
    const double delta = x * sum - av;
    const double v = av * log1p(delta / av) + bv * log1p(-delta / bv) + 0.5 * log(av * bv / sum)
        - BAT_HALF_LOG_TWO_PI
        - (bat_lgamma_stirling_diff(av) + bat_lgamma_stirling_diff(bv) - bat_lgamma_stirling_diff(sum));
    return bat_dual(v, naive.d);
}
__device__ BatDual bat_inc_beta_dual(BatDual a, BatDual b, double x) {
    if (x <= 0.0) return bat_dual(0.0, 0.0);
    if (x >= 1.0) return bat_dual(1.0, 0.0);
    const BatDual log_front = bat_beta_log_front(a, b, x);
    if (x < (a.v + 1.0) / (a.v + b.v + 2.0)) return bat_dual_exp(log_front) * bat_beta_cf(a, b, x) / a;
    return bat_dual(1.0, 0.0) - bat_dual_exp(log_front) * bat_beta_cf(b, a, 1.0 - x) / b;
}
__device__ inline bool bat_inc_beta_domain(double a, double b, double x) {
    return a > 0.0 && b > 0.0 && x >= 0.0 && x <= 1.0;
}
__device__ double bat_inc_beta(double a, double b, double x) {
    if (!bat_inc_beta_domain(a, b, x)) return BAT_NAN;
    return bat_inc_beta_dual(bat_dual(a, 0.0), bat_dual(b, 0.0), x).v;
}
__device__ double bat_inc_beta_da(double a, double b, double x) {
    if (!bat_inc_beta_domain(a, b, x)) return BAT_NAN;
    return bat_inc_beta_dual(bat_dual(a, 1.0), bat_dual(b, 0.0), x).d;
}
__device__ double bat_inc_beta_db(double a, double b, double x) {
    if (!bat_inc_beta_domain(a, b, x)) return BAT_NAN;
    return bat_inc_beta_dual(bat_dual(a, 0.0), bat_dual(b, 1.0), x).d;
}
__device__ double bat_inc_beta_dx(double a, double b, double x) {
    if (!bat_inc_beta_domain(a, b, x)) return BAT_NAN;
    if (x <= 0.0 || x >= 1.0) return ((x <= 0.0 && a < 1.0) || (x >= 1.0 && b < 1.0)) ? BAT_INF : 0.0;
    return exp(bat_beta_log_front(bat_dual(a, 0.0), bat_dual(b, 0.0), x).v - log(x) - log1p(-x));
}
"#;
