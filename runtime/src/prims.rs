//! Value rules of the primitives: arithmetic, elementwise math, reductions.
//! Linear algebra and construction live in `prims_matrix`.

use super::error::{ErrorKind, Result, RuntimeError};
use super::prims_matrix;
use super::values::*;
use bat_math::scalar as m;
use bat_math::scalar::integer;
use language::mir::Prim;
use language::value::Value;

fn int_result(r: std::result::Result<i64, integer::IntError>) -> Result<Value> {
    let i = r.map_err(|e| RuntimeError::new(ErrorKind::Fatal, e.to_string()))?;
    stan_int("integer division", Some(i)).map(Value::Int)
}

/// Stan's `int` is 32-bit: a result outside its range is an overflow error.
pub(crate) fn stan_int(op: &str, result: Option<i64>) -> Result<i64> {
    result
        .filter(|r| i32::try_from(*r).is_ok())
        .ok_or_else(|| RuntimeError::fatal(format!("integer overflow in {op}")))
}

/// Evaluate primitive `p` on `args`.
pub(crate) fn eval(p: Prim, args: &[Value]) -> Result<Value> {
    use Prim::*;
    let a = |i: usize| -> Result<&Value> {
        args.get(i)
            .ok_or_else(|| RuntimeError::fatal(format!("{p}: missing argument {}", i + 1)))
    };
    let name = p.name();
    if let Some(v) = complex_scalar(p, args)? {
        return Ok(v);
    }
    let unary = |f: fn(f64) -> f64| -> Result<Value> { map_real(name, a(0)?, f) };
    let binary = |f: fn(f64, f64) -> f64| -> Result<Value> { zip_real(name, a(0)?, a(1)?, f) };
    Ok(match p {
        Add | Sub => {
            let (x, y) = (a(0)?, a(1)?);
            if let (Value::Int(i), Value::Int(j)) = (x, y) {
                let r = if p == Add {
                    i.checked_add(*j)
                } else {
                    i.checked_sub(*j)
                };
                return stan_int(name, r).map(Value::Int);
            }
            if p == Add {
                binary(|x, y| x + y)?
            } else {
                binary(|x, y| x - y)?
            }
        }
        Neg => match a(0)? {
            Value::Int(i) => Value::Int(stan_int(name, i.checked_neg())?),
            v => map_real(name, v, |x| -x)?,
        },
        Mul => prims_matrix::multiply(a(0)?, a(1)?)?,
        Div => match (a(0)?, a(1)?) {
            (Value::Int(i), Value::Int(j)) => int_result(integer::int_divide(*i, *j))?,
            (x, y) if is_scalar(y) => zip_real(name, x, y, |x, y| x / y)?,
            (x, y) => prims_matrix::mdivide_right(x, y)?,
        },
        IntDiv => int_result(integer::int_divide(int(a(0)?)?, int(a(1)?)?))?,
        Choose => int_result(integer::choose(int(a(0)?)?, int(a(1)?)?))?,
        Mod => int_result(integer::modulus(int(a(0)?)?, int(a(1)?)?))?,
        EltMul => binary(|x, y| x * y)?,
        EltDiv => binary(|x, y| x / y)?,
        LeftDiv => prims_matrix::mdivide_left(a(0)?, a(1)?)?,
        Pow => binary(f64::powf)?,
        Transpose => prims_matrix::transpose(a(0)?)?,
        Eq | Neq | Lt | Leq | Gt | Geq => {
            let (x, y) = (a(0)?, a(1)?);
            let truth = match (x, y) {
                (Value::Int(i), Value::Int(j)) => match p {
                    Eq => i == j,
                    Neq => i != j,
                    Lt => i < j,
                    Leq => i <= j,
                    Gt => i > j,
                    _ => i >= j,
                },
                _ => {
                    let (x, y) = (real(x)?, real(y)?);
                    match p {
                        Eq => x == y,
                        Neq => x != y,
                        Lt => x < y,
                        Leq => x <= y,
                        Gt => x > y,
                        _ => x >= y,
                    }
                }
            };
            Value::Int(truth as i64)
        }
        Not => Value::Int(m::integer::logical_negation(real(a(0)?)?)),

        Exp => unary(f64::exp)?,
        Exp2 => unary(f64::exp2)?,
        Expm1 => unary(f64::exp_m1)?,
        Log => unary(f64::ln)?,
        Log2 => unary(f64::log2)?,
        Log10 => unary(f64::log10)?,
        Log1p => unary(f64::ln_1p)?,
        Log1m => unary(m::log1m)?,
        Log1pExp => unary(m::log1p_exp)?,
        Log1mExp => unary(m::log1m_exp)?,
        Sqrt => unary(f64::sqrt)?,
        Cbrt => unary(f64::cbrt)?,
        Square => match a(0)? {
            Value::Int(i) => Value::Real((*i as f64).powi(2)),
            v => map_real(name, v, |x| x * x)?,
        },
        Inv => unary(|x| 1.0 / x)?,
        InvSqrt => unary(|x| 1.0 / x.sqrt())?,
        InvSquare => unary(|x| 1.0 / (x * x))?,
        Abs => match a(0)? {
            Value::Int(i) => Value::Int(stan_int(name, i.checked_abs())?),
            v if all_ints(v) => map_ints(v, |i| i.abs()),
            v => map_real(name, v, f64::abs)?,
        },
        Floor => unary(f64::floor)?,
        Ceil => unary(f64::ceil)?,
        Round => unary(f64::round)?,
        Trunc => unary(f64::trunc)?,
        Sin => unary(f64::sin)?,
        Cos => unary(f64::cos)?,
        Tan => unary(f64::tan)?,
        Asin => unary(f64::asin)?,
        Acos => unary(f64::acos)?,
        Atan => unary(f64::atan)?,
        Sinh => unary(f64::sinh)?,
        Cosh => unary(f64::cosh)?,
        Tanh => unary(f64::tanh)?,
        Asinh => unary(f64::asinh)?,
        Acosh => unary(f64::acosh)?,
        Atanh => unary(f64::atanh)?,
        Logit => unary(m::logit)?,
        InvLogit => unary(m::inv_logit)?,
        LogInvLogit => unary(m::log_inv_logit)?,
        Log1mInvLogit => unary(m::log1m_inv_logit)?,
        InvCloglog => unary(|x| 1.0 - (-x.exp()).exp())?,
        Lgamma => unary(m::lgamma)?,
        Digamma => unary(m::digamma)?,
        Trigamma => unary(m::trigamma)?,
        Tgamma => unary(m::tgamma)?,
        Erf => unary(m::erf)?,
        Erfc => unary(m::erfc)?,
        Phi => unary(m::Phi)?,
        PhiApprox => unary(m::Phi_approx)?,
        InvPhi => unary(m::inv_Phi)?,
        LogPhi => unary(m::log_Phi)?,
        Step => match a(0)? {
            v if is_scalar(v) => Value::Real(m::integer::step(real(v)?)),
            v => map_real(name, v, m::integer::step)?,
        },
        IsNan => Value::Int(real(a(0)?)?.is_nan() as i64),
        IsInf => Value::Int(real(a(0)?)?.is_infinite() as i64),

        Atan2 => binary(f64::atan2)?,
        Fmax => match (a(0)?, a(1)?) {
            (Value::Int(i), Value::Int(j)) => Value::Int(*i.max(j)),
            _ => binary(f64::max)?,
        },
        Fmin => match (a(0)?, a(1)?) {
            (Value::Int(i), Value::Int(j)) => Value::Int(*i.min(j)),
            _ => binary(f64::min)?,
        },
        Fdim => binary(|x, y| (x - y).max(0.0))?,
        Fmod => binary(|x, y| x % y)?,
        Hypot => binary(f64::hypot)?,
        LogSumExp2 => binary(m::log_sum_exp2)?,
        LogDiffExp => binary(m::log_diff_exp)?,
        Lbeta => binary(m::lbeta)?,
        Lchoose => binary(m::lchoose)?,
        LogFallingFactorial => binary(m::log_falling_factorial)?,
        LogRisingFactorial => binary(m::log_rising_factorial)?,
        LogInvLogitDiff => binary(m::log_inv_logit_diff)?,
        GammaP => binary(m::gamma_p)?,
        GammaQ => binary(m::gamma_q)?,
        IncBeta => zip_n(name, &[a(0)?, a(1)?, a(2)?], &|x| {
            m::inc_beta(x[0], x[1], x[2])
        })?,
        BinaryLogLoss => binary(|y, p| if y != 0.0 { -p.ln() } else { -m::log1m(p) })?,
        MultiplyLog | Lmultiply => binary(m::lmultiply)?,
        Fma => zip_n(name, &[a(0)?, a(1)?, a(2)?], &|x| x[0].mul_add(x[1], x[2]))?,

        Sum => {
            let v = a(0)?;
            if all_ints(v) {
                let mut total: i64 = 0;
                for i in flat_ints(v)? {
                    total = stan_int(name, total.checked_add(i))?;
                }
                Value::Int(total)
            } else {
                Value::Real(flat(v).iter().sum())
            }
        }
        Prod => {
            let v = a(0)?;
            if all_ints(v) {
                let mut total: i64 = 1;
                for i in flat_ints(v)? {
                    total = stan_int(name, total.checked_mul(i))?;
                }
                Value::Int(total)
            } else {
                Value::Real(flat(v).iter().product())
            }
        }
        Mean => {
            let xs = nonempty(name, a(0)?)?;
            Value::Real(xs.iter().sum::<f64>() / xs.len() as f64)
        }
        Variance | Sd => {
            let xs = nonempty(name, a(0)?)?;
            let n = xs.len() as f64;
            let mean = xs.iter().sum::<f64>() / n;
            let var = if xs.len() == 1 {
                0.0
            } else {
                xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
            };
            Value::Real(if p == Sd { var.sqrt() } else { var })
        }
        LogSumExp => Value::Real(m::log_sum_exp(&flat(a(0)?))),
        Max | Min => {
            let v = a(0)?;
            if all_ints(v) {
                let xs = flat_ints(v)?;
                let r = if p == Max {
                    xs.iter().max()
                } else {
                    xs.iter().min()
                };
                Value::Int(*r.ok_or_else(|| {
                    RuntimeError::rejection(format!("{name}: the int array is empty"))
                })?)
            } else {
                let xs = flat(v);
                let r = if p == Max {
                    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                } else {
                    xs.iter().copied().fold(f64::INFINITY, f64::min)
                };
                Value::Real(r)
            }
        }
        DotSelf => Value::Real(flat(a(0)?).iter().map(|x| x * x).sum()),
        DotProduct => {
            let (x, y) = (flat(a(0)?), flat(a(1)?));
            same_len(name, x.len(), y.len())?;
            Value::Real(x.iter().zip(&y).map(|(x, y)| x * y).sum())
        }
        Norm1 => Value::Real(flat(a(0)?).iter().map(|x| x.abs()).sum()),
        Norm2 => Value::Real(flat(a(0)?).iter().map(|x| x * x).sum::<f64>().sqrt()),
        Softmax => Value::Vector(bat_math::vector::softmax(&flat(a(0)?))),
        LogSoftmax => Value::Vector(bat_math::vector::log_softmax(&flat(a(0)?))),
        CumulativeSum => {
            let v = a(0)?;
            if all_ints(v) {
                let mut acc = 0i64;
                let mut out = Vec::new();
                for i in flat_ints(v)? {
                    acc = stan_int(name, acc.checked_add(i))?;
                    out.push(acc);
                }
                int_array(out)
            } else {
                let mut acc = 0.0;
                let sums: Vec<f64> = flat(v)
                    .into_iter()
                    .map(|x| {
                        acc += x;
                        acc
                    })
                    .collect();
                with_data(v, &mut sums.into_iter())
            }
        }
        ToInt => {
            let x = real(a(0)?)?;
            if !x.is_finite() || x.abs() >= 2f64.powi(63) {
                return Err(RuntimeError::rejection(format!(
                    "to_int: {x} is outside the range of int"
                )));
            }
            Value::Int(x.trunc() as i64)
        }

        Pi => Value::Real(std::f64::consts::PI),
        E => Value::Real(std::f64::consts::E),
        NotANumber => Value::Real(f64::NAN),
        PositiveInfinity => Value::Real(f64::INFINITY),
        NegativeInfinity => Value::Real(f64::NEG_INFINITY),
        MachinePrecision => Value::Real(f64::EPSILON),
        CheckPositiveFinite | CheckPositive | CheckNonNegative | CheckFinite | CheckNotNan
        | CheckProbability | CheckNonNegativeInt => {
            check(p, a(0)?, args.get(1))?;
            Value::Real(0.0)
        }
        _ => prims_matrix::eval(p, args)?,
    })
}

fn map_ints(v: &Value, f: impl Fn(i64) -> i64 + Copy) -> Value {
    match v {
        Value::Int(i) => Value::Int(f(*i)),
        Value::Array(items) => Value::Array(items.iter().map(|i| map_ints(i, f)).collect()),
        other => other.clone(),
    }
}

fn nonempty(name: &str, v: &Value) -> Result<Vec<f64>> {
    let xs = flat(v);
    if xs.is_empty() {
        return Err(RuntimeError::rejection(format!(
            "{name}: the argument has no elements"
        )));
    }
    Ok(xs)
}

pub(crate) fn same_len(name: &str, a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(RuntimeError::fatal(format!(
            "{name}: sizes do not match ({a} and {b})"
        )))
    }
}

/// Whether the value `x` passes the argument check `p` (`check_positive`,
/// `check_not_nan`, ...; any other check is non-negativity of an int).
/// The batched kernels test whole blocks of values with it.
#[inline(always)]
pub fn passes_check(p: Prim, x: f64) -> bool {
    use Prim::*;
    match p {
        CheckPositiveFinite => x > 0.0 && x.is_finite(),
        CheckPositive => x > 0.0,
        CheckNonNegative => x >= 0.0,
        CheckFinite => x.is_finite(),
        CheckNotNan => !x.is_nan(),
        CheckProbability => (0.0..=1.0).contains(&x),
        _ => x >= 0.0,
    }
}

/// Stan's argument checks of the distributions: a domain error (rejection)
/// naming the check, the argument and the offending value.
fn check(p: Prim, v: &Value, label: Option<&Value>) -> Result<()> {
    use Prim::*;
    let ok = |x: f64| passes_check(p, x);
    let what = match p {
        CheckPositiveFinite => "positive finite",
        CheckPositive => "positive",
        CheckNonNegative | CheckNonNegativeInt => "nonnegative",
        CheckFinite => "finite",
        CheckNotNan => "not nan",
        _ => "in the interval [0, 1]",
    };
    let which = match label {
        Some(Value::Int(k)) => format!("argument {k}"),
        _ => "an argument".to_string(),
    };
    let xs = flat(v);
    match xs.iter().position(|&x| !ok(x)) {
        None => Ok(()),
        Some(i) => {
            let elem = if is_scalar(v) {
                String::new()
            } else {
                format!("[{}]", i + 1)
            };
            Err(RuntimeError::rejection(format!(
                "{which}{elem} is {}, but must be {what}",
                xs[i]
            )))
        }
    }
}

/// Complex scalar arithmetic (`complex` operands mixed with reals or ints);
/// `None` when no operand is complex.
fn complex_scalar(p: Prim, args: &[Value]) -> Result<Option<Value>> {
    use Prim::*;
    if !args.iter().any(|a| matches!(a, Value::Complex(..))) {
        return Ok(None);
    }
    let c = |v: &Value| -> Result<(f64, f64)> {
        match v {
            Value::Complex(re, im) => Ok((*re, *im)),
            other => Ok((real(other)?, 0.0)),
        }
    };
    let z = |re: f64, im: f64| Ok(Some(Value::Complex(re, im)));
    let (a, b) = (
        c(&args[0])?,
        args.get(1).map(c).transpose()?.unwrap_or((0.0, 0.0)),
    );
    match p {
        Add => z(a.0 + b.0, a.1 + b.1),
        Sub => z(a.0 - b.0, a.1 - b.1),
        Neg => z(-a.0, -a.1),
        Mul | EltMul => z(a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0),
        Div | EltDiv => {
            let d = b.0 * b.0 + b.1 * b.1;
            z((a.0 * b.0 + a.1 * b.1) / d, (a.1 * b.0 - a.0 * b.1) / d)
        }
        Abs => Ok(Some(Value::Real(a.0.hypot(a.1)))),
        Eq => Ok(Some(Value::Int((a == b) as i64))),
        Neq => Ok(Some(Value::Int((a != b) as i64))),
        GetReal => Ok(Some(Value::Real(a.0))),
        GetImag => Ok(Some(Value::Real(a.1))),
        _ => Err(RuntimeError::new(
            ErrorKind::Unsupported,
            format!("`{p}` of complex numbers is not implemented by the interpreter yet"),
        )),
    }
}
