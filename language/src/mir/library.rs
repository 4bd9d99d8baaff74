//! Library functions in terms of primitives.
//!
//! [`call`] maps a checked library call to a primitive (or an expansion);
//! [`distribution`] expands a vectorised log density into primitive terms,
//! dropping the terms that do not depend on any autodiff argument when
//! `propto` is set (`~` and `_lupdf`), exactly as Stan's `propto` does.
//! Vectorised densities broadcast scalar arguments: a term depending only
//! on scalars is multiplied by the number of elements of the container
//! arguments.

use super::{Expr, ExprKind, Index, Prim};
use crate::span::Span;
use crate::types::{AdLevel, Type};
use std::collections::HashMap;
use std::f64::consts::PI;
use std::sync::LazyLock;

/// A library function bat cannot lower yet (the message names it).
#[derive(Debug)]
pub struct Unsupported(pub String);

static BY_NAME: LazyLock<HashMap<&'static str, Prim>> = LazyLock::new(|| {
    let mut map: HashMap<&'static str, Prim> = Prim::ALL.iter().map(|&p| (p.name(), p)).collect();
    // Stan names that are aliases of one primitive.
    map.insert("fabs", Prim::Abs);
    map.insert("lmultiply", Prim::Lmultiply);
    map.insert("sort_asc", Prim::Sort);
    map.insert("log_sum_exp", Prim::LogSumExp);
    map.insert("elt_multiply", Prim::EltMul);
    map.insert("elt_divide", Prim::EltDiv);
    map
});

/// Lower a call of library function `name` (not a density) returning `ty`.
pub fn call(name: &str, args: Vec<Expr>, ty: &Type, span: Span) -> Result<ExprKind, Unsupported> {
    let _ = (ty, span);
    let prim = match (name, args.len()) {
        ("log_sum_exp", 2) => Prim::LogSumExp2,
        ("max", 2) => Prim::Fmax,
        ("min", 2) => Prim::Fmin,
        ("abs", _) | ("fabs", _) => Prim::Abs,
        ("log_mix", 3) => return Ok(log_mix(args, span).kind),
        ("mdivide_left_spd", 2) => return Ok(mdivide_left_spd(args, span).kind),
        ("log_determinant_spd", 1) => return Ok(log_determinant_spd(args, span).kind),
        ("choose", 2) => Prim::Choose,
        _ if (name.ends_with("_lcdf") || name.ends_with("_lccdf"))
            && args.iter().all(|a| a.ty.is_scalar()) =>
        {
            let (family, upper) = match name.strip_suffix("_lccdf") {
                Some(family) => (family, true),
                None => (name.trim_end_matches("_lcdf"), false),
            };
            return Ok(log_cdf(family, upper, args, span)?.kind);
        }
        _ => match BY_NAME.get(name) {
            Some(&p) => p,
            None => return Err(Unsupported(format!("the function `{name}`"))),
        },
    };
    Ok(ExprKind::Prim(prim, args))
}

/// `mdivide_left_spd(A, B)` = L⁻ᵀ(L⁻¹B) with L = cholesky_decompose(A),
/// which rejects an A that is not symmetric positive definite, as Stan.
fn mdivide_left_spd(mut args: Vec<Expr>, span: Span) -> Expr {
    let b = args.pop().expect("2 args");
    let a = args.pop().expect("2 args");
    let flipped = match b.ty {
        Type::Vector => Type::RowVector,
        ref other => other.clone(),
    };
    let b_ty = b.ty.clone();
    let l = typed(prim(Prim::CholeskyDecompose, vec![a], span), Type::Matrix);
    let y = typed(
        prim(Prim::MdivideLeftTriLow, vec![l.clone(), b], span),
        b_ty.clone(),
    );
    let yt = typed(prim(Prim::Transpose, vec![y], span), flipped.clone());
    let z = typed(prim(Prim::MdivideRightTriLow, vec![yt, l], span), flipped);
    typed(prim(Prim::Transpose, vec![z], span), b_ty)
}

/// `log_determinant_spd(A)` = 2 Σ log diag(cholesky_decompose(A)).
fn log_determinant_spd(args: Vec<Expr>, span: Span) -> Expr {
    let l = typed(prim(Prim::CholeskyDecompose, args, span), Type::Matrix);
    let d = typed(prim(Prim::Diagonal, vec![l], span), Type::Vector);
    let logs = typed(prim(Prim::Log, vec![d], span), Type::Vector);
    let total = typed(prim(Prim::Sum, vec![logs], span), Type::Real);
    typed(
        prim(Prim::Mul, vec![real(2.0, span), total], span),
        Type::Real,
    )
}

/// `log_mix(θ, a, b)` = log_sum_exp(log(θ) + a, log1m(θ) + b).
fn log_mix(mut args: Vec<Expr>, span: Span) -> Expr {
    let b = args.pop().expect("3 args");
    let a = args.pop().expect("3 args");
    let theta = args.pop().expect("3 args");
    let left = prim(
        Prim::Add,
        vec![prim(Prim::Log, vec![theta.clone()], span), a],
        span,
    );
    let right = prim(
        Prim::Add,
        vec![prim(Prim::Log1m, vec![theta], span), b],
        span,
    );
    prim(Prim::LogSumExp2, vec![left, right], span)
}

/// `FAMILY_lcdf(b | θ)` (or `_lccdf` when `upper`) for scalar arguments:
/// the log probability below (above) `b`.
pub fn log_cdf(
    family: &str,
    upper: bool,
    args: Vec<Expr>,
    span: Span,
) -> Result<Expr, Unsupported> {
    use Prim::*;
    let p = |op: Prim, a: Vec<Expr>| prim(op, a, span);
    let r = |x: f64| real(x, span);
    let n = args.len();
    let arg = |i: usize| args[i].clone();
    let z = |y: Expr| p(EltDiv, vec![p(Sub, vec![y, arg(1)]), arg(2)]);
    Ok(match (family, n) {
        ("normal", 3) | ("lognormal", 3) => {
            let y = if family == "lognormal" {
                p(Log, vec![arg(0)])
            } else {
                arg(0)
            };
            let z = z(y);
            p(LogPhi, vec![if upper { p(Neg, vec![z]) } else { z }])
        }
        ("std_normal", 1) => p(
            LogPhi,
            vec![if upper { p(Neg, vec![arg(0)]) } else { arg(0) }],
        ),
        ("exponential", 2) => {
            let minus_rate_y = p(Neg, vec![p(Mul, vec![arg(1), arg(0)])]);
            if upper {
                minus_rate_y
            } else {
                p(Log1mExp, vec![minus_rate_y])
            }
        }
        ("cauchy", 3) => {
            let t = p(Mul, vec![r(1.0 / PI), p(Atan, vec![z(arg(0))])]);
            p(
                Log,
                vec![if upper {
                    p(Sub, vec![r(0.5), t])
                } else {
                    p(Add, vec![r(0.5), t])
                }],
            )
        }
        ("logistic", 3) => p(
            if upper { Log1mInvLogit } else { LogInvLogit },
            vec![z(arg(0))],
        ),
        ("gamma", 3) => {
            let x = p(Mul, vec![arg(2), arg(0)]);
            p(
                Log,
                vec![p(if upper { GammaQ } else { GammaP }, vec![arg(1), x])],
            )
        }
        ("weibull", 3) => {
            let minus_pow = p(
                Neg,
                vec![p(Pow, vec![p(EltDiv, vec![arg(0), arg(2)]), arg(1)])],
            );
            if upper {
                minus_pow
            } else {
                p(Log1mExp, vec![minus_pow])
            }
        }
        ("poisson", 2) => {
            // P(N ≤ n) = Q(n + 1, λ)
            let n1 = p(Add, vec![arg(0), r(1.0)]);
            p(
                Log,
                vec![p(if upper { GammaP } else { GammaQ }, vec![n1, arg(1)])],
            )
        }
        ("neg_binomial_2", 3) => {
            // P(N ≤ n) = I_{φ/(μ+φ)}(φ, n + 1)
            let total = p(Add, vec![arg(1), arg(2)]);
            let n1 = p(Add, vec![arg(0), r(1.0)]);
            if upper {
                let x = p(EltDiv, vec![arg(1), total]);
                p(Log, vec![p(IncBeta, vec![n1, arg(2), x])])
            } else {
                let x = p(EltDiv, vec![arg(2), total]);
                p(Log, vec![p(IncBeta, vec![arg(2), n1, x])])
            }
        }
        ("student_t", 4) => {
            if upper {
                student_t_lccdf(args, span)
            } else {
                // P(Y ≤ y) = P(Y' ≥ −y) for Y' = −Y ~ student_t(ν, −μ, σ)
                let [y, nu, mu, sigma]: [Expr; 4] = args.try_into().expect("4 args");
                student_t_lccdf(vec![p(Neg, vec![y]), nu, p(Neg, vec![mu]), sigma], span)
            }
        }
        _ => {
            let suffix = if upper { "lccdf" } else { "lcdf" };
            return Err(Unsupported(format!("the function `{family}_{suffix}`")));
        }
    })
}

/// `student_t_lccdf(y | ν, μ, σ)` for scalars: with t = (y − μ)/σ and
/// x = ν / (ν + t²), the upper tail is ½ I_x(ν/2, ½) for t > 0 and
/// 1 − ½ I_x(ν/2, ½) otherwise (Stan's student_t_lccdf).
fn student_t_lccdf(args: Vec<Expr>, span: Span) -> Expr {
    use Prim::*;
    let [y, nu, mu, sigma]: [Expr; 4] = args.try_into().expect("4 args");
    let t = prim(EltDiv, vec![prim(Sub, vec![y, mu], span), sigma], span);
    let t2 = prim(Square, vec![t.clone()], span);
    let x = prim(
        EltDiv,
        vec![nu.clone(), prim(Add, vec![nu.clone(), t2], span)],
        span,
    );
    let half_nu = prim(Mul, vec![real(0.5, span), nu], span);
    let half_tail = prim(
        Mul,
        vec![
            real(0.5, span),
            prim(IncBeta, vec![half_nu, real(0.5, span), x], span),
        ],
        span,
    );
    let positive = typed(prim(Gt, vec![t, real(0.0, span)], span), Type::Int);
    let upper = prim(Sub, vec![real(1.0, span), half_tail.clone()], span);
    let ad = half_tail.ad.max(positive.ad);
    let tail = Expr {
        kind: ExprKind::Cond(Box::new(positive), Box::new(half_tail), Box::new(upper)),
        ty: Type::Real,
        ad,
        span,
    };
    prim(Log, vec![tail], span)
}

/// True if `e` is a number literal that passes `check` (no runtime check
/// needed).
fn literal_passes(e: &Expr, check: Prim) -> bool {
    let x = match e.kind {
        ExprKind::Int(i) => i as f64,
        ExprKind::Real(x) => x,
        _ => return false,
    };
    match check {
        Prim::CheckPositiveFinite => x > 0.0 && x.is_finite(),
        Prim::CheckPositive => x > 0.0,
        Prim::CheckNonNegative | Prim::CheckNonNegativeInt => x >= 0.0,
        Prim::CheckFinite => x.is_finite(),
        Prim::CheckNotNan => !x.is_nan(),
        Prim::CheckProbability => (0.0..=1.0).contains(&x),
        _ => false,
    }
}

/// `e` with its type set (for primitives whose result type is not the
/// elementwise rule's).
fn typed(mut e: Expr, ty: Type) -> Expr {
    e.ty = ty;
    e
}

// ------------------------------------------------------------ builders

fn ad_of(args: &[Expr]) -> AdLevel {
    args.iter().map(|a| a.ad).max().unwrap_or(AdLevel::DataOnly)
}

fn is_container(t: &Type) -> bool {
    !t.is_scalar()
}

/// Result type of an elementwise primitive over `args`: the container
/// among them (arrays of ints become arrays of reals), else `real`.
fn elementwise_type(args: &[Expr]) -> Type {
    let rank = |t: &Type| match t {
        Type::Matrix => 4,
        Type::Vector => 3,
        Type::RowVector => 2,
        Type::Array(_) => 1,
        _ => 0,
    };
    match args.iter().map(|a| &a.ty).max_by_key(|t| rank(t)) {
        Some(Type::Array(_)) => Type::Array(Box::new(Type::Real)),
        Some(t) if rank(t) > 0 => t.clone(),
        _ => Type::Real,
    }
}

/// A primitive application with its result type.
pub(super) fn prim(p: Prim, args: Vec<Expr>, span: Span) -> Expr {
    let ty = match p {
        Prim::Sum | Prim::LogSumExp | Prim::DotSelf | Prim::DotProduct | Prim::Mean => Type::Real,
        Prim::NumElements | Prim::Size | Prim::Rows | Prim::Cols => Type::Int,
        _ => elementwise_type(&args),
    };
    // Sizes never depend on parameter values.
    let ad = if ty == Type::Int
        && matches!(p, Prim::NumElements | Prim::Size | Prim::Rows | Prim::Cols)
    {
        AdLevel::DataOnly
    } else {
        ad_of(&args)
    };
    Expr {
        kind: ExprKind::Prim(p, args),
        ty,
        ad,
        span,
    }
}

fn int(i: i64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Int(i),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    }
}

fn real(x: f64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Real(x),
        ty: Type::Real,
        ad: AdLevel::DataOnly,
        span,
    }
}

/// Accumulates the terms of a log density.
struct Density<'a> {
    args: &'a [Expr],
    propto: bool,
    span: Span,
    /// Number of elements of the first container argument (for broadcast
    /// scalar terms), `None` when every argument is a scalar.
    count: Option<Expr>,
    terms: Vec<Expr>,
}

impl<'a> Density<'a> {
    fn new(args: &'a [Expr], propto: bool, span: Span) -> Density<'a> {
        let count = args
            .iter()
            .find(|a| is_container(&a.ty))
            .map(|a| prim(Prim::NumElements, vec![a.clone()], span));
        Density {
            args,
            propto,
            span,
            count,
            terms: Vec::new(),
        }
    }

    fn arg(&self, i: usize) -> Expr {
        self.args[i].clone()
    }

    /// Add `term` (a function of the arguments `uses`), summed over the
    /// broadcast; skipped under propto when none of them is autodiff.
    fn term(&mut self, uses: &[usize], build: impl FnOnce(&Self) -> Expr) {
        if self.propto && uses.iter().all(|&i| self.args[i].ad == AdLevel::DataOnly) {
            return;
        }
        let t = build(self);
        let summed = if is_container(&t.ty) {
            prim(Prim::Sum, vec![t], self.span)
        } else {
            match &self.count {
                Some(n) => prim(Prim::Mul, vec![n.clone(), t], self.span),
                None => t,
            }
        };
        self.terms.push(summed);
    }

    /// Add `term`, a scalar already summed over every element (no
    /// broadcast multiplication); skipped under propto like [`Self::term`].
    fn term_once(&mut self, uses: &[usize], build: impl FnOnce(&Self) -> Expr) {
        if self.propto && uses.iter().all(|&i| self.args[i].ad == AdLevel::DataOnly) {
            return;
        }
        let t = build(self);
        self.terms.push(t);
    }

    /// Stan's argument check `check` on argument `i`: evaluated even when
    /// every term is dropped, rejecting the proposal when it fails.
    fn check(&mut self, i: usize, check: Prim) {
        if literal_passes(&self.args[i], check) {
            return;
        }
        let label = Expr {
            kind: ExprKind::Int(i as i64 + 1),
            ty: Type::Int,
            ad: AdLevel::DataOnly,
            span: self.span,
        };
        let mut e = prim(check, vec![self.arg(i), label], self.span);
        e.ty = Type::Real;
        self.terms.push(e);
    }

    /// A term kept even under propto (support indicators: Stan returns
    /// log(0) outside the support whatever `propto` says).
    fn always(&mut self, build: impl FnOnce(&Self) -> Expr) {
        let t = build(self);
        self.terms.push(t);
    }

    /// A constant term (dropped under propto).
    fn constant(&mut self, c: f64) {
        self.term(&[], |d| real(c, d.span));
    }

    fn finish(self) -> Expr {
        let span = self.span;
        let mut terms = self.terms.into_iter();
        let first = terms.next().unwrap_or_else(|| real(0.0, span));
        terms.fold(first, |acc, t| prim(Prim::Add, vec![acc, t], span))
    }

    fn p(&self, p: Prim, args: Vec<Expr>) -> Expr {
        prim(p, args, self.span)
    }

    fn r(&self, x: f64) -> Expr {
        real(x, self.span)
    }
}

/// The log density of `family` at `args` (first the variate).
pub fn distribution(
    family: &str,
    args: Vec<Expr>,
    propto: bool,
    span: Span,
) -> Result<Expr, Unsupported> {
    use Prim::*;
    let n = args.len();
    let mut d = Density::new(&args, propto, span);
    let half_log_2pi = 0.5 * (2.0 * PI).ln();
    match (family, n) {
        ("normal", 3) => {
            d.check(0, CheckNotNan);
            d.check(1, CheckFinite);
            d.check(2, CheckPositive);
            // -0.5 z² - log σ - ½ log 2π, z = (y - μ) / σ
            d.term(&[0, 1, 2], |d| {
                let z = d.p(EltDiv, vec![d.p(Sub, vec![d.arg(0), d.arg(1)]), d.arg(2)]);
                d.p(Mul, vec![d.r(-0.5), d.p(Square, vec![z])])
            });
            d.term(&[2], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(2)])]));
            d.constant(-half_log_2pi);
        }
        ("std_normal", 1) => {
            d.check(0, CheckNotNan);
            d.term(&[0], |d| {
                d.p(Mul, vec![d.r(-0.5), d.p(Square, vec![d.arg(0)])])
            });
            d.constant(-half_log_2pi);
        }
        ("cauchy", 3) => {
            d.check(0, CheckNotNan);
            d.check(1, CheckFinite);
            d.check(2, CheckPositiveFinite);
            d.term(&[0, 1, 2], |d| {
                let z = d.p(EltDiv, vec![d.p(Sub, vec![d.arg(0), d.arg(1)]), d.arg(2)]);
                d.p(Neg, vec![d.p(Log1p, vec![d.p(Square, vec![z])])])
            });
            d.term(&[2], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(2)])]));
            d.constant(-PI.ln());
        }
        ("student_t", 4) => {
            d.check(0, CheckNotNan);
            d.check(1, CheckPositiveFinite);
            d.check(2, CheckFinite);
            d.check(3, CheckPositiveFinite);
            // lgamma((ν+1)/2) - lgamma(ν/2) - ½ log ν - log σ
            //   - (ν+1)/2 · log1p(z² / ν) - ½ log π
            d.term(&[1], |d| {
                let nu = d.arg(1);
                let a = d.p(
                    Lgamma,
                    vec![d.p(Mul, vec![d.r(0.5), d.p(Add, vec![nu.clone(), d.r(1.0)])])],
                );
                let b = d.p(Lgamma, vec![d.p(Mul, vec![d.r(0.5), nu.clone()])]);
                let c = d.p(Mul, vec![d.r(0.5), d.p(Log, vec![nu])]);
                d.p(Sub, vec![d.p(Sub, vec![a, b]), c])
            });
            d.term(&[3], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(3)])]));
            d.term(&[0, 1, 2, 3], |d| {
                let nu = d.arg(1);
                let z = d.p(EltDiv, vec![d.p(Sub, vec![d.arg(0), d.arg(2)]), d.arg(3)]);
                let inner = d.p(
                    Log1p,
                    vec![d.p(EltDiv, vec![d.p(Square, vec![z]), nu.clone()])],
                );
                let coef = d.p(Mul, vec![d.r(-0.5), d.p(Add, vec![nu, d.r(1.0)])]);
                d.p(EltMul, vec![coef, inner])
            });
            d.constant(-0.5 * PI.ln());
        }
        ("lognormal", 3) => {
            d.check(0, CheckNonNegative);
            d.check(1, CheckFinite);
            d.check(2, CheckPositiveFinite);
            d.term(&[0, 1, 2], |d| {
                let z = d.p(
                    EltDiv,
                    vec![d.p(Sub, vec![d.p(Log, vec![d.arg(0)]), d.arg(1)]), d.arg(2)],
                );
                d.p(Mul, vec![d.r(-0.5), d.p(Square, vec![z])])
            });
            d.term(&[2], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(2)])]));
            d.term(&[0], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(0)])]));
            d.constant(-half_log_2pi);
        }
        ("exponential", 2) => {
            d.check(0, CheckNonNegative);
            d.check(1, CheckPositiveFinite);
            d.term(&[1], |d| d.p(Log, vec![d.arg(1)]));
            d.term(&[0, 1], |d| {
                d.p(Neg, vec![d.p(EltMul, vec![d.arg(1), d.arg(0)])])
            });
        }
        ("gamma", 3) => {
            d.check(0, CheckNotNan);
            d.check(1, CheckPositiveFinite);
            d.check(2, CheckPositiveFinite);
            d.term(&[1], |d| d.p(Neg, vec![d.p(Lgamma, vec![d.arg(1)])]));
            d.term(&[1, 2], |d| {
                d.p(EltMul, vec![d.arg(1), d.p(Log, vec![d.arg(2)])])
            });
            d.term(&[0, 1], |d| {
                d.p(
                    EltMul,
                    vec![d.p(Sub, vec![d.arg(1), d.r(1.0)]), d.p(Log, vec![d.arg(0)])],
                )
            });
            d.term(&[0, 2], |d| {
                d.p(Neg, vec![d.p(EltMul, vec![d.arg(2), d.arg(0)])])
            });
        }
        ("inv_gamma", 3) => {
            d.check(0, CheckNotNan);
            d.check(1, CheckPositiveFinite);
            d.check(2, CheckPositiveFinite);
            d.term(&[1], |d| d.p(Neg, vec![d.p(Lgamma, vec![d.arg(1)])]));
            d.term(&[1, 2], |d| {
                d.p(EltMul, vec![d.arg(1), d.p(Log, vec![d.arg(2)])])
            });
            d.term(&[0, 1], |d| {
                d.p(
                    Neg,
                    vec![d.p(
                        EltMul,
                        vec![d.p(Add, vec![d.arg(1), d.r(1.0)]), d.p(Log, vec![d.arg(0)])],
                    )],
                )
            });
            d.term(&[0, 2], |d| {
                d.p(Neg, vec![d.p(EltDiv, vec![d.arg(2), d.arg(0)])])
            });
        }
        ("beta", 3) => {
            d.check(0, CheckProbability);
            d.check(1, CheckPositiveFinite);
            d.check(2, CheckPositiveFinite);
            d.term(&[1, 2], |d| {
                d.p(Neg, vec![d.p(Lbeta, vec![d.arg(1), d.arg(2)])])
            });
            d.term(&[0, 1], |d| {
                d.p(
                    EltMul,
                    vec![d.p(Sub, vec![d.arg(1), d.r(1.0)]), d.p(Log, vec![d.arg(0)])],
                )
            });
            d.term(&[0, 2], |d| {
                d.p(
                    EltMul,
                    vec![
                        d.p(Sub, vec![d.arg(2), d.r(1.0)]),
                        d.p(Log1m, vec![d.arg(0)]),
                    ],
                )
            });
        }
        ("bernoulli_logit", 2) => {
            d.check(0, CheckProbability);
            d.check(1, CheckNotNan);
            // log_inv_logit((2y - 1) α)
            d.term(&[0, 1], |d| {
                let sign = d.p(Sub, vec![d.p(Mul, vec![d.r(2.0), d.arg(0)]), d.r(1.0)]);
                d.p(LogInvLogit, vec![d.p(EltMul, vec![sign, d.arg(1)])])
            });
        }
        ("bernoulli", 2) => {
            d.check(0, CheckProbability);
            d.check(1, CheckProbability);
            d.term(&[0, 1], |d| {
                let yes = d.p(EltMul, vec![d.arg(0), d.p(Log, vec![d.arg(1)])]);
                let no = d.p(
                    EltMul,
                    vec![
                        d.p(Sub, vec![d.r(1.0), d.arg(0)]),
                        d.p(Log1m, vec![d.arg(1)]),
                    ],
                );
                d.p(Add, vec![yes, no])
            });
        }
        ("binomial", 3) | ("binomial_logit", 3) => {
            let logit = family == "binomial_logit";
            d.check(0, CheckNonNegativeInt);
            d.check(1, CheckNonNegativeInt);
            d.check(2, if logit { CheckFinite } else { CheckProbability });
            d.term(&[0, 1], |d| d.p(Lchoose, vec![d.arg(1), d.arg(0)]));
            d.term(&[0, 1, 2], |d| {
                let (log_p, log_q) = if logit {
                    (
                        d.p(LogInvLogit, vec![d.arg(2)]),
                        d.p(Log1mInvLogit, vec![d.arg(2)]),
                    )
                } else {
                    (d.p(Log, vec![d.arg(2)]), d.p(Log1m, vec![d.arg(2)]))
                };
                let yes = d.p(EltMul, vec![d.arg(0), log_p]);
                let no = d.p(EltMul, vec![d.p(Sub, vec![d.arg(1), d.arg(0)]), log_q]);
                d.p(Add, vec![yes, no])
            });
        }
        ("poisson", 2) => {
            d.check(0, CheckNonNegativeInt);
            d.check(1, CheckNonNegative);
            d.term(&[0, 1], |d| {
                d.p(EltMul, vec![d.arg(0), d.p(Log, vec![d.arg(1)])])
            });
            d.term(&[1], |d| d.p(Neg, vec![d.arg(1)]));
            d.term(&[0], |d| {
                d.p(
                    Neg,
                    vec![d.p(Lgamma, vec![d.p(Add, vec![d.arg(0), d.r(1.0)])])],
                )
            });
        }
        ("poisson_log", 2) => {
            d.check(0, CheckNonNegativeInt);
            d.check(1, CheckNotNan);
            d.term(&[0, 1], |d| d.p(EltMul, vec![d.arg(0), d.arg(1)]));
            d.term(&[1], |d| d.p(Neg, vec![d.p(Exp, vec![d.arg(1)])]));
            d.term(&[0], |d| {
                d.p(
                    Neg,
                    vec![d.p(Lgamma, vec![d.p(Add, vec![d.arg(0), d.r(1.0)])])],
                )
            });
        }
        ("normal_id_glm", 5) if args[0].ty == Type::Vector || args[0].ty.is_scalar() => {
            // normal(y | α + x β, σ)
            let [y, x, alpha, beta, sigma]: [Expr; 5] = args.clone().try_into().expect("5 args");
            let linear = typed(prim(Mul, vec![x, beta], span), Type::Vector);
            let mu = typed(prim(Add, vec![alpha, linear], span), Type::Vector);
            return distribution("normal", vec![y, mu, sigma], propto, span);
        }
        ("poisson_log_glm", 4) => {
            // poisson_log(y | α + x β)
            let [y, x, alpha, beta]: [Expr; 4] = args.clone().try_into().expect("4 args");
            let linear = typed(prim(Mul, vec![x, beta], span), Type::Vector);
            let eta = typed(prim(Add, vec![alpha, linear], span), Type::Vector);
            return distribution("poisson_log", vec![y, eta], propto, span);
        }
        ("neg_binomial_2", 3) | ("neg_binomial_2_log", 3) => {
            // lchoose(n + φ − 1, n) + n log μ − n log(μ + φ) + φ log φ − φ log(μ + φ),
            // with log(μ + φ) = log φ + log1p_exp(η − log φ) for the log form.
            let log_form = family == "neg_binomial_2_log";
            d.check(0, CheckNonNegativeInt);
            d.check(
                1,
                if log_form {
                    CheckFinite
                } else {
                    CheckPositiveFinite
                },
            );
            d.check(2, CheckPositiveFinite);
            d.term(&[0, 2], |d| {
                let top = d.p(Sub, vec![d.p(Add, vec![d.arg(0), d.arg(2)]), d.r(1.0)]);
                d.p(Lchoose, vec![top, d.arg(0)])
            });
            d.term(&[0, 1], |d| {
                if log_form {
                    d.p(EltMul, vec![d.arg(0), d.arg(1)])
                } else {
                    d.p(MultiplyLog, vec![d.arg(0), d.arg(1)])
                }
            });
            d.term(&[0, 1, 2], |d| {
                let log_phi = d.p(Log, vec![d.arg(2)]);
                let log_mu_phi = if log_form {
                    let l = d.p(Log1pExp, vec![d.p(Sub, vec![d.arg(1), log_phi.clone()])]);
                    d.p(Add, vec![log_phi.clone(), l])
                } else {
                    d.p(Log, vec![d.p(Add, vec![d.arg(1), d.arg(2)])])
                };
                // φ (log φ − log(μ + φ)) − n log(μ + φ)
                let a = d.p(
                    EltMul,
                    vec![d.arg(2), d.p(Sub, vec![log_phi, log_mu_phi.clone()])],
                );
                d.p(Sub, vec![a, d.p(EltMul, vec![d.arg(0), log_mu_phi])])
            });
        }
        ("double_exponential", 3) => {
            d.check(0, CheckFinite);
            d.check(1, CheckFinite);
            d.check(2, CheckPositiveFinite);
            d.constant(-(2f64.ln()));
            d.term(&[2], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(2)])]));
            d.term(&[0, 1, 2], |d| {
                let dev = d.p(Abs, vec![d.p(Sub, vec![d.arg(0), d.arg(1)])]);
                d.p(Neg, vec![d.p(EltDiv, vec![dev, d.arg(2)])])
            });
        }
        ("chi_square", 2) | ("inv_chi_square", 2) => {
            // ∓(ν/2 ∓ 1) log y − ν/2 log 2 − lgamma(ν/2) − (y/2 or 1/(2y))
            let inverse = family == "inv_chi_square";
            d.check(0, CheckNonNegative);
            d.check(1, CheckPositiveFinite);
            d.term(&[1], |d| {
                let half = d.p(Mul, vec![d.r(0.5), d.arg(1)]);
                let a = d.p(Mul, vec![half.clone(), d.r(2f64.ln())]);
                d.p(Neg, vec![d.p(Add, vec![a, d.p(Lgamma, vec![half])])])
            });
            d.term(&[0, 1], |d| {
                let half = d.p(Mul, vec![d.r(0.5), d.arg(1)]);
                let w = if inverse {
                    d.p(Neg, vec![d.p(Add, vec![half, d.r(1.0)])])
                } else {
                    d.p(Sub, vec![half, d.r(1.0)])
                };
                d.p(EltMul, vec![w, d.p(Log, vec![d.arg(0)])])
            });
            d.term(&[0], |d| {
                if inverse {
                    d.p(Neg, vec![d.p(EltDiv, vec![d.r(0.5), d.arg(0)])])
                } else {
                    d.p(Mul, vec![d.r(-0.5), d.arg(0)])
                }
            });
        }
        ("scaled_inv_chi_square", 3) => {
            // ν/2 log(ν/2) − lgamma(ν/2) + ν log s − (ν/2 + 1) log y − ν s² / (2y)
            d.check(0, CheckNonNegative);
            d.check(1, CheckPositiveFinite);
            d.check(2, CheckPositiveFinite);
            d.term(&[1], |d| {
                let half = d.p(Mul, vec![d.r(0.5), d.arg(1)]);
                let a = d.p(EltMul, vec![half.clone(), d.p(Log, vec![half.clone()])]);
                d.p(Sub, vec![a, d.p(Lgamma, vec![half])])
            });
            d.term(&[1, 2], |d| {
                d.p(EltMul, vec![d.arg(1), d.p(Log, vec![d.arg(2)])])
            });
            d.term(&[0, 1], |d| {
                let w = d.p(Add, vec![d.p(Mul, vec![d.r(0.5), d.arg(1)]), d.r(1.0)]);
                d.p(Neg, vec![d.p(EltMul, vec![w, d.p(Log, vec![d.arg(0)])])])
            });
            d.term(&[0, 1, 2], |d| {
                let num = d.p(EltMul, vec![d.arg(1), d.p(Square, vec![d.arg(2)])]);
                let den = d.p(Mul, vec![d.r(2.0), d.arg(0)]);
                d.p(Neg, vec![d.p(EltDiv, vec![num, den])])
            });
        }
        ("gumbel", 3) => {
            // −log β − z − exp(−z), z = (y − μ)/β
            d.check(0, CheckNotNan);
            d.check(1, CheckFinite);
            d.check(2, CheckPositiveFinite);
            d.term(&[2], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(2)])]));
            d.term(&[0, 1, 2], |d| {
                let z = d.p(EltDiv, vec![d.p(Sub, vec![d.arg(0), d.arg(1)]), d.arg(2)]);
                let e = d.p(Exp, vec![d.p(Neg, vec![z.clone()])]);
                d.p(Neg, vec![d.p(Add, vec![z, e])])
            });
        }
        ("rayleigh", 2) => {
            // log y − 2 log σ − y² / (2σ²)
            d.check(0, CheckNonNegative);
            d.check(1, CheckPositiveFinite);
            d.term(&[0], |d| d.p(Log, vec![d.arg(0)]));
            d.term(&[1], |d| {
                d.p(Mul, vec![d.r(-2.0), d.p(Log, vec![d.arg(1)])])
            });
            d.term(&[0, 1], |d| {
                let r = d.p(EltDiv, vec![d.arg(0), d.arg(1)]);
                d.p(Mul, vec![d.r(-0.5), d.p(Square, vec![r])])
            });
        }
        ("pareto", 3) => {
            // log α + α log y_min − (α + 1) log y, and log 0 below y_min
            d.check(0, CheckNotNan);
            d.check(1, CheckPositiveFinite);
            d.check(2, CheckPositiveFinite);
            d.always(|d| {
                let inside = d.p(Step, vec![d.p(Sub, vec![d.arg(0), d.arg(1)])]);
                typed(d.p(Sum, vec![d.p(Log, vec![inside])]), Type::Real)
            });
            d.term(&[2], |d| d.p(Log, vec![d.arg(2)]));
            d.term(&[1, 2], |d| {
                d.p(EltMul, vec![d.arg(2), d.p(Log, vec![d.arg(1)])])
            });
            d.term(&[0, 2], |d| {
                let w = d.p(Add, vec![d.arg(2), d.r(1.0)]);
                d.p(Neg, vec![d.p(EltMul, vec![w, d.p(Log, vec![d.arg(0)])])])
            });
        }
        ("beta_binomial", 4) => {
            // lchoose(N, n) + lbeta(n + α, N − n + β) − lbeta(α, β)
            d.check(0, CheckNonNegativeInt);
            d.check(1, CheckNonNegativeInt);
            d.check(2, CheckPositiveFinite);
            d.check(3, CheckPositiveFinite);
            d.term(&[0, 1], |d| d.p(Lchoose, vec![d.arg(1), d.arg(0)]));
            d.term(&[0, 1, 2, 3], |d| {
                let a = d.p(Add, vec![d.arg(0), d.arg(2)]);
                let b = d.p(Add, vec![d.p(Sub, vec![d.arg(1), d.arg(0)]), d.arg(3)]);
                d.p(Lbeta, vec![a, b])
            });
            d.term(&[2, 3], |d| {
                d.p(Neg, vec![d.p(Lbeta, vec![d.arg(2), d.arg(3)])])
            });
        }
        ("skew_normal", 4) => {
            // −½ log 2π − log ω − z²/2 + log erfc(−α z / √2)
            d.check(0, CheckNotNan);
            d.check(1, CheckFinite);
            d.check(2, CheckPositiveFinite);
            d.check(3, CheckFinite);
            d.constant(-half_log_2pi);
            d.term(&[2], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(2)])]));
            d.term(&[0, 1, 2, 3], |d| {
                let z = d.p(EltDiv, vec![d.p(Sub, vec![d.arg(0), d.arg(1)]), d.arg(2)]);
                let sq = d.p(Mul, vec![d.r(-0.5), d.p(Square, vec![z.clone()])]);
                let arg = d.p(
                    EltMul,
                    vec![
                        d.p(Mul, vec![d.r(-std::f64::consts::FRAC_1_SQRT_2), d.arg(3)]),
                        z,
                    ],
                );
                d.p(Add, vec![sq, d.p(Log, vec![d.p(Erfc, vec![arg])])])
            });
        }
        ("bernoulli_logit_glm", 4) => {
            // bernoulli_logit(y | α + x β)
            let [y, x, alpha, beta]: [Expr; 4] = args.clone().try_into().expect("4 args");
            let linear = typed(prim(Mul, vec![x, beta], span), Type::Vector);
            let eta = typed(prim(Add, vec![alpha, linear], span), Type::Vector);
            return distribution("bernoulli_logit", vec![y, eta], propto, span);
        }
        ("uniform", 3) => {
            d.check(0, CheckNotNan);
            d.check(1, CheckFinite);
            d.check(2, CheckFinite);
            // log 1[α ≤ y ≤ β], as log(step(y − α) · step(β − y))
            d.always(|d| {
                let inside = d.p(
                    EltMul,
                    vec![
                        d.p(Step, vec![d.p(Sub, vec![d.arg(0), d.arg(1)])]),
                        d.p(Step, vec![d.p(Sub, vec![d.arg(2), d.arg(0)])]),
                    ],
                );
                typed(d.p(Sum, vec![d.p(Log, vec![inside])]), Type::Real)
            });
            d.term(&[1, 2], |d| {
                d.p(
                    Neg,
                    vec![d.p(Log, vec![d.p(Sub, vec![d.arg(2), d.arg(1)])])],
                )
            });
        }
        ("logistic", 3) => {
            d.check(0, CheckFinite);
            d.check(1, CheckFinite);
            d.check(2, CheckPositiveFinite);
            // −z − 2 log1p_exp(−z) − log σ
            d.term(&[0, 1, 2], |d| {
                let z = d.p(EltDiv, vec![d.p(Sub, vec![d.arg(0), d.arg(1)]), d.arg(2)]);
                let tail = d.p(Log1pExp, vec![d.p(Neg, vec![z.clone()])]);
                d.p(Sub, vec![d.p(Neg, vec![z]), d.p(Mul, vec![d.r(2.0), tail])])
            });
            d.term(&[2], |d| d.p(Neg, vec![d.p(Log, vec![d.arg(2)])]));
        }
        ("weibull", 3) => {
            d.check(0, CheckNonNegative);
            d.check(1, CheckPositiveFinite);
            d.check(2, CheckPositiveFinite);
            // log α + (α − 1) log y − α log σ − (y/σ)^α
            d.term(&[1], |d| d.p(Log, vec![d.arg(1)]));
            d.term(&[0, 1], |d| {
                d.p(
                    EltMul,
                    vec![d.p(Sub, vec![d.arg(1), d.r(1.0)]), d.p(Log, vec![d.arg(0)])],
                )
            });
            d.term(&[1, 2], |d| {
                d.p(
                    Neg,
                    vec![d.p(EltMul, vec![d.arg(1), d.p(Log, vec![d.arg(2)])])],
                )
            });
            d.term(&[0, 1, 2], |d| {
                let ratio = d.p(EltDiv, vec![d.arg(0), d.arg(2)]);
                d.p(Neg, vec![d.p(Pow, vec![ratio, d.arg(1)])])
            });
        }
        ("categorical", 2) | ("categorical_logit", 2) => {
            // Σ log θ[y], or Σ β[y] − N log_sum_exp(β)
            let logit = family == "categorical_logit";
            let y_is_array = matches!(args[0].ty, Type::Array(_));
            d.term_once(&[0, 1], |d| {
                let index = if y_is_array {
                    Index::Multi(d.arg(0))
                } else {
                    Index::Single(d.arg(0))
                };
                let picked_ty = if y_is_array { Type::Vector } else { Type::Real };
                let picked = Expr {
                    kind: ExprKind::Index(Box::new(d.arg(1)), vec![index]),
                    ty: picked_ty,
                    ad: d.arg(1).ad,
                    span: d.span,
                };
                if logit {
                    let n = if y_is_array {
                        typed(d.p(Size, vec![d.arg(0)]), Type::Int)
                    } else {
                        d.r(1.0)
                    };
                    let norm = typed(d.p(LogSumExp, vec![d.arg(1)]), Type::Real);
                    let total = typed(d.p(Sum, vec![picked]), Type::Real);
                    d.p(Sub, vec![total, d.p(Mul, vec![n, norm])])
                } else {
                    typed(d.p(Sum, vec![d.p(Log, vec![picked])]), Type::Real)
                }
            });
        }
        ("dirichlet", 2) if args[0].ty == Type::Vector => {
            // lgamma(Σα) − Σ lgamma(α) + Σ (α − 1) log θ
            d.check(1, CheckPositiveFinite);
            d.term_once(&[1], |d| {
                let total = typed(d.p(Sum, vec![d.arg(1)]), Type::Real);
                let norm = typed(d.p(Sum, vec![d.p(Lgamma, vec![d.arg(1)])]), Type::Real);
                d.p(Sub, vec![d.p(Lgamma, vec![total]), norm])
            });
            d.term_once(&[0, 1], |d| {
                let w = d.p(Sub, vec![d.arg(1), d.r(1.0)]);
                let t = d.p(EltMul, vec![w, d.p(Log, vec![d.arg(0)])]);
                typed(d.p(Sum, vec![t]), Type::Real)
            });
        }
        ("lkj_corr_cholesky", 2)
            if args[1].ad == AdLevel::DataOnly && propto && args[1].ty.is_scalar() =>
        {
            // Σ_k (K − k − 2 + 2(η − 1)) log L[k+1, k+1], k = 0..K−2 (the
            // normalising constant depends only on η, data here).
            d.check(1, CheckPositive);
            d.term_once(&[0, 1], |d| {
                let k = typed(d.p(Rows, vec![d.arg(0)]), Type::Int);
                let km1 = typed(d.p(Sub, vec![k.clone(), int(1, d.span)]), Type::Int);
                let km2 = typed(d.p(Sub, vec![k, int(2, d.span)]), Type::Int);
                let diag = typed(d.p(Diagonal, vec![d.arg(0)]), Type::Vector);
                let logs = typed(
                    d.p(
                        Log,
                        vec![typed(d.p(Tail, vec![diag, km1.clone()]), Type::Vector)],
                    ),
                    Type::Vector,
                );
                let ramp = typed(d.p(Linspaced, vec![km1, d.r(0.0), km2]), Type::Vector);
                let weights = typed(d.p(Reverse, vec![ramp]), Type::Vector);
                let shape = d.p(Mul, vec![d.r(2.0), d.p(Sub, vec![d.arg(1), d.r(1.0)])]);
                let w = typed(d.p(Add, vec![weights, shape]), Type::Vector);
                typed(d.p(Sum, vec![d.p(EltMul, vec![w, logs])]), Type::Real)
            });
        }
        ("multi_normal_cholesky", 3) if matches!(args[0].ty, Type::Array(_)) => {
            // N vectors as the columns of Y (K×N): −½ |L⁻¹(Y − M)|²_F
            // − N Σ log diag(L) − ½ N K log 2π.
            let columns = |e: Expr, span: Span| {
                let rows = typed(prim(ToMatrix, vec![e], span), Type::Matrix);
                typed(prim(Transpose, vec![rows], span), Type::Matrix)
            };
            d.check(0, CheckNotNan);
            d.check(1, CheckFinite);
            let mu_is_vector = matches!(args[1].ty, Type::Vector | Type::RowVector);
            d.term_once(&[0, 1, 2], |d| {
                let n = typed(d.p(Size, vec![d.arg(0)]), Type::Int);
                let y = columns(d.arg(0), d.span);
                let m = if mu_is_vector {
                    let mu = typed(d.p(ToVector, vec![d.arg(1)]), Type::Vector);
                    typed(d.p(RepMatrix, vec![mu, n]), Type::Matrix)
                } else {
                    columns(d.arg(1), d.span)
                };
                let diff = typed(d.p(Sub, vec![y, m]), Type::Matrix);
                let z = typed(d.p(MdivideLeftTriLow, vec![d.arg(2), diff]), Type::Matrix);
                d.p(
                    Mul,
                    vec![d.r(-0.5), typed(d.p(DotSelf, vec![z]), Type::Real)],
                )
            });
            d.term_once(&[2], |d| {
                let n = typed(d.p(Size, vec![d.arg(0)]), Type::Int);
                let diag = typed(d.p(Diagonal, vec![d.arg(2)]), Type::Vector);
                let logs = typed(d.p(Log, vec![diag]), Type::Vector);
                let total = typed(d.p(Sum, vec![logs]), Type::Real);
                d.p(Neg, vec![d.p(Mul, vec![n, total])])
            });
            d.constant(-half_log_2pi);
        }
        ("multi_normal", 3) if matches!(args[0].ty, Type::Vector | Type::Array(_)) => {
            // multi_normal_cholesky(y | μ, cholesky_decompose(Σ)); the
            // decomposition rejects a Σ that is not symmetric positive definite.
            let [y, mu, sigma]: [Expr; 3] = args.clone().try_into().expect("3 args");
            let l = typed(prim(CholeskyDecompose, vec![sigma], span), Type::Matrix);
            return distribution("multi_normal_cholesky", vec![y, mu, l], propto, span);
        }
        ("multi_normal_cholesky", 3) if args[0].ty == Type::Vector => {
            // -½ |L⁻¹(y − μ)|² − Σ log diag(L) − ½ K log 2π
            d.check(0, CheckNotNan);
            d.check(1, CheckFinite);
            d.term_once(&[0, 1, 2], |d| {
                let diff = typed(d.p(Sub, vec![d.arg(0), d.arg(1)]), Type::Vector);
                let z = typed(d.p(MdivideLeftTriLow, vec![d.arg(2), diff]), Type::Vector);
                d.p(
                    Mul,
                    vec![d.r(-0.5), typed(d.p(DotSelf, vec![z]), Type::Real)],
                )
            });
            d.term_once(&[2], |d| {
                let diag = typed(d.p(Diagonal, vec![d.arg(2)]), Type::Vector);
                let logs = typed(d.p(Log, vec![diag]), Type::Vector);
                d.p(Neg, vec![typed(d.p(Sum, vec![logs]), Type::Real)])
            });
            d.constant(-half_log_2pi);
        }
        _ => return Err(Unsupported(format!("the distribution `{family}`"))),
    }
    Ok(d.finish())
}
