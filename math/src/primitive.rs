//! The table of scalar primitives an AD pass differentiates through.
//!
//! Every primitive has a Stan name, an arity, a value rule ([`Primitive::eval`])
//! and a derivative rule ([`Primitive::grad`]) giving ∂f/∂argᵢ for each
//! argument. Arguments that Stan requires to be data/integers (the order of a
//! Bessel function, the `k` of `lmgamma`, the `n` of `falling_factorial`) get
//! a partial of 0.

use crate::scalar::*;
use smallvec::{SmallVec, smallvec};

/// Partials of a primitive w.r.t. its arguments, in argument order.
pub type Partials = SmallVec<[f64; 3]>;

macro_rules! primitives {
    ($($variant:ident => $name:literal, $arity:literal;)*) => {
        /// A scalar primitive operation.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Primitive { $($variant,)* }

        impl Primitive {
            /// Every primitive, in declaration order.
            pub const ALL: &'static [Primitive] = &[$(Primitive::$variant,)*];

            /// The Stan function name (operators use Stan's internal names).
            pub fn name(self) -> &'static str {
                match self { $(Primitive::$variant => $name,)* }
            }

            /// Number of scalar arguments.
            pub fn arity(self) -> usize {
                match self { $(Primitive::$variant => $arity,)* }
            }
        }
    };
}

primitives! {
    Neg => "minus", 1;
    Exp => "exp", 1;
    Exp2 => "exp2", 1;
    Expm1 => "expm1", 1;
    Log => "log", 1;
    Log2 => "log2", 1;
    Log10 => "log10", 1;
    Log1p => "log1p", 1;
    Log1m => "log1m", 1;
    Sqrt => "sqrt", 1;
    Cbrt => "cbrt", 1;
    Square => "square", 1;
    Inv => "inv", 1;
    InvSqrt => "inv_sqrt", 1;
    InvSquare => "inv_square", 1;
    Fabs => "fabs", 1;
    Sin => "sin", 1;
    Cos => "cos", 1;
    Tan => "tan", 1;
    Asin => "asin", 1;
    Acos => "acos", 1;
    Atan => "atan", 1;
    Sinh => "sinh", 1;
    Cosh => "cosh", 1;
    Tanh => "tanh", 1;
    Asinh => "asinh", 1;
    Acosh => "acosh", 1;
    Atanh => "atanh", 1;
    Log1pExp => "log1p_exp", 1;
    Log1mExp => "log1m_exp", 1;
    Logit => "logit", 1;
    InvLogit => "inv_logit", 1;
    LogInvLogit => "log_inv_logit", 1;
    Log1mInvLogit => "log1m_inv_logit", 1;
    InvCloglog => "inv_cloglog", 1;
    Lgamma => "lgamma", 1;
    Tgamma => "tgamma", 1;
    Digamma => "digamma", 1;
    Trigamma => "trigamma", 1;
    Erf => "erf", 1;
    Erfc => "erfc", 1;
    InvErfc => "inv_erfc", 1;
    Phi => "Phi", 1;
    PhiApprox => "Phi_approx", 1;
    InvPhi => "inv_Phi", 1;
    LogPhi => "log_Phi", 1;
    StdNormalLpdf => "std_normal_lpdf", 1;
    Floor => "floor", 1;
    Ceil => "ceil", 1;
    Round => "round", 1;
    Trunc => "trunc", 1;
    Add => "add", 2;
    Sub => "subtract", 2;
    Mul => "multiply", 2;
    Div => "divide", 2;
    Pow => "pow", 2;
    Hypot => "hypot", 2;
    Atan2 => "atan2", 2;
    Fmin => "fmin", 2;
    Fmax => "fmax", 2;
    Fdim => "fdim", 2;
    Fmod => "fmod", 2;
    LogSumExp => "log_sum_exp", 2;
    LogDiffExp => "log_diff_exp", 2;
    Lbeta => "lbeta", 2;
    Beta => "beta", 2;
    Lmultiply => "lmultiply", 2;
    LogInvLogitDiff => "log_inv_logit_diff", 2;
    BinaryLogLoss => "binary_log_loss", 2;
    Lchoose => "lchoose", 2;
    LogFallingFactorial => "log_falling_factorial", 2;
    LogRisingFactorial => "log_rising_factorial", 2;
    FallingFactorial => "falling_factorial", 2;
    RisingFactorial => "rising_factorial", 2;
    Lmgamma => "lmgamma", 2;
    GammaP => "gamma_p", 2;
    GammaQ => "gamma_q", 2;
    OwensT => "owens_t", 2;
    LogModifiedBesselFirstKind => "log_modified_bessel_first_kind", 2;
    ModifiedBesselFirstKind => "modified_bessel_first_kind", 2;
    ModifiedBesselSecondKind => "modified_bessel_second_kind", 2;
    BesselFirstKind => "bessel_first_kind", 2;
    BesselSecondKind => "bessel_second_kind", 2;
    LogMix => "log_mix", 3;
    IncBeta => "inc_beta", 3;
    Fma => "fma", 3;
}

impl Primitive {
    /// Arguments Stan requires to be integers or data (their partial is
    /// always 0; an AD pass need not propagate into them).
    pub fn data_only_args(self) -> &'static [usize] {
        use Primitive as P;
        match self {
            P::Lmgamma
            | P::LogModifiedBesselFirstKind
            | P::ModifiedBesselFirstKind
            | P::ModifiedBesselSecondKind
            | P::BesselFirstKind
            | P::BesselSecondKind
            | P::BinaryLogLoss => &[0],
            P::FallingFactorial | P::RisingFactorial => &[1],
            _ => &[],
        }
    }

    /// The value of the primitive at `args` (`args.len() == self.arity()`).
    pub fn eval(self, args: &[f64]) -> f64 {
        debug_assert_eq!(args.len(), self.arity());
        use Primitive as P;
        let x = args[0];
        let y = || args[1];
        let z = || args[2];
        match self {
            P::Neg => -x,
            P::Exp => x.exp(),
            P::Exp2 => x.exp2(),
            P::Expm1 => x.exp_m1(),
            P::Log => x.ln(),
            P::Log2 => x.log2(),
            P::Log10 => x.log10(),
            P::Log1p => x.ln_1p(),
            P::Log1m => log1m(x),
            P::Sqrt => x.sqrt(),
            P::Cbrt => x.cbrt(),
            P::Square => x * x,
            P::Inv => 1.0 / x,
            P::InvSqrt => 1.0 / x.sqrt(),
            P::InvSquare => 1.0 / (x * x),
            P::Fabs => x.abs(),
            P::Sin => x.sin(),
            P::Cos => x.cos(),
            P::Tan => x.tan(),
            P::Asin => x.asin(),
            P::Acos => x.acos(),
            P::Atan => x.atan(),
            P::Sinh => x.sinh(),
            P::Cosh => x.cosh(),
            P::Tanh => x.tanh(),
            P::Asinh => x.asinh(),
            P::Acosh => x.acosh(),
            P::Atanh => x.atanh(),
            P::Log1pExp => log1p_exp(x),
            P::Log1mExp => log1m_exp(x),
            P::Logit => logit(x),
            P::InvLogit => inv_logit(x),
            P::LogInvLogit => log_inv_logit(x),
            P::Log1mInvLogit => log1m_inv_logit(x),
            P::InvCloglog => -(-x.exp()).exp_m1(),
            P::Lgamma => lgamma(x),
            P::Tgamma => tgamma(x),
            P::Digamma => digamma(x),
            P::Trigamma => trigamma(x),
            P::Erf => erf(x),
            P::Erfc => erfc(x),
            P::InvErfc => inv_erfc(x),
            P::Phi => Phi(x),
            P::PhiApprox => Phi_approx(x),
            P::InvPhi => inv_Phi(x),
            P::LogPhi => log_Phi(x),
            P::StdNormalLpdf => -0.5 * x * x - HALF_LOG_TWO_PI,
            P::Floor => x.floor(),
            P::Ceil => x.ceil(),
            P::Round => x.round(),
            P::Trunc => x.trunc(),
            P::Add => x + y(),
            P::Sub => x - y(),
            P::Mul => x * y(),
            P::Div => x / y(),
            P::Pow => x.powf(y()),
            P::Hypot => x.hypot(y()),
            P::Atan2 => x.atan2(y()),
            P::Fmin => fmin(x, y()),
            P::Fmax => fmax(x, y()),
            P::Fdim => fdim(x, y()),
            P::Fmod => x % y(),
            P::LogSumExp => log_sum_exp2(x, y()),
            P::LogDiffExp => log_diff_exp(x, y()),
            P::Lbeta => lbeta(x, y()),
            P::Beta => beta(x, y()),
            P::Lmultiply => lmultiply(x, y()),
            P::LogInvLogitDiff => log_inv_logit_diff(x, y()),
            P::BinaryLogLoss => {
                if x != 0.0 {
                    -y().ln()
                } else {
                    -log1m(y())
                }
            }
            P::Lchoose => lchoose(x, y()),
            P::LogFallingFactorial => log_falling_factorial(x, y()),
            P::LogRisingFactorial => log_rising_factorial(x, y()),
            P::FallingFactorial => falling_factorial(x, y() as u32),
            P::RisingFactorial => rising_factorial(x, y() as u32),
            P::Lmgamma => lmgamma(x as u32, y()),
            P::GammaP => gamma_p(x, y()),
            P::GammaQ => gamma_q(x, y()),
            P::OwensT => owens_t(x, y()),
            P::LogModifiedBesselFirstKind => log_modified_bessel_first_kind(x, y()),
            P::ModifiedBesselFirstKind => modified_bessel_first_kind(x as i32, y()),
            P::ModifiedBesselSecondKind => modified_bessel_second_kind(x as i32, y()),
            P::BesselFirstKind => bessel_first_kind(x as i32, y()),
            P::BesselSecondKind => bessel_second_kind(x as i32, y()),
            P::LogMix => log_mix(x, y(), z()),
            P::IncBeta => inc_beta(x, y(), z()),
            P::Fma => x.mul_add(y(), z()),
        }
    }

    /// The partial derivatives of the primitive at `args`, one per argument.
    pub fn grad(self, args: &[f64]) -> Partials {
        debug_assert_eq!(args.len(), self.arity());
        use Primitive as P;
        let x = args[0];
        let y = || args[1];
        let z = || args[2];
        let pair = |(a, b): (f64, f64)| -> Partials { smallvec![a, b] };
        let one = |d: f64| -> Partials { smallvec![d] };
        match self {
            P::Neg => one(-1.0),
            P::Exp => one(x.exp()),
            P::Exp2 => one(x.exp2() * std::f64::consts::LN_2),
            P::Expm1 => one(x.exp()),
            P::Log => one(1.0 / x),
            P::Log2 => one(1.0 / (x * std::f64::consts::LN_2)),
            P::Log10 => one(1.0 / (x * std::f64::consts::LN_10)),
            P::Log1p => one(1.0 / (1.0 + x)),
            P::Log1m => one(log1m_d(x)),
            P::Sqrt => one(0.5 / x.sqrt()),
            P::Cbrt => one(1.0 / (3.0 * x.cbrt().powi(2))),
            P::Square => one(2.0 * x),
            P::Inv => one(-1.0 / (x * x)),
            P::InvSqrt => one(-0.5 / (x * x.sqrt())),
            P::InvSquare => one(-2.0 / (x * x * x)),
            P::Fabs => one(if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else if x == 0.0 {
                0.0
            } else {
                f64::NAN
            }),
            P::Sin => one(x.cos()),
            P::Cos => one(-x.sin()),
            P::Tan => one(1.0 + x.tan().powi(2)),
            P::Asin => one(1.0 / (1.0 - x * x).sqrt()),
            P::Acos => one(-1.0 / (1.0 - x * x).sqrt()),
            P::Atan => one(1.0 / (1.0 + x * x)),
            P::Sinh => one(x.cosh()),
            P::Cosh => one(x.sinh()),
            P::Tanh => one(1.0 - x.tanh().powi(2)),
            P::Asinh => one(1.0 / (x * x + 1.0).sqrt()),
            P::Acosh => one(1.0 / (x * x - 1.0).sqrt()),
            P::Atanh => one(1.0 / (1.0 - x * x)),
            P::Log1pExp => one(log1p_exp_d(x)),
            P::Log1mExp => one(log1m_exp_d(x)),
            P::Logit => one(logit_d(x)),
            P::InvLogit => one(inv_logit_d(x)),
            P::LogInvLogit => one(log_inv_logit_d(x)),
            P::Log1mInvLogit => one(log1m_inv_logit_d(x)),
            P::InvCloglog => one((x - x.exp()).exp()),
            P::Lgamma => one(lgamma_d(x)),
            P::Tgamma => one(tgamma_d(x)),
            P::Digamma => one(digamma_d(x)),
            P::Trigamma => one(trigamma_d(x)),
            P::Erf => one(erf_d(x)),
            P::Erfc => one(erfc_d(x)),
            P::InvErfc => one(inv_erfc_d(x)),
            P::Phi => one(Phi_d(x)),
            P::PhiApprox => one(Phi_approx_d(x)),
            P::InvPhi => one(inv_Phi_d(x)),
            P::LogPhi => one(log_Phi_d(x)),
            P::StdNormalLpdf => one(-x),
            P::Floor | P::Ceil | P::Round | P::Trunc => one(0.0),
            P::Add => pair((1.0, 1.0)),
            P::Sub => pair((1.0, -1.0)),
            P::Mul => pair((y(), x)),
            P::Div => pair((1.0 / y(), -x / (y() * y()))),
            P::Pow => pair(pow_grad(x, y())),
            P::Hypot => {
                let h = x.hypot(y());
                pair((x / h, y() / h))
            }
            P::Atan2 => {
                let r2 = x * x + y() * y();
                pair((y() / r2, -x / r2))
            }
            P::Fmin => pair(select_grad(fmin(x, y()) == x || y().is_nan())),
            P::Fmax => pair(select_grad(fmax(x, y()) == x || y().is_nan())),
            P::Fdim => pair(if x > y() { (1.0, -1.0) } else { (0.0, 0.0) }),
            P::Fmod => pair((1.0, -(x / y()).trunc())),
            P::LogSumExp => pair(log_sum_exp2_grad(x, y())),
            P::LogDiffExp => pair(log_diff_exp_grad(x, y())),
            P::Lbeta => pair(lbeta_grad(x, y())),
            P::Beta => pair(beta_grad(x, y())),
            P::Lmultiply => pair(lmultiply_grad(x, y())),
            P::LogInvLogitDiff => pair(log_inv_logit_diff_grad(x, y())),
            P::BinaryLogLoss => pair((
                0.0,
                if x != 0.0 {
                    -1.0 / y()
                } else {
                    1.0 / (1.0 - y())
                },
            )),
            P::Lchoose => pair(lchoose_grad(x, y())),
            P::LogFallingFactorial => pair(log_falling_factorial_grad(x, y())),
            P::LogRisingFactorial => pair(log_rising_factorial_grad(x, y())),
            P::FallingFactorial => pair((falling_factorial_d(x, y() as u32), 0.0)),
            P::RisingFactorial => pair((rising_factorial_d(x, y() as u32), 0.0)),
            P::Lmgamma => pair((0.0, lmgamma_d(x as u32, y()))),
            P::GammaP => pair(gamma_p_grad(x, y())),
            P::GammaQ => pair(gamma_q_grad(x, y())),
            P::OwensT => pair(owens_t_grad(x, y())),
            P::LogModifiedBesselFirstKind => pair((0.0, log_modified_bessel_first_kind_dz(x, y()))),
            P::ModifiedBesselFirstKind => pair((0.0, modified_bessel_first_kind_d(x as i32, y()))),
            P::ModifiedBesselSecondKind => {
                pair((0.0, modified_bessel_second_kind_d(x as i32, y())))
            }
            P::BesselFirstKind => pair((0.0, bessel_first_kind_d(x as i32, y()))),
            P::BesselSecondKind => pair((0.0, bessel_second_kind_d(x as i32, y()))),
            P::LogMix => {
                let (a, b, c) = log_mix_grad(x, y(), z());
                smallvec![a, b, c]
            }
            P::IncBeta => {
                let (a, b, c) = inc_beta_grad(x, y(), z());
                smallvec![a, b, c]
            }
            P::Fma => smallvec![y(), x, 1.0],
        }
    }
}

/// Stan's `fmin`: NaN arguments are ignored when the other is a number.
pub fn fmin(x: f64, y: f64) -> f64 {
    x.min(y)
}
/// Stan's `fmax`.
pub fn fmax(x: f64, y: f64) -> f64 {
    x.max(y)
}
/// Stan's `fdim`: `x - y` if `x > y`, else 0.
pub fn fdim(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x > y {
        x - y
    } else {
        0.0
    }
}

fn select_grad(first: bool) -> (f64, f64) {
    if first { (1.0, 0.0) } else { (0.0, 1.0) }
}

/// ∂/∂x, ∂/∂y of `x^y`; the y-partial is 0 at x = 0 (Stan's convention).
fn pow_grad(x: f64, y: f64) -> (f64, f64) {
    let dx = if y == 0.0 { 0.0 } else { y * x.powf(y - 1.0) };
    let dy = if x == 0.0 { 0.0 } else { x.powf(y) * x.ln() };
    (dx, dy)
}
