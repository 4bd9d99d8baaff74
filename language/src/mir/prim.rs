//! The primitive operations: the only computations the MIR performs.
//!
//! Each primitive has a value rule (scalar interpreter), a derivative rule
//! (AD) and a kernel in every backend. Elementwise primitives apply to
//! scalars and to every container type (broadcasting a scalar operand
//! against a container, as Stan's vectorised functions do); the kernel is
//! chosen from the operand types, so one `Prim` covers `exp(real)` and
//! `exp(matrix)`. Library functions that are not primitives are expanded
//! into these by `mir::library`.

use std::fmt;

macro_rules! prims {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal ),* $(,)?) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Prim {
            $( $(#[$doc])* $variant ),*
        }

        impl Prim {
            pub const ALL: &'static [Prim] = &[$(Prim::$variant),*];

            /// The Stan-level name used when printing MIR.
            pub fn name(self) -> &'static str {
                match self { $(Prim::$variant => $name),* }
            }
        }
    };
}

prims! {
    // ---- arithmetic and logic (operators)
    /// `a + b`, elementwise with scalar broadcast.
    Add => "add",
    Sub => "subtract",
    /// `-a`
    Neg => "minus",
    /// `a * b`: scalar product, scalar×container, or matrix product
    /// (matrix×vector, row_vector×matrix, row_vector×vector, matrix×matrix).
    Mul => "multiply",
    /// `a / b` with scalar `b`, or int division rounding toward zero on ints.
    Div => "divide",
    /// `a %/% b` on ints.
    IntDiv => "int_divide",
    /// `a % b` on ints.
    Mod => "modulus",
    EltMul => "elt_multiply",
    EltDiv => "elt_divide",
    /// `a \ b` = inverse(a) * b.
    LeftDiv => "mdivide_left",
    /// `a ^ b` (real) and `a .^ b` (elementwise).
    Pow => "pow",
    Transpose => "transpose",
    Eq => "equal",
    Neq => "not_equal",
    Lt => "less",
    Leq => "less_or_equal",
    Gt => "greater",
    Geq => "greater_or_equal",
    Not => "logical_negation",

    // ---- elementwise unary math
    Exp => "exp",
    Exp2 => "exp2",
    Expm1 => "expm1",
    Log => "log",
    Log2 => "log2",
    Log10 => "log10",
    Log1p => "log1p",
    Log1m => "log1m",
    Log1pExp => "log1p_exp",
    Log1mExp => "log1m_exp",
    Sqrt => "sqrt",
    Cbrt => "cbrt",
    Square => "square",
    Inv => "inv",
    InvSqrt => "inv_sqrt",
    InvSquare => "inv_square",
    Abs => "abs",
    Floor => "floor",
    Ceil => "ceil",
    Round => "round",
    Trunc => "trunc",
    Sin => "sin",
    Cos => "cos",
    Tan => "tan",
    Asin => "asin",
    Acos => "acos",
    Atan => "atan",
    Sinh => "sinh",
    Cosh => "cosh",
    Tanh => "tanh",
    Asinh => "asinh",
    Acosh => "acosh",
    Atanh => "atanh",
    Logit => "logit",
    InvLogit => "inv_logit",
    LogInvLogit => "log_inv_logit",
    Log1mInvLogit => "log1m_inv_logit",
    InvCloglog => "inv_cloglog",
    Lgamma => "lgamma",
    Digamma => "digamma",
    Trigamma => "trigamma",
    Tgamma => "tgamma",
    Erf => "erf",
    Erfc => "erfc",
    Phi => "Phi",
    PhiApprox => "Phi_approx",
    InvPhi => "inv_Phi",
    /// log Φ(x), accurate in both tails (Stan's `std_normal_lcdf`).
    LogPhi => "std_normal_log_cdf",
    /// `step(x)`: 1 if x ≥ 0 (Stan's definition), else 0.
    Step => "step",
    IsNan => "is_nan",
    IsInf => "is_inf",

    // ---- elementwise binary math
    Atan2 => "atan2",
    Fmax => "fmax",
    Fmin => "fmin",
    Fdim => "fdim",
    Fmod => "fmod",
    Hypot => "hypot",
    /// `log_sum_exp(a, b)` of two scalars (elementwise).
    LogSumExp2 => "log_sum_exp",
    LogDiffExp => "log_diff_exp",
    Lbeta => "lbeta",
    Lchoose => "lchoose",
    LogFallingFactorial => "log_falling_factorial",
    LogRisingFactorial => "log_rising_factorial",
    /// `log_inv_logit_diff(a, b)`
    LogInvLogitDiff => "log_inv_logit_diff",
    /// Regularized incomplete gamma P(a, x).
    GammaP => "gamma_p",
    GammaQ => "gamma_q",
    /// Regularized incomplete beta I_x(a, b) as `inc_beta(a, b, x)`.
    IncBeta => "inc_beta",
    /// `binary_log_loss(y, y_hat)`
    BinaryLogLoss => "binary_log_loss",
    /// `multiply_log(a, b)` = a * log(b), 0 when a = b = 0.
    MultiplyLog => "multiply_log",
    /// `lmultiply(a, b)`, same as multiply_log.
    Lmultiply => "lmultiply",
    /// `choose(n, k)` on ints (an int; overflow is an error).
    Choose => "choose",
    /// `fma(a, b, c)` = a * b + c.
    Fma => "fma",

    // ---- reductions
    Sum => "sum",
    Prod => "prod",
    Mean => "mean",
    Variance => "variance",
    Sd => "sd",
    /// `log_sum_exp(container)`
    LogSumExp => "log_sum_exp",
    Max => "max",
    Min => "min",
    DotSelf => "dot_self",
    DotProduct => "dot_product",
    Norm1 => "norm1",
    Norm2 => "norm2",
    Softmax => "softmax",
    LogSoftmax => "log_softmax",
    CumulativeSum => "cumulative_sum",

    // ---- linear algebra
    CholeskyDecompose => "cholesky_decompose",
    /// Solve L x = b with lower-triangular L.
    MdivideLeftTriLow => "mdivide_left_tri_low",
    /// Solve x L = b with lower-triangular L.
    MdivideRightTriLow => "mdivide_right_tri_low",
    MdivideRight => "mdivide_right",
    LogDeterminant => "log_determinant",
    Inverse => "inverse",
    Crossprod => "crossprod",
    Tcrossprod => "tcrossprod",
    MultiplyLowerTriSelfTranspose => "multiply_lower_tri_self_transpose",
    DiagMatrix => "diag_matrix",
    Diagonal => "diagonal",
    DiagPreMultiply => "diag_pre_multiply",
    DiagPostMultiply => "diag_post_multiply",
    QuadForm => "quad_form",
    QuadFormDiag => "quad_form_diag",
    EigenvaluesSym => "eigenvalues_sym",
    EigenvectorsSym => "eigenvectors_sym",
    /// `gp_exp_quad_cov(x, alpha, rho)`
    GpExpQuadCov => "gp_exp_quad_cov",

    // ---- construction, shape and slicing
    RepVector => "rep_vector",
    RepRowVector => "rep_row_vector",
    RepMatrix => "rep_matrix",
    RepArray => "rep_array",
    ToVector => "to_vector",
    ToRowVector => "to_row_vector",
    ToMatrix => "to_matrix",
    ToArray1d => "to_array_1d",
    ToInt => "to_int",
    ToComplex => "to_complex",
    GetReal => "get_real",
    GetImag => "get_imag",
    AppendRow => "append_row",
    AppendCol => "append_col",
    AppendArray => "append_array",
    Segment => "segment",
    Head => "head",
    Tail => "tail",
    Block => "block",
    Col => "col",
    Row => "row",
    Reverse => "reverse",
    Sort => "sort_asc",
    SortDesc => "sort_desc",
    Size => "size",
    Rows => "rows",
    Cols => "cols",
    NumElements => "num_elements",
    /// `dims(x)`: the sizes of every dimension, as an int array.
    Dims => "dims",
    Linspaced => "linspaced_vector",
    OneHot => "one_hot_vector",
    Zeros => "zeros_vector",
    Ones => "ones_vector",

    // ---- argument checks of the distributions (Stan's domain errors).
    // Each evaluates to 0.0 (a term added to the density, with zero
    // derivative) or rejects the proposal naming argument `k` (the
    // optional second operand, an int literal).
    CheckPositiveFinite => "check_positive_finite",
    CheckPositive => "check_positive",
    CheckNonNegative => "check_nonnegative",
    CheckFinite => "check_finite",
    CheckNotNan => "check_not_nan",
    /// 0 ≤ x ≤ 1.
    CheckProbability => "check_probability",
    /// Integer variates of mass functions: ≥ 0.
    CheckNonNegativeInt => "check_nonnegative_int",

    // ---- random number generators (generated quantities only); a
    // container argument gives an array of independent draws.
    NormalRng => "normal_rng",
    LognormalRng => "lognormal_rng",
    UniformRng => "uniform_rng",
    ExponentialRng => "exponential_rng",
    GammaRng => "gamma_rng",
    BetaRng => "beta_rng",
    StudentTRng => "student_t_rng",
    CauchyRng => "cauchy_rng",
    BernoulliRng => "bernoulli_rng",
    BernoulliLogitRng => "bernoulli_logit_rng",
    BinomialRng => "binomial_rng",
    PoissonRng => "poisson_rng",
    PoissonLogRng => "poisson_log_rng",
    CategoricalRng => "categorical_rng",
    CategoricalLogitRng => "categorical_logit_rng",
    NegBinomial2Rng => "neg_binomial_2_rng",
    NegBinomial2LogRng => "neg_binomial_2_log_rng",
    DoubleExponentialRng => "double_exponential_rng",
    LogisticRng => "logistic_rng",
    WeibullRng => "weibull_rng",
    ChiSquareRng => "chi_square_rng",
    InvGammaRng => "inv_gamma_rng",
    GumbelRng => "gumbel_rng",

    // ---- constants
    Pi => "pi",
    E => "e",
    NotANumber => "not_a_number",
    PositiveInfinity => "positive_infinity",
    NegativeInfinity => "negative_infinity",
    MachinePrecision => "machine_precision",
}

impl Prim {
    /// Does this primitive draw random numbers (an `_rng` function)?
    pub fn is_rng(self) -> bool {
        use Prim::*;
        matches!(
            self,
            NormalRng
                | LognormalRng
                | UniformRng
                | ExponentialRng
                | GammaRng
                | BetaRng
                | StudentTRng
                | CauchyRng
                | BernoulliRng
                | BernoulliLogitRng
                | BinomialRng
                | PoissonRng
                | PoissonLogRng
                | CategoricalRng
                | CategoricalLogitRng
                | NegBinomial2Rng
                | NegBinomial2LogRng
                | DoubleExponentialRng
                | LogisticRng
                | WeibullRng
                | ChiSquareRng
                | InvGammaRng
                | GumbelRng
        )
    }
}

impl Prim {
    /// The scalar value and derivative rule that bat-math has for this
    /// primitive, applied elementwise (its arity is the number of operands
    /// it takes); `None` where the primitive is not elementwise over
    /// scalars (reductions, linear algebra, checks, RNGs, ...), whose rules
    /// live with each executor.
    pub fn scalar_rule(self) -> Option<bat_math::Primitive> {
        use Prim::*;
        use bat_math::Primitive as P;
        Some(match self {
            Add => P::Add,
            Sub => P::Sub,
            Neg => P::Neg,
            Mul => P::Mul,
            Div => P::Div,
            Pow => P::Pow,
            Exp => P::Exp,
            Exp2 => P::Exp2,
            Expm1 => P::Expm1,
            Log => P::Log,
            Log2 => P::Log2,
            Log10 => P::Log10,
            Log1p => P::Log1p,
            Log1m => P::Log1m,
            Log1pExp => P::Log1pExp,
            Log1mExp => P::Log1mExp,
            Sqrt => P::Sqrt,
            Cbrt => P::Cbrt,
            Square => P::Square,
            Inv => P::Inv,
            InvSqrt => P::InvSqrt,
            InvSquare => P::InvSquare,
            Abs => P::Fabs,
            Floor => P::Floor,
            Ceil => P::Ceil,
            Round => P::Round,
            Trunc => P::Trunc,
            Sin => P::Sin,
            Cos => P::Cos,
            Tan => P::Tan,
            Asin => P::Asin,
            Acos => P::Acos,
            Atan => P::Atan,
            Sinh => P::Sinh,
            Cosh => P::Cosh,
            Tanh => P::Tanh,
            Asinh => P::Asinh,
            Acosh => P::Acosh,
            Atanh => P::Atanh,
            Logit => P::Logit,
            InvLogit => P::InvLogit,
            LogInvLogit => P::LogInvLogit,
            Log1mInvLogit => P::Log1mInvLogit,
            InvCloglog => P::InvCloglog,
            Lgamma => P::Lgamma,
            Digamma => P::Digamma,
            Trigamma => P::Trigamma,
            Tgamma => P::Tgamma,
            Erf => P::Erf,
            Erfc => P::Erfc,
            Phi => P::Phi,
            PhiApprox => P::PhiApprox,
            InvPhi => P::InvPhi,
            LogPhi => P::LogPhi,
            Atan2 => P::Atan2,
            Fmax => P::Fmax,
            Fmin => P::Fmin,
            Fdim => P::Fdim,
            Fmod => P::Fmod,
            Hypot => P::Hypot,
            LogSumExp2 => P::LogSumExp,
            LogDiffExp => P::LogDiffExp,
            Lbeta => P::Lbeta,
            Lchoose => P::Lchoose,
            LogFallingFactorial => P::LogFallingFactorial,
            LogRisingFactorial => P::LogRisingFactorial,
            LogInvLogitDiff => P::LogInvLogitDiff,
            GammaP => P::GammaP,
            GammaQ => P::GammaQ,
            IncBeta => P::IncBeta,
            BinaryLogLoss => P::BinaryLogLoss,
            MultiplyLog => P::Lmultiply,
            Lmultiply => P::Lmultiply,
            Fma => P::Fma,
            _ => return None,
        })
    }
}

impl fmt::Display for Prim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Prim;
    use bat_math::Primitive;

    /// The name bat-math gives the primitive (Stan's math library's
    /// names, where the language's differ).
    fn math_name(p: Prim) -> &'static str {
        match p {
            Prim::Abs => "fabs",
            Prim::LogPhi => "log_Phi",
            Prim::MultiplyLog => "lmultiply",
            other => other.name(),
        }
    }

    #[test]
    fn scalar_rules_are_the_math_primitives_of_the_same_name() {
        for &p in Prim::ALL {
            let same_name = Primitive::ALL
                .iter()
                .copied()
                .find(|m| m.name() == math_name(p));
            // `log_sum_exp` of one container is a reduction, not the
            // two-scalar rule of that name (`LogSumExp2`).
            let expected = if p == Prim::LogSumExp {
                None
            } else {
                same_name
            };
            assert_eq!(p.scalar_rule(), expected, "{p:?}");
        }
    }
}
