//! Batched kernels over dense slots for the hot primitives. Each applies
//! the same scalar function as the interpreter (`language::interp`'s
//! prims and `bat_math`), element by element and lane by lane, in the
//! same order, so results are bit-identical. A kernel returns `None` when
//! its operands are not of the form it handles (including every case in
//! which the interpreter would fail); the caller then goes lane by lane.

use super::gemm;
use crate::lanes::{Dense, Lanes, Slot, State};
use language::data::Shape;
use language::interp::lane;
use language::mir::{Expr, Prim};
use language::types::Type;
use language::value::Value;
use std::sync::Arc;

use bat_math::scalar as m;

/// One operand of an elementwise kernel.
enum Src<'a> {
    /// The same scalar for every element and lane.
    Scalar(f64),
    /// A shared container: element e is the same for every lane.
    Elems(Vec<f64>),
    /// A dense real slot of `n` elements.
    Lanes(&'a [f64], usize),
}

/// Element `e` of an operand: a constant or the Z lanes.
#[derive(Clone, Copy)]
enum Col<'a> {
    Const(f64),
    Lane(&'a [f64]),
}

impl Src<'_> {
    fn col(&self, e: usize, z: usize) -> Col<'_> {
        match self {
            Src::Scalar(x) => Col::Const(*x),
            Src::Elems(v) => Col::Const(v[e]),
            Src::Lanes(d, 1) => Col::Lane(&d[..z]),
            Src::Lanes(d, _) => Col::Lane(&d[e * z..(e + 1) * z]),
        }
    }
}

/// An operand as a kernel sees it: the source, its shape (`None` for
/// scalars) and whether it is per lane.
struct Operand<'a> {
    src: Src<'a>,
    shape: Option<Shape>,
}

fn rank(shape: &Option<Shape>) -> u8 {
    match shape {
        Some(Shape::Matrix(..)) => 4,
        Some(Shape::Vector(_)) => 3,
        Some(Shape::RowVector(_)) => 2,
        Some(Shape::Array(..)) => 1,
        _ => 0,
    }
}

fn operand(slot: &Slot) -> Option<Operand<'_>> {
    match slot {
        Slot::Shared(v) => match &**v {
            Value::Int(i) => Some(Operand {
                src: Src::Scalar(*i as f64),
                shape: None,
            }),
            Value::Real(x) => Some(Operand {
                src: Src::Scalar(*x),
                shape: None,
            }),
            other => {
                let (shape, _) = crate::lanes::dense_shape(other)?;
                Some(Operand {
                    src: Src::Elems(lane::flat_reals(other)),
                    shape: Some(shape),
                })
            }
        },
        Slot::Real(d) => Some(Operand {
            src: Src::Lanes(&d.data, d.elements()),
            shape: (d.shape != Shape::Real).then(|| d.shape.clone()),
        }),
        _ => None,
    }
}

/// The shape and element count of an elementwise result (the
/// interpreter's `zip_n`: the highest-ranked operand, the last of equal
/// rank); `None` when container sizes differ (an error).
fn zip_shape(ops: &[Operand]) -> Option<(Shape, usize)> {
    // `max_by_key` keeps the last of equal rank, as the interpreter's.
    let template = ops.iter().max_by_key(|o| rank(&o.shape))?;
    let Some(shape) = &template.shape else {
        return Some((Shape::Real, 1));
    };
    let n = shape.num_reals();
    for o in ops {
        if let Some(s) = &o.shape
            && s.num_reals() != n
        {
            return None;
        }
    }
    Some((super::index::real_shape(shape), n))
}

fn map1(a: &Operand, z: usize, f: impl Fn(f64) -> f64) -> Option<Slot> {
    let (shape, n) = zip_shape(std::slice::from_ref(a))?;
    let mut out = Vec::with_capacity(n * z);
    for e in 0..n {
        match a.src.col(e, z) {
            Col::Const(x) => out.extend(std::iter::repeat_n(f(x), z)),
            Col::Lane(xs) => out.extend(xs.iter().map(|&x| f(x))),
        }
    }
    Some(Slot::Real(Dense::new(shape, z, out)))
}

fn map2(a: &Operand, b: &Operand, z: usize, f: impl Fn(f64, f64) -> f64) -> Option<Slot> {
    let (shape, n) = zip_shape(&[
        Operand {
            src: Src::Scalar(0.0),
            shape: a.shape.clone(),
        },
        Operand {
            src: Src::Scalar(0.0),
            shape: b.shape.clone(),
        },
    ])?;
    let mut out = Vec::with_capacity(n * z);
    for e in 0..n {
        match (a.src.col(e, z), b.src.col(e, z)) {
            (Col::Const(x), Col::Const(y)) => out.extend(std::iter::repeat_n(f(x, y), z)),
            (Col::Const(x), Col::Lane(ys)) => out.extend(ys.iter().map(|&y| f(x, y))),
            (Col::Lane(xs), Col::Const(y)) => out.extend(xs.iter().map(|&x| f(x, y))),
            (Col::Lane(xs), Col::Lane(ys)) => out.extend(xs.iter().zip(ys).map(|(&x, &y)| f(x, y))),
        }
    }
    Some(Slot::Real(Dense::new(shape, z, out)))
}

fn map3(ops: &[Operand; 3], z: usize, f: impl Fn(f64, f64, f64) -> f64) -> Option<Slot> {
    let shapes: Vec<Operand> = ops
        .iter()
        .map(|o| Operand {
            src: Src::Scalar(0.0),
            shape: o.shape.clone(),
        })
        .collect();
    let (shape, n) = zip_shape(&shapes)?;
    let mut out = Vec::with_capacity(n * z);
    for e in 0..n {
        let cols = [
            ops[0].src.col(e, z),
            ops[1].src.col(e, z),
            ops[2].src.col(e, z),
        ];
        let at = |c: Col, l: usize| match c {
            Col::Const(x) => x,
            Col::Lane(xs) => xs[l],
        };
        out.extend((0..z).map(|l| f(at(cols[0], l), at(cols[1], l), at(cols[2], l))));
    }
    Some(Slot::Real(Dense::new(shape, z, out)))
}

/// A batched kernel for `p` on `args`, or `None` (see the module docs).
pub(crate) fn prim(
    p: Prim,
    args: &[&Slot],
    st: &mut State,
    active: &Lanes,
    e: &Expr,
) -> Option<Slot> {
    use Prim::*;
    if args.iter().all(|a| a.is_shared()) {
        return None;
    }
    let z = st.z;
    if is_check(p) {
        return check(p, args, st, active, e);
    }
    if p == Mul
        && st.gemm
        && let Some(slot) = gemm::multiply(args[0], args[1], false)
    {
        return Some(slot);
    }
    // From here on: real elementwise math and reductions on real operands.
    let mut ops: Vec<Operand> = args.iter().map(|a| operand(a)).collect::<Option<_>>()?;
    macro_rules! unary {
        ($f:expr) => {
            map1(&ops[0], z, $f)
        };
    }
    macro_rules! binary {
        ($f:expr) => {
            map2(&ops[0], &ops[1], z, $f)
        };
    }
    let scalar = |i: usize| ops[i].shape.is_none();
    match p {
        Add => binary!(|x, y| x + y),
        Sub => binary!(|x, y| x - y),
        Neg => unary!(|x| -x),
        Mul if scalar(0) || scalar(1) => binary!(|x, y| x * y),
        Div if scalar(1) => binary!(|x, y| x / y),
        EltMul => binary!(|x, y| x * y),
        EltDiv => binary!(|x, y| x / y),
        Pow => binary!(f64::powf),
        Exp => unary!(f64::exp),
        Exp2 => unary!(f64::exp2),
        Expm1 => unary!(f64::exp_m1),
        Log => unary!(f64::ln),
        Log2 => unary!(f64::log2),
        Log10 => unary!(f64::log10),
        Log1p => unary!(f64::ln_1p),
        Log1m => unary!(m::log1m),
        Log1pExp => unary!(m::log1p_exp),
        Log1mExp => unary!(m::log1m_exp),
        Sqrt => unary!(f64::sqrt),
        Cbrt => unary!(f64::cbrt),
        Square => unary!(|x| x * x),
        Inv => unary!(|x| 1.0 / x),
        InvSqrt => unary!(|x| 1.0 / x.sqrt()),
        InvSquare => unary!(|x| 1.0 / (x * x)),
        Abs => unary!(f64::abs),
        Floor => unary!(f64::floor),
        Ceil => unary!(f64::ceil),
        Round => unary!(f64::round),
        Trunc => unary!(f64::trunc),
        Sin => unary!(f64::sin),
        Cos => unary!(f64::cos),
        Tan => unary!(f64::tan),
        Asin => unary!(f64::asin),
        Acos => unary!(f64::acos),
        Atan => unary!(f64::atan),
        Sinh => unary!(f64::sinh),
        Cosh => unary!(f64::cosh),
        Tanh => unary!(f64::tanh),
        Asinh => unary!(f64::asinh),
        Acosh => unary!(f64::acosh),
        Atanh => unary!(f64::atanh),
        Logit => unary!(m::logit),
        InvLogit => unary!(m::inv_logit),
        LogInvLogit => unary!(m::log_inv_logit),
        Log1mInvLogit => unary!(m::log1m_inv_logit),
        InvCloglog => unary!(|x: f64| 1.0 - (-x.exp()).exp()),
        Lgamma => unary!(m::lgamma),
        Digamma => unary!(m::digamma),
        Trigamma => unary!(m::trigamma),
        Tgamma => unary!(m::tgamma),
        Erf => unary!(m::erf),
        Erfc => unary!(m::erfc),
        Phi => unary!(m::Phi),
        PhiApprox => unary!(m::Phi_approx),
        InvPhi => unary!(m::inv_Phi),
        LogPhi => unary!(m::log_Phi),
        Step => unary!(m::integer::step),
        Atan2 => binary!(f64::atan2),
        Fmax => binary!(f64::max),
        Fmin => binary!(f64::min),
        Fdim => binary!(|x: f64, y: f64| (x - y).max(0.0)),
        Fmod => binary!(|x, y| x % y),
        Hypot => binary!(f64::hypot),
        LogSumExp2 => binary!(m::log_sum_exp2),
        LogDiffExp => binary!(m::log_diff_exp),
        Lbeta => binary!(m::lbeta),
        Lchoose => binary!(m::lchoose),
        LogFallingFactorial => binary!(m::log_falling_factorial),
        LogRisingFactorial => binary!(m::log_rising_factorial),
        LogInvLogitDiff => binary!(m::log_inv_logit_diff),
        GammaP => binary!(m::gamma_p),
        GammaQ => binary!(m::gamma_q),
        BinaryLogLoss => binary!(|y: f64, p: f64| if y != 0.0 { -p.ln() } else { -m::log1m(p) }),
        MultiplyLog | Lmultiply => binary!(m::lmultiply),
        IncBeta => map3(
            &[ops.remove(0), ops.remove(0), ops.remove(0)],
            z,
            m::inc_beta,
        ),
        Fma => map3(
            &[ops.remove(0), ops.remove(0), ops.remove(0)],
            z,
            |a, b, c| a.mul_add(b, c),
        ),
        Sum => reduce(&ops[0], z, |acc, x| acc + x),
        DotSelf => reduce(&ops[0], z, |acc, x| acc + x * x),
        DotProduct => dot(&ops[0], &ops[1], z),
        _ => None,
    }
}

/// A per-lane fold over the elements of a dense operand, from −0.0 (the
/// start of Rust's `f64` sum, which the interpreter uses).
fn reduce(a: &Operand, z: usize, f: impl Fn(f64, f64) -> f64) -> Option<Slot> {
    let Src::Lanes(data, n) = a.src else {
        return None;
    };
    let mut acc = vec![-0.0; z];
    for e in 0..n {
        let xs = &data[e * z..(e + 1) * z];
        for (a, &x) in acc.iter_mut().zip(xs) {
            *a = f(*a, x);
        }
    }
    Some(Slot::Real(Dense::new(Shape::Real, z, acc)))
}

fn dot(a: &Operand, b: &Operand, z: usize) -> Option<Slot> {
    let len = |o: &Operand| match &o.src {
        Src::Scalar(_) => 1,
        Src::Elems(v) => v.len(),
        Src::Lanes(_, n) => *n,
    };
    let n = len(a);
    if len(b) != n {
        return None;
    }
    let mut acc = vec![-0.0; z];
    for e in 0..n {
        match (a.src.col(e, z), b.src.col(e, z)) {
            (Col::Const(x), Col::Const(y)) => acc.iter_mut().for_each(|a| *a += x * y),
            (Col::Const(x), Col::Lane(ys)) | (Col::Lane(ys), Col::Const(x)) => {
                // x * y and y * x are the same float.
                acc.iter_mut().zip(ys).for_each(|(a, &y)| *a += x * y)
            }
            (Col::Lane(xs), Col::Lane(ys)) => acc
                .iter_mut()
                .zip(xs.iter().zip(ys))
                .for_each(|(a, (&x, &y))| *a += x * y),
        }
    }
    Some(Slot::Real(Dense::new(Shape::Real, z, acc)))
}

fn is_check(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        CheckPositiveFinite
            | CheckPositive
            | CheckNonNegative
            | CheckFinite
            | CheckNotNan
            | CheckProbability
            | CheckNonNegativeInt
    )
}

/// An argument check over every active lane at once; the lanes that fail
/// get the interpreter's error for their value.
fn check(p: Prim, args: &[&Slot], st: &mut State, active: &Lanes, e: &Expr) -> Option<Slot> {
    use Prim::*;
    if args.len() > 1 && !args[1].is_shared() {
        return None;
    }
    let ok = |x: f64| match p {
        CheckPositiveFinite => x > 0.0 && x.is_finite(),
        CheckPositive => x > 0.0,
        CheckNonNegative => x >= 0.0,
        CheckFinite => x.is_finite(),
        CheckNotNan => !x.is_nan(),
        CheckProbability => (0.0..=1.0).contains(&x),
        _ => x >= 0.0,
    };
    let z = st.z;
    let failing: Vec<usize> = match args[0] {
        Slot::Real(d) => active
            .iter()
            .filter(|&l| (0..d.elements()).any(|k| !ok(d.data[k * z + l])))
            .collect(),
        Slot::Int(d) => active
            .iter()
            .filter(|&l| (0..d.elements()).any(|k| !ok(d.data[k * z + l] as f64)))
            .collect(),
        _ => return None,
    };
    for l in failing {
        if !st.is_running(l) {
            continue;
        }
        let vals: Vec<Value> = args.iter().map(|a| a.lane_value(l)).collect();
        if let Err(err) = lane::eval_prim(p, &vals) {
            st.fail(l, err.at(e.span));
        }
    }
    Some(Slot::shared(Value::Real(0.0)))
}

/// ∂prim/∂args[arg] elementwise for dense operands (the interpreter's
/// `partial`: the first non-scalar operand gives the shape).
pub(crate) fn partial(prim: Prim, arg: usize, args: &[&Slot], z: usize) -> Option<Slot> {
    if args.iter().all(|a| a.is_shared()) {
        return None;
    }
    let name = match prim {
        Prim::LogPhi => "log_Phi",
        other => other.name(),
    };
    let p = bat_math::Primitive::from_name(name, args.len())?;
    let ops: Vec<Operand> = args.iter().map(|a| operand(a)).collect::<Option<_>>()?;
    let shape = match ops.iter().find(|o| o.shape.is_some()) {
        Some(t) => super::index::real_shape(t.shape.as_ref()?),
        None => Shape::Real,
    };
    let n = shape.num_reals();
    let len = |o: &Operand| o.shape.as_ref().map_or(1, Shape::num_reals);
    if ops.iter().any(|o| len(o) != n && len(o) != 1) {
        return None;
    }
    // A container of one element broadcasts like a scalar.
    let mut out = Vec::with_capacity(n * z);
    let mut point = vec![0.0; ops.len()];
    for e in 0..n {
        let cols: Vec<Col> = ops
            .iter()
            .map(|o| o.src.col(if len(o) == 1 { 0 } else { e }, z))
            .collect();
        for l in 0..z {
            for (k, c) in cols.iter().enumerate() {
                point[k] = match c {
                    Col::Const(x) => *x,
                    Col::Lane(xs) => xs[l],
                };
            }
            out.push(p.grad(&point)[arg]);
        }
    }
    Some(Slot::Real(Dense::new(shape, z, out)))
}

/// `{a, b, ...}` of dense items of one shape: their blocks one after the
/// other. `None` for anything else.
pub(crate) fn stack_array(items: &[Arc<Slot>], ty: &Type) -> Option<Slot> {
    let first = items.first()?;
    match &**first {
        Slot::Real(d0) => {
            let mut data = Vec::with_capacity(d0.data.len() * items.len());
            for item in items {
                let Slot::Real(d) = &**item else { return None };
                if d.shape != d0.shape {
                    return None;
                }
                data.extend_from_slice(&d.data);
            }
            let shape = Shape::Array(items.len(), Box::new(d0.shape.clone()));
            Some(Slot::Real(Dense::new(shape, d0.z, data)))
        }
        Slot::Int(d0) if matches!(ty, Type::Array(elem) if is_int_type(elem)) => {
            let mut data = Vec::with_capacity(d0.data.len() * items.len());
            for item in items {
                let Slot::Int(d) = &**item else { return None };
                if d.shape != d0.shape {
                    return None;
                }
                data.extend_from_slice(&d.data);
            }
            let shape = Shape::Array(items.len(), Box::new(d0.shape.clone()));
            Some(Slot::Int(Dense::new(shape, d0.z, data)))
        }
        _ => None,
    }
}

fn is_int_type(ty: &Type) -> bool {
    match ty {
        Type::Int => true,
        Type::Array(elem) => is_int_type(elem),
        _ => false,
    }
}

/// `[a, b, ...]` of real scalars, at least one of them dense.
pub(crate) fn stack_row_vector(items: &[Arc<Slot>]) -> Option<Slot> {
    let z = items.iter().find_map(|i| match &**i {
        Slot::Real(d) => Some(d.z),
        _ => None,
    })?;
    let mut data = Vec::with_capacity(items.len() * z);
    for item in items {
        match &**item {
            Slot::Real(d) if d.shape == Shape::Real => data.extend_from_slice(&d.data),
            Slot::Shared(v) => match &**v {
                Value::Real(x) => data.extend(std::iter::repeat_n(*x, z)),
                Value::Int(i) => data.extend(std::iter::repeat_n(*i as f64, z)),
                _ => return None,
            },
            _ => return None,
        }
    }
    Some(Slot::Real(Dense::new(
        Shape::RowVector(items.len()),
        z,
        data,
    )))
}

/// The interpreter's `promote(v, ty)` for a whole slot, when no lane needs
/// to be looked at: `None` means go lane by lane.
pub(crate) fn promote(slot: &Arc<Slot>, ty: &Type) -> Option<Arc<Slot>> {
    match &**slot {
        Slot::Shared(v) => Some(Arc::new(Slot::shared(lane::promote((**v).clone(), ty)))),
        // Promotion only turns ints into reals or complex numbers.
        Slot::Real(_) if !mentions_complex(ty) => Some(slot.clone()),
        Slot::Int(_) if is_int_type(ty) => Some(slot.clone()),
        Slot::Int(d) if is_real_type(ty) => Some(Arc::new(Slot::Real(Dense::new(
            super::index::real_shape(&d.shape),
            d.z,
            d.data.iter().map(|&i| i as f64).collect(),
        )))),
        _ => None,
    }
}

fn is_real_type(ty: &Type) -> bool {
    match ty {
        Type::Real => true,
        Type::Array(elem) => is_real_type(elem),
        _ => false,
    }
}

fn mentions_complex(ty: &Type) -> bool {
    match ty {
        Type::Complex => true,
        Type::Array(elem) => mentions_complex(elem),
        Type::Tuple(items) => items.iter().any(mentions_complex),
        _ => false,
    }
}
