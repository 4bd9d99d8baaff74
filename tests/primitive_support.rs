//! Which executor runs which primitive: one table over every MIR
//! primitive (`Prim::ALL`) and every executor of a model's code.
//!
//! Each primitive has one example below, a statement of a small model
//! whose executed code contains the primitive (checked: an example that
//! the compiler folds away or expands into other primitives fails the
//! test). The executors:
//!
//! - `Derivative`: source-to-source AD (`language::ad`) has a rule for it
//!   (where it has none, the model is refused before any executor runs,
//!   so the other columns are not asked);
//! - `Interpreter`: the scalar reference interpreter (`runtime`), the
//!   log density and gradient, or the draw's generated quantities;
//! - `BackendCpu`: the batched CPU executors, which must give the
//!   interpreter's values bit for bit on every lane;
//! - `Generated`: the code generator (`codegen`) behind `--backend native`
//!   and `--backend cuda`, which must translate every op of the gradient
//!   program; the examples it translates are then compiled together (one
//!   g++ build) and must give backend-cpu's bits on every lane, each
//!   example compiled alone to name the culprit when they do not.
//!   Generated quantities always run on the host (the native sampler hands
//!   kept draws to backend-cpu), so `_rng` primitives are not asked of it.
//!
//! What an executor cannot run is listed in [`UNSUPPORTED`]. The test fails
//! when an executor refuses a pair the table does not list, or runs one it
//! does, so the table is always the current fact, and the failure message
//! says what changed and why.

use Block::*;
use Executor::*;
use language::data::DataFile;
use language::mir::visit::for_each_expr;
use language::mir::{ExprKind, Prim, Stmt};
use runtime::{Model, Rng};
use std::collections::BTreeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Executor {
    /// The derivative rule (`language::ad`): without it no executor is
    /// asked for the gradient.
    Derivative,
    Interpreter,
    BackendCpu,
    Generated,
}

enum Block {
    /// A statement of the model block.
    Model,
    /// The value of a generated quantity `real g`.
    GeneratedQuantities,
}

/// Parameters `a`, `b`, `c` (reals), `v`, `w` (vectors), `r` (a row
/// vector), `m` (a 3 × 3 matrix), all in (0.2, 0.8); data `xa`.
const EXAMPLES: &[(Prim, Block, &str)] = &[
    (Prim::Add, Model, "target += a + b;"),
    (Prim::Sub, Model, "target += a - b;"),
    (Prim::Neg, Model, "target += -a;"),
    (Prim::Mul, Model, "target += sum(m * v);"),
    (Prim::Div, Model, "target += a / b;"),
    (
        Prim::IntDiv,
        Model,
        "for (i in 1:3) target += (i %/% 2) * a;",
    ),
    (Prim::Mod, Model, "for (i in 1:3) target += (i % 2) * a;"),
    (Prim::EltMul, Model, "target += sum(v .* w);"),
    (Prim::EltDiv, Model, "target += sum(v ./ w);"),
    (
        Prim::LeftDiv,
        Model,
        "target += sum((m * m' + diag_matrix(rep_vector(1.0, 3))) \\ v);",
    ),
    (Prim::Pow, Model, "target += a ^ b;"),
    (Prim::Transpose, Model, "target += sum(m');"),
    (Prim::Eq, Model, "target += (a == b) * c;"),
    (Prim::Neq, Model, "target += (a != b) * c;"),
    (Prim::Lt, Model, "target += (a < b) * c;"),
    (Prim::Leq, Model, "target += (a <= b) * c;"),
    (Prim::Gt, Model, "target += (a > b) * c;"),
    (Prim::Geq, Model, "target += (a >= b) * c;"),
    (Prim::Not, Model, "target += (!(a < b)) * c;"),
    (Prim::Exp, Model, "target += exp(a);"),
    (Prim::Exp2, Model, "target += exp2(a);"),
    (Prim::Expm1, Model, "target += expm1(a);"),
    (Prim::Log, Model, "target += log(a);"),
    (Prim::Log2, Model, "target += log2(a);"),
    (Prim::Log10, Model, "target += log10(a);"),
    (Prim::Log1p, Model, "target += log1p(a);"),
    (Prim::Log1m, Model, "target += log1m(a);"),
    (Prim::Log1pExp, Model, "target += log1p_exp(a);"),
    (Prim::Log1mExp, Model, "target += log1m_exp(-a);"),
    (Prim::Sqrt, Model, "target += sqrt(a);"),
    (Prim::Cbrt, Model, "target += cbrt(a);"),
    (Prim::Square, Model, "target += square(a);"),
    (Prim::Inv, Model, "target += inv(a);"),
    (Prim::InvSqrt, Model, "target += inv_sqrt(a);"),
    (Prim::InvSquare, Model, "target += inv_square(a);"),
    (Prim::Abs, Model, "target += abs(a - 0.5);"),
    (Prim::Floor, Model, "target += floor(a * 10) * b;"),
    (Prim::Ceil, Model, "target += ceil(a * 10) * b;"),
    (Prim::Round, Model, "target += round(a * 10) * b;"),
    (Prim::Trunc, Model, "target += trunc(a * 10) * b;"),
    (Prim::Sin, Model, "target += sin(a);"),
    (Prim::Cos, Model, "target += cos(a);"),
    (Prim::Tan, Model, "target += tan(a);"),
    (Prim::Asin, Model, "target += asin(a);"),
    (Prim::Acos, Model, "target += acos(a);"),
    (Prim::Atan, Model, "target += atan(a);"),
    (Prim::Sinh, Model, "target += sinh(a);"),
    (Prim::Cosh, Model, "target += cosh(a);"),
    (Prim::Tanh, Model, "target += tanh(a);"),
    (Prim::Asinh, Model, "target += asinh(a);"),
    (Prim::Acosh, Model, "target += acosh(1 + a);"),
    (Prim::Atanh, Model, "target += atanh(a);"),
    (Prim::Logit, Model, "target += logit(a);"),
    (Prim::InvLogit, Model, "target += inv_logit(a);"),
    (Prim::LogInvLogit, Model, "target += log_inv_logit(a);"),
    (Prim::Log1mInvLogit, Model, "target += log1m_inv_logit(a);"),
    (Prim::InvCloglog, Model, "target += inv_cloglog(a);"),
    (Prim::Lgamma, Model, "target += lgamma(a);"),
    (Prim::Digamma, Model, "target += digamma(a);"),
    (Prim::Trigamma, Model, "target += trigamma(a);"),
    (Prim::Tgamma, Model, "target += tgamma(a);"),
    (Prim::Erf, Model, "target += erf(a);"),
    (Prim::Erfc, Model, "target += erfc(a);"),
    (Prim::Phi, Model, "target += Phi(a);"),
    (Prim::PhiApprox, Model, "target += Phi_approx(a);"),
    (Prim::InvPhi, Model, "target += inv_Phi(a);"),
    (Prim::LogPhi, Model, "target += std_normal_lcdf(a);"),
    (Prim::Step, Model, "target += step(a - 0.5) * b;"),
    (Prim::IsNan, Model, "target += is_nan(a) * b;"),
    (Prim::IsInf, Model, "target += is_inf(a) * b;"),
    (Prim::Atan2, Model, "target += atan2(a, b);"),
    (Prim::Fmax, Model, "target += fmax(a, b);"),
    (Prim::Fmin, Model, "target += fmin(a, b);"),
    (Prim::Fdim, Model, "target += fdim(a, b);"),
    (Prim::Fmod, Model, "target += fmod(a, b);"),
    (Prim::Hypot, Model, "target += hypot(a, b);"),
    (Prim::LogSumExp2, Model, "target += log_sum_exp(a, b);"),
    (Prim::LogDiffExp, Model, "target += log_diff_exp(1 + b, a);"),
    (Prim::Lbeta, Model, "target += lbeta(a, b);"),
    (Prim::Lchoose, Model, "target += lchoose(3 + a, b);"),
    (
        Prim::LogFallingFactorial,
        Model,
        "target += log_falling_factorial(2 + a, b);",
    ),
    (
        Prim::LogRisingFactorial,
        Model,
        "target += log_rising_factorial(a, b);",
    ),
    (
        Prim::LogInvLogitDiff,
        Model,
        "target += log_inv_logit_diff(1 + b, a);",
    ),
    (Prim::GammaP, Model, "target += gamma_p(a, b);"),
    (Prim::GammaQ, Model, "target += gamma_q(a, b);"),
    (Prim::IncBeta, Model, "target += inc_beta(a, b, c);"),
    (
        Prim::BinaryLogLoss,
        Model,
        "target += binary_log_loss(1, a);",
    ),
    (
        Prim::MultiplyLog,
        Model,
        "for (i in 1:3) target += neg_binomial_2_lpmf(i | a, b);",
    ),
    (Prim::Lmultiply, Model, "target += lmultiply(a, b);"),
    (
        Prim::Choose,
        Model,
        "for (i in 1:3) target += choose(i + 2, i) * a;",
    ),
    (Prim::Fma, Model, "target += fma(a, b, c);"),
    (Prim::Sum, Model, "target += sum(v);"),
    (Prim::Prod, Model, "target += prod(v);"),
    (Prim::Mean, Model, "target += mean(v);"),
    (Prim::Variance, Model, "target += variance(v);"),
    (Prim::Sd, Model, "target += sd(v);"),
    (Prim::LogSumExp, Model, "target += log_sum_exp(v);"),
    (Prim::Max, Model, "target += max(v);"),
    (Prim::Min, Model, "target += min(v);"),
    (Prim::DotSelf, Model, "target += dot_self(v);"),
    (Prim::DotProduct, Model, "target += dot_product(v, w);"),
    (Prim::Norm1, Model, "target += norm1(v);"),
    (Prim::Norm2, Model, "target += norm2(v);"),
    (Prim::Softmax, Model, "target += softmax(v)[1];"),
    (Prim::LogSoftmax, Model, "target += log_softmax(v)[1];"),
    (
        Prim::CumulativeSum,
        Model,
        "target += cumulative_sum(v)[3];",
    ),
    (
        Prim::CholeskyDecompose,
        Model,
        "target += sum(cholesky_decompose(m * m' + diag_matrix(rep_vector(1.0, 3))));",
    ),
    (
        Prim::MdivideLeftTriLow,
        Model,
        "target += sum(mdivide_left_tri_low(cholesky_decompose(m * m' + diag_matrix(rep_vector(1.0, 3))), v));",
    ),
    (
        Prim::MdivideRightTriLow,
        Model,
        "target += sum(mdivide_right_tri_low(r, cholesky_decompose(m * m' + diag_matrix(rep_vector(1.0, 3)))));",
    ),
    (
        Prim::MdivideRight,
        Model,
        "target += sum(r / (m * m' + diag_matrix(rep_vector(1.0, 3))));",
    ),
    (
        Prim::LogDeterminant,
        Model,
        "target += log_determinant(m * m' + diag_matrix(rep_vector(1.0, 3)));",
    ),
    (
        Prim::Inverse,
        Model,
        "target += sum(inverse(m * m' + diag_matrix(rep_vector(1.0, 3))));",
    ),
    (Prim::Crossprod, Model, "target += sum(crossprod(m));"),
    (Prim::Tcrossprod, Model, "target += sum(tcrossprod(m));"),
    (
        Prim::MultiplyLowerTriSelfTranspose,
        Model,
        "target += sum(multiply_lower_tri_self_transpose(m));",
    ),
    (Prim::DiagMatrix, Model, "target += sum(diag_matrix(v));"),
    (Prim::Diagonal, Model, "target += sum(diagonal(m));"),
    (
        Prim::DiagPreMultiply,
        Model,
        "target += sum(diag_pre_multiply(v, m));",
    ),
    (
        Prim::DiagPostMultiply,
        Model,
        "target += sum(diag_post_multiply(m, v));",
    ),
    (
        Prim::QuadForm,
        Model,
        "target += quad_form(m * m' + diag_matrix(rep_vector(1.0, 3)), v);",
    ),
    (
        Prim::QuadFormDiag,
        Model,
        "target += sum(quad_form_diag(m, v));",
    ),
    (
        Prim::EigenvaluesSym,
        Model,
        "target += sum(eigenvalues_sym(m * m' + diag_matrix(rep_vector(1.0, 3))));",
    ),
    (
        Prim::EigenvectorsSym,
        Model,
        "target += sum(square(eigenvectors_sym(m * m' + diag_matrix(rep_vector(1.0, 3)))));",
    ),
    (
        Prim::GpExpQuadCov,
        Model,
        "target += sum(gp_exp_quad_cov(xa, a, b));",
    ),
    (Prim::RepVector, Model, "target += sum(rep_vector(a, 3));"),
    (
        Prim::RepRowVector,
        Model,
        "target += sum(rep_row_vector(a, 3));",
    ),
    (
        Prim::RepMatrix,
        Model,
        "target += sum(rep_matrix(a, 2, 2));",
    ),
    (Prim::RepArray, Model, "target += sum(rep_array(a, 2));"),
    (Prim::ToVector, Model, "target += sum(to_vector(r));"),
    (Prim::ToRowVector, Model, "target += sum(to_row_vector(v));"),
    (Prim::ToMatrix, Model, "target += sum(to_matrix(v, 3, 1));"),
    (Prim::ToArray1d, Model, "target += sum(to_array_1d(v));"),
    (
        Prim::ToInt,
        Model,
        "for (i in 1:3) target += to_int(i * 1.5) * a;",
    ),
    (
        Prim::ToComplex,
        Model,
        "target += get_real(to_complex(a, b));",
    ),
    (
        Prim::GetReal,
        Model,
        "target += get_real(to_complex(a, b));",
    ),
    (
        Prim::GetImag,
        Model,
        "target += get_imag(to_complex(a, b));",
    ),
    (Prim::AppendRow, Model, "target += sum(append_row(v, w));"),
    (Prim::AppendCol, Model, "target += sum(append_col(v, w));"),
    (
        Prim::AppendArray,
        Model,
        "target += sum(append_array({a}, {b}));",
    ),
    (Prim::Segment, Model, "target += sum(segment(v, 1, 2));"),
    (Prim::Head, Model, "target += sum(head(v, 2));"),
    (Prim::Tail, Model, "target += sum(tail(v, 2));"),
    (Prim::Block, Model, "target += sum(block(m, 1, 1, 2, 2));"),
    (Prim::Col, Model, "target += sum(col(m, 1));"),
    (Prim::Row, Model, "target += sum(row(m, 1));"),
    (Prim::Reverse, Model, "target += reverse(v)[1];"),
    (Prim::Sort, Model, "target += sort_asc(v)[1];"),
    (Prim::SortDesc, Model, "target += sort_desc(v)[1];"),
    (Prim::Size, Model, "target += size(v) * a;"),
    (Prim::Rows, Model, "target += rows(m) * a;"),
    (Prim::Cols, Model, "target += cols(m) * a;"),
    (Prim::NumElements, Model, "target += num_elements(m) * a;"),
    (Prim::Dims, Model, "target += dims(m)[1] * a;"),
    (
        Prim::Linspaced,
        Model,
        "for (i in 1:3) target += sum(linspaced_vector(3, 0, i)) * a;",
    ),
    (
        Prim::OneHot,
        Model,
        "for (i in 1:3) target += dot_product(one_hot_vector(3, i), v);",
    ),
    (
        Prim::Zeros,
        Model,
        "for (i in 1:3) target += sum(zeros_vector(i)) + a;",
    ),
    (
        Prim::Ones,
        Model,
        "for (i in 1:3) target += sum(ones_vector(i)) * a;",
    ),
    (
        Prim::CheckPositiveFinite,
        Model,
        "target += cauchy_lpdf(a | 0, sin(b));",
    ),
    (
        Prim::CheckPositive,
        Model,
        "target += normal_lpdf(a | 0, sin(b));",
    ),
    (
        Prim::CheckNonNegative,
        Model,
        "target += exponential_lpdf(a | b);",
    ),
    (Prim::CheckFinite, Model, "target += normal_lpdf(a | b, 1);"),
    (Prim::CheckNotNan, Model, "target += normal_lpdf(a | 0, 1);"),
    (
        Prim::CheckProbability,
        Model,
        "target += bernoulli_lpmf(1 | a);",
    ),
    (
        Prim::CheckNonNegativeInt,
        Model,
        "for (i in 1:3) target += poisson_lpmf(i | a);",
    ),
    (Prim::NormalRng, GeneratedQuantities, "normal_rng(a, b)"),
    (
        Prim::LognormalRng,
        GeneratedQuantities,
        "lognormal_rng(a, b)",
    ),
    (
        Prim::UniformRng,
        GeneratedQuantities,
        "uniform_rng(a, 1 + b)",
    ),
    (
        Prim::ExponentialRng,
        GeneratedQuantities,
        "exponential_rng(a)",
    ),
    (Prim::GammaRng, GeneratedQuantities, "gamma_rng(a, b)"),
    (Prim::BetaRng, GeneratedQuantities, "beta_rng(a, b)"),
    (
        Prim::StudentTRng,
        GeneratedQuantities,
        "student_t_rng(3, a, b)",
    ),
    (Prim::CauchyRng, GeneratedQuantities, "cauchy_rng(a, b)"),
    (Prim::BernoulliRng, GeneratedQuantities, "bernoulli_rng(a)"),
    (
        Prim::BernoulliLogitRng,
        GeneratedQuantities,
        "bernoulli_logit_rng(a)",
    ),
    (
        Prim::BinomialRng,
        GeneratedQuantities,
        "binomial_rng(10, a)",
    ),
    (Prim::PoissonRng, GeneratedQuantities, "poisson_rng(a)"),
    (
        Prim::PoissonLogRng,
        GeneratedQuantities,
        "poisson_log_rng(a)",
    ),
    (
        Prim::CategoricalRng,
        GeneratedQuantities,
        "categorical_rng(softmax(v))",
    ),
    (
        Prim::CategoricalLogitRng,
        GeneratedQuantities,
        "categorical_logit_rng(v)",
    ),
    (
        Prim::NegBinomial2Rng,
        GeneratedQuantities,
        "neg_binomial_2_rng(a, b)",
    ),
    (
        Prim::NegBinomial2LogRng,
        GeneratedQuantities,
        "neg_binomial_2_log_rng(a, b)",
    ),
    (
        Prim::DoubleExponentialRng,
        GeneratedQuantities,
        "double_exponential_rng(a, b)",
    ),
    (Prim::LogisticRng, GeneratedQuantities, "logistic_rng(a, b)"),
    (Prim::WeibullRng, GeneratedQuantities, "weibull_rng(a, b)"),
    (Prim::ChiSquareRng, GeneratedQuantities, "chi_square_rng(a)"),
    (
        Prim::InvGammaRng,
        GeneratedQuantities,
        "inv_gamma_rng(a, b)",
    ),
    (Prim::GumbelRng, GeneratedQuantities, "gumbel_rng(a, b)"),
    (Prim::Pi, Model, "target += pi() * a;"),
    (Prim::E, Model, "target += e() * a;"),
    (
        Prim::NotANumber,
        Model,
        "target += is_nan(not_a_number()) * a;",
    ),
    (
        Prim::PositiveInfinity,
        Model,
        "target += fmin(positive_infinity(), a);",
    ),
    (
        Prim::NegativeInfinity,
        Model,
        "target += fmax(negative_infinity(), a);",
    ),
    (
        Prim::MachinePrecision,
        Model,
        "target += machine_precision() * a;",
    ),
];

/// The pairs an executor does not run (every other pair it must run).
const UNSUPPORTED: &[(Prim, Executor)] = &[
    (Prim::Trigamma, Generated),        // derivative of trigamma
    (Prim::GammaP, Generated),          // primitive gamma_p
    (Prim::GammaQ, Generated),          // primitive gamma_q
    (Prim::Choose, Generated),          // primitive choose
    (Prim::EigenvaluesSym, Generated),  // primitive eigenvalues_sym
    (Prim::EigenvectorsSym, Generated), // primitive eigenvectors_sym
    (Prim::ToComplex, Generated),       // primitive to_complex
    (Prim::GetReal, Generated),         // its example needs to_complex
    (Prim::GetImag, Generated),         // its example needs to_complex
    (Prim::Sort, Derivative),           // no derivative rule for `sort_asc`
    (Prim::SortDesc, Derivative),       // no derivative rule for `sort_desc`
    (Prim::OneHot, Generated),          // primitive one_hot_vector
    (Prim::Zeros, Generated),           // primitive zeros_vector
    (Prim::Ones, Generated),            // primitive ones_vector
];

const DATA: &str = r#"{"xa": [0.1, 0.7, 1.5]}"#;

fn source(block: &Block, code: &str) -> String {
    let (model, quantities) = match block {
        Model => (code.to_string(), String::new()),
        GeneratedQuantities => (String::new(), format!("real g = {code};")),
    };
    format!(
        "data {{ array[3] real xa; }}
parameters {{
  real<lower=0.2, upper=0.8> a;
  real<lower=0.2, upper=0.8> b;
  real<lower=0.2, upper=0.8> c;
  vector<lower=0.2, upper=0.8>[3] v;
  vector<lower=0.2, upper=0.8>[3] w;
  row_vector<lower=0.2, upper=0.8>[3] r;
  matrix<lower=0.2, upper=0.8>[3, 3] m;
}}
model {{
  {model}
}}
generated quantities {{
  {quantities}
}}
"
    )
}

/// The primitives `stmts` evaluate.
fn prims_in(stmts: &[Stmt]) -> BTreeSet<Prim> {
    let mut found = BTreeSet::new();
    let mut stmts = stmts.to_vec();
    for_each_expr(&mut stmts, &mut |e| {
        if let ExprKind::Prim(p, _) = &e.kind {
            found.insert(*p);
        }
    });
    found
}

/// Distinct unconstrained points, one per lane.
fn points(n: usize, lanes: usize) -> Vec<Vec<f64>> {
    (0..lanes)
        .map(|l| {
            (0..n)
                .map(|k| 0.37 * k as f64 - 0.9 + 0.21 * l as f64)
                .collect()
        })
        .map(|theta: Vec<f64>| theta.iter().map(|x| x.sin()).collect())
        .collect()
}

/// Which executors refuse `prim`'s example, with their reasons. A wrong
/// value (an executor that runs but disagrees with the interpreter) is a
/// bug, not a refusal: it panics.
fn refusals(prim: Prim, block: &Block, code: &str) -> Result<Vec<(Executor, String)>, String> {
    let text = source(block, code);
    let program = match language::compile_model(&text, "example") {
        (Some(p), _) => p,
        (None, ds) => {
            return Err(format!(
                "{prim:?}: the example does not compile: {}",
                ds[0].message
            ));
        }
    };
    let data = DataFile::parse(DATA).unwrap();
    let model = Model::new(&program, &data).unwrap();
    let n = model.num_unconstrained();
    let thetas = points(n, 3);
    let mut refused = Vec::new();
    match block {
        Model => {
            let g = match language::ad::gradient(&program) {
                Ok(g) => g,
                Err(ds) => {
                    refused.push((Derivative, ds[0].message.clone()));
                    return Ok(refused);
                }
            };
            let mut executed = g.body.clone();
            executed.extend(g.program.functions.iter().flat_map(|f| f.body.clone()));
            if !prims_in(&executed).contains(&prim) {
                return Err(format!(
                    "{prim:?}: the gradient program of `{code}` does not evaluate it"
                ));
            }
            let expected: Vec<_> = thetas
                .iter()
                .map(|t| model.log_density_gradient(&g, t, true))
                .collect();
            if let Some(Err(e)) = expected.iter().find(|r| r.is_err()) {
                refused.push((Interpreter, e.to_string()));
                return Ok(refused);
            }
            match language::batch::lower_gradient(&g) {
                Err(ds) => {
                    refused.push((BackendCpu, ds[0].message.clone()));
                    refused.push((Generated, ds[0].message.clone()));
                }
                Ok(cfg) => {
                    match backend_cpu::exec::BatchedModel::new(
                        cfg.clone(),
                        model.clone(),
                        Default::default(),
                    )
                    .and_then(|b| b.log_density_gradient(&thetas, true))
                    {
                        Err(e) => refused.push((BackendCpu, e.to_string())),
                        Ok(lanes) => {
                            for (l, (got, want)) in lanes.iter().zip(&expected).enumerate() {
                                let (lp, grad) = got.as_ref().unwrap_or_else(|e| {
                                    panic!("{prim:?}: backend-cpu lane {l} failed: {e}")
                                });
                                let (lp0, grad0) = want.as_ref().unwrap();
                                let bits =
                                    |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                                assert_eq!(
                                    (lp.to_bits(), bits(grad)),
                                    (lp0.to_bits(), bits(grad0)),
                                    "{prim:?}: backend-cpu lane {l} differs from the interpreter"
                                );
                            }
                        }
                    }
                    match codegen::gradient::generate(&cfg, &model) {
                        Err(e) => refused.push((Generated, e.to_string())),
                        Ok((_, generated, _)) => {
                            if let Some(op) = generated.not_generated.first() {
                                refused.push((Generated, op.reason.clone()));
                            }
                        }
                    }
                }
            }
        }
        GeneratedQuantities => {
            if !prims_in(&program.generated_quantities).contains(&prim) {
                return Err(format!(
                    "{prim:?}: the generated quantities of `{code}` do not evaluate it"
                ));
            }
            let rngs: Vec<Rng> = (0..thetas.len())
                .map(|l| Rng::new(7, l as u32, 0))
                .collect();
            let expected: Vec<_> = thetas
                .iter()
                .zip(&rngs)
                .map(|(t, rng)| model.generated_quantities(t, rng.clone()))
                .collect();
            if let Some(Err(e)) = expected.iter().find(|r| r.is_err()) {
                refused.push((Interpreter, e.to_string()));
                return Ok(refused);
            }
            let batched = language::batch::lower_generated_quantities(&program)
                .map_err(|ds| ds[0].message.clone())
                .and_then(|cfg| {
                    backend_cpu::exec::BatchedModel::new(cfg, model.clone(), Default::default())
                        .map_err(|e| e.to_string())
                })
                .and_then(|b| {
                    b.generated_quantities(&thetas, &rngs)
                        .map_err(|e| e.to_string())
                });
            match batched {
                Err(e) => refused.push((BackendCpu, e)),
                Ok(lanes) => {
                    for (l, (got, want)) in lanes.iter().zip(&expected).enumerate() {
                        let got = got.as_ref().unwrap_or_else(|e| {
                            panic!("{prim:?}: backend-cpu lane {l} failed: {e}")
                        });
                        assert_eq!(
                            got.values,
                            want.as_ref().unwrap().values,
                            "{prim:?}: backend-cpu lane {l} differs from the interpreter"
                        );
                    }
                }
            }
        }
    }
    Ok(refused)
}

#[test]
fn every_primitive_has_one_example() {
    let listed: Vec<Prim> = EXAMPLES.iter().map(|(p, _, _)| *p).collect();
    let distinct: BTreeSet<Prim> = listed.iter().copied().collect();
    assert_eq!(distinct.len(), listed.len(), "a primitive has two examples");
    let missing: Vec<Prim> = Prim::ALL
        .iter()
        .copied()
        .filter(|p| !distinct.contains(p))
        .collect();
    assert!(
        missing.is_empty(),
        "primitives without an example: {missing:?}"
    );
}

#[test]
fn every_executor_runs_what_the_table_says() {
    let listed: BTreeSet<(Prim, Executor)> = UNSUPPORTED.iter().copied().collect();
    let mut refused = BTreeSet::new();
    let mut surprises = Vec::new();
    for (prim, block, code) in EXAMPLES {
        let refused_here = match refusals(*prim, block, code) {
            Ok(refused_here) => refused_here,
            Err(problem) => {
                surprises.push(format!("    example: {problem}"));
                continue;
            }
        };
        for (executor, why) in refused_here {
            if !listed.contains(&(*prim, executor)) {
                surprises.push(format!(
                    "    (Prim::{prim:?}, {executor:?}), // newly refused: {why}"
                ));
            }
            refused.insert((*prim, executor));
        }
    }
    for pair in listed.difference(&refused) {
        surprises.push(format!("    {pair:?} runs now: take it out of UNSUPPORTED"));
    }
    assert!(
        surprises.is_empty(),
        "UNSUPPORTED is not the current fact:\n{}",
        surprises.join("\n")
    );
}

/// `source`'s log density and gradient from the native executor and from
/// backend-cpu at three points, equal bit for bit; the first difference
/// otherwise.
fn native_differs(source: &str) -> Option<String> {
    let program = language::compile_model(source, "examples")
        .0
        .expect("compiles");
    let data = DataFile::parse(DATA).unwrap();
    let model = Model::new(&program, &data).unwrap();
    let g = language::ad::gradient(&program).expect("gradient program");
    let cfg = language::batch::lower_gradient(&g).expect("batching IR");
    let thetas = points(model.num_unconstrained(), 3);
    let mut native =
        backend_native::gradient::NativeGradient::new(&cfg, model.clone(), thetas.len())
            .unwrap_or_else(|e| panic!("the generated examples do not compile: {e}"));
    let n = model.num_unconstrained();
    let columns: Vec<f64> = (0..n)
        .flat_map(|c| thetas.iter().map(move |t| t[c]))
        .collect();
    let got = native
        .log_density_gradient_columns(&columns, thetas.len(), true)
        .unwrap();
    let want = backend_cpu::exec::BatchedModel::new(cfg, model, Default::default())
        .and_then(|b| b.log_density_gradient(&thetas, true))
        .unwrap();
    let bits = |r: &Result<(f64, Vec<f64>), runtime::RuntimeError>| {
        r.as_ref()
            .map(|(lp, g)| {
                (
                    lp.to_bits(),
                    g.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                )
            })
            .map_err(|e| e.to_string())
    };
    (0..thetas.len())
        .find(|&l| bits(&got[l]) != bits(&want[l]))
        .map(|l| format!("lane {l}: native {:?}, backend-cpu {:?}", got[l], want[l]))
}

#[test]
fn generated_code_gives_backend_cpus_bits() {
    let listed: BTreeSet<(Prim, Executor)> = UNSUPPORTED.iter().copied().collect();
    let generated: Vec<&(Prim, Block, &str)> = EXAMPLES
        .iter()
        .filter(|(p, block, _)| {
            matches!(block, Model)
                && !listed.contains(&(*p, Derivative))
                && !listed.contains(&(*p, Interpreter))
                && !listed.contains(&(*p, Generated))
        })
        .collect();
    let together: Vec<&str> = generated.iter().map(|(_, _, code)| *code).collect();
    if native_differs(&source(&Model, &together.join("\n  "))).is_none() {
        return;
    }
    let culprits: Vec<String> = generated
        .iter()
        .filter_map(|(p, block, code)| {
            native_differs(&source(block, code)).map(|why| format!("{p:?} (`{code}`): {why}"))
        })
        .collect();
    panic!(
        "generated code differs from backend-cpu:\n{}",
        culprits.join("\n")
    );
}
