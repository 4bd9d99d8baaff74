//! The scalar functions of the elementwise primitives, exactly as the
//! interpreter applies them (`runtime`'s prims), for the batched
//! kernels: `unary!(p, f => body)` / `binary!(p, f => body)` evaluate
//! `body` with `f` bound to primitive `p`'s function (monomorphised per
//! primitive so the lane loops inline it), or give `None` when `p` is not
//! elementwise.

/// `$body` with `$f` bound to the scalar function of unary elementwise
/// primitive `$p` (the interpreter's), or `None`.
macro_rules! unary {
    ($p:expr, $f:ident => $body:expr) => {{
        use bat_math::scalar as m;
        use language::mir::Prim::*;
        match $p {
            Neg => {
                let $f = |x: f64| -x;
                $body
            }
            Exp => {
                let $f = f64::exp;
                $body
            }
            Exp2 => {
                let $f = f64::exp2;
                $body
            }
            Expm1 => {
                let $f = f64::exp_m1;
                $body
            }
            Log => {
                let $f = f64::ln;
                $body
            }
            Log2 => {
                let $f = f64::log2;
                $body
            }
            Log10 => {
                let $f = f64::log10;
                $body
            }
            Log1p => {
                let $f = f64::ln_1p;
                $body
            }
            Log1m => {
                let $f = m::log1m;
                $body
            }
            Log1pExp => {
                let $f = m::log1p_exp;
                $body
            }
            Log1mExp => {
                let $f = m::log1m_exp;
                $body
            }
            Sqrt => {
                let $f = f64::sqrt;
                $body
            }
            Cbrt => {
                let $f = f64::cbrt;
                $body
            }
            Square => {
                let $f = |x: f64| x * x;
                $body
            }
            Inv => {
                let $f = |x: f64| 1.0 / x;
                $body
            }
            InvSqrt => {
                let $f = |x: f64| 1.0 / x.sqrt();
                $body
            }
            InvSquare => {
                let $f = |x: f64| 1.0 / (x * x);
                $body
            }
            Abs => {
                let $f = f64::abs;
                $body
            }
            Floor => {
                let $f = f64::floor;
                $body
            }
            Ceil => {
                let $f = f64::ceil;
                $body
            }
            Round => {
                let $f = f64::round;
                $body
            }
            Trunc => {
                let $f = f64::trunc;
                $body
            }
            Sin => {
                let $f = f64::sin;
                $body
            }
            Cos => {
                let $f = f64::cos;
                $body
            }
            Tan => {
                let $f = f64::tan;
                $body
            }
            Asin => {
                let $f = f64::asin;
                $body
            }
            Acos => {
                let $f = f64::acos;
                $body
            }
            Atan => {
                let $f = f64::atan;
                $body
            }
            Sinh => {
                let $f = f64::sinh;
                $body
            }
            Cosh => {
                let $f = f64::cosh;
                $body
            }
            Tanh => {
                let $f = f64::tanh;
                $body
            }
            Asinh => {
                let $f = f64::asinh;
                $body
            }
            Acosh => {
                let $f = f64::acosh;
                $body
            }
            Atanh => {
                let $f = f64::atanh;
                $body
            }
            Logit => {
                let $f = m::logit;
                $body
            }
            InvLogit => {
                let $f = m::inv_logit;
                $body
            }
            LogInvLogit => {
                let $f = m::log_inv_logit;
                $body
            }
            Log1mInvLogit => {
                let $f = m::log1m_inv_logit;
                $body
            }
            InvCloglog => {
                let $f = |x: f64| 1.0 - (-x.exp()).exp();
                $body
            }
            Lgamma => {
                let $f = m::lgamma;
                $body
            }
            Digamma => {
                let $f = m::digamma;
                $body
            }
            Trigamma => {
                let $f = m::trigamma;
                $body
            }
            Tgamma => {
                let $f = m::tgamma;
                $body
            }
            Erf => {
                let $f = m::erf;
                $body
            }
            Erfc => {
                let $f = m::erfc;
                $body
            }
            Phi => {
                let $f = m::Phi;
                $body
            }
            PhiApprox => {
                let $f = m::Phi_approx;
                $body
            }
            InvPhi => {
                let $f = m::inv_Phi;
                $body
            }
            LogPhi => {
                let $f = m::log_Phi;
                $body
            }
            Step => {
                let $f = m::integer::step;
                $body
            }
            _ => None,
        }
    }};
}

/// As [`unary!`] for binary elementwise primitives.
macro_rules! binary {
    ($p:expr, $f:ident => $body:expr) => {{
        use bat_math::scalar as m;
        use language::mir::Prim::*;
        match $p {
            Add => {
                let $f = |x: f64, y: f64| x + y;
                $body
            }
            Sub => {
                let $f = |x: f64, y: f64| x - y;
                $body
            }
            Mul | EltMul => {
                let $f = |x: f64, y: f64| x * y;
                $body
            }
            Div | EltDiv => {
                let $f = |x: f64, y: f64| x / y;
                $body
            }
            Pow => {
                let $f = f64::powf;
                $body
            }
            Atan2 => {
                let $f = f64::atan2;
                $body
            }
            Fmax => {
                let $f = f64::max;
                $body
            }
            Fmin => {
                let $f = f64::min;
                $body
            }
            Fdim => {
                let $f = |x: f64, y: f64| (x - y).max(0.0);
                $body
            }
            Fmod => {
                let $f = |x: f64, y: f64| x % y;
                $body
            }
            Hypot => {
                let $f = f64::hypot;
                $body
            }
            LogSumExp2 => {
                let $f = m::log_sum_exp2;
                $body
            }
            LogDiffExp => {
                let $f = m::log_diff_exp;
                $body
            }
            Lbeta => {
                let $f = m::lbeta;
                $body
            }
            Lchoose => {
                let $f = m::lchoose;
                $body
            }
            LogFallingFactorial => {
                let $f = m::log_falling_factorial;
                $body
            }
            LogRisingFactorial => {
                let $f = m::log_rising_factorial;
                $body
            }
            LogInvLogitDiff => {
                let $f = m::log_inv_logit_diff;
                $body
            }
            GammaP => {
                let $f = m::gamma_p;
                $body
            }
            GammaQ => {
                let $f = m::gamma_q;
                $body
            }
            BinaryLogLoss => {
                let $f = |y: f64, p: f64| if y != 0.0 { -p.ln() } else { -m::log1m(p) };
                $body
            }
            MultiplyLog | Lmultiply => {
                let $f = m::lmultiply;
                $body
            }
            _ => None,
        }
    }};
}
