//! Batched kernels for scalar control arithmetic: integer `+ - *` and
//! negation (Stan's 32-bit ints, overflow an error), comparisons,
//! `!`, `is_nan`, `is_inf` — the bookkeeping of loops, counters and tree
//! decisions (the sampler's `depth + 1`, `h - H0 > max_delta_h`, ...).
//!
//! Every operand is a scalar per lane (a dense `int`/`real` slot) or one
//! shared scalar. Results are computed for every lane of the batch (the
//! inactive lanes' values are unspecified, as for every dense slot); only
//! active running lanes can fail, with the interpreter's own error for
//! their values.

use crate::lanes::{Dense, Lanes, Slot, State, pool};
use language::data::Shape;
use language::mir::{Expr, Prim};
use language::value::Value;
use runtime::lane;
use std::borrow::Cow;

/// One scalar operand over the lanes.
#[derive(Clone, Copy)]
enum Scalar<'a> {
    Ints(&'a [i64]),
    Reals(&'a [f64]),
    Int(i64),
    Real(f64),
}

impl<'a> Scalar<'a> {
    fn of(slot: &Slot) -> Option<Scalar<'_>> {
        Some(match slot {
            Slot::Int(d) if d.shape == Shape::Int => Scalar::Ints(&d.data),
            Slot::Real(d) if d.shape == Shape::Real => Scalar::Reals(&d.data),
            Slot::Shared(v) => match **v {
                Value::Int(i) => Scalar::Int(i),
                Value::Real(x) => Scalar::Real(x),
                _ => return None,
            },
            _ => return None,
        })
    }

    fn is_int(self) -> bool {
        matches!(self, Scalar::Ints(_) | Scalar::Int(_))
    }

    fn int(self, l: usize) -> i64 {
        match self {
            Scalar::Ints(xs) => xs[l],
            Scalar::Int(i) => i,
            Scalar::Reals(xs) => xs[l] as i64,
            Scalar::Real(x) => x as i64,
        }
    }

    fn real(self, l: usize) -> f64 {
        match self {
            Scalar::Ints(xs) => xs[l] as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Reals(xs) => xs[l],
            Scalar::Real(x) => x,
        }
    }

    /// Every lane's value as a real: the slot's own lanes when they are
    /// reals, else converted once (not matched on the kind per lane).
    fn reals(self, z: usize) -> Cow<'a, [f64]> {
        match self {
            Scalar::Reals(xs) => Cow::Borrowed(xs),
            Scalar::Ints(xs) => Cow::Owned(xs.iter().map(|&x| x as f64).collect()),
            Scalar::Int(i) => Cow::Owned(vec![i as f64; z]),
            Scalar::Real(x) => Cow::Owned(vec![x; z]),
        }
    }

    /// Every lane's value as an int (of an int operand), as [`Scalar::reals`].
    fn ints(self, z: usize) -> Cow<'a, [i64]> {
        match self {
            Scalar::Ints(xs) => Cow::Borrowed(xs),
            Scalar::Reals(xs) => Cow::Owned(xs.iter().map(|&x| x as i64).collect()),
            Scalar::Int(i) => Cow::Owned(vec![i; z]),
            Scalar::Real(x) => Cow::Owned(vec![x as i64; z]),
        }
    }

    fn value(self, l: usize) -> Value {
        match self {
            Scalar::Ints(_) | Scalar::Int(_) => Value::Int(self.int(l)),
            _ => Value::Real(self.real(l)),
        }
    }
}

/// A kernel for `p` on scalar operands, or `None` (not of that form).
pub(crate) fn prim(
    p: Prim,
    args: &[&Slot],
    st: &mut State,
    active: &Lanes,
    e: &Expr,
) -> Option<Slot> {
    use Prim::*;
    let z = st.z;
    let ops: Vec<Scalar> = args.iter().map(|a| Scalar::of(a)).collect::<Option<_>>()?;
    match (p, ops.as_slice()) {
        // Operands as slices and the operation chosen once per call: each
        // arm is a plain loop over the lanes (matching the operand kinds
        // and the comparison per lane was ≈5% of the sampler's
        // instructions).
        (Eq | Neq | Lt | Leq | Gt | Geq, &[a, b]) => {
            if a.is_int() && b.is_int() {
                Some(compare_all(p, &a.ints(z), &b.ints(z)))
            } else {
                Some(compare_all(p, &a.reals(z), &b.reals(z)))
            }
        }
        (Not, &[a]) => Some(map_ints(&a.reals(z), |x| {
            bat_math::scalar::integer::logical_negation(x)
        })),
        (IsNan, &[a]) => Some(map_ints(&a.reals(z), |x| x.is_nan() as i64)),
        (IsInf, &[a]) => Some(map_ints(&a.reals(z), |x| x.is_infinite() as i64)),
        (Add | Sub | Mul, &[a, b]) if a.is_int() && b.is_int() => {
            let (x, y) = (a.ints(z), b.ints(z));
            Some(match p {
                Add => checked_ints(z, st, active, e, &ops, |l| x[l].checked_add(y[l])),
                Sub => checked_ints(z, st, active, e, &ops, |l| x[l].checked_sub(y[l])),
                _ => checked_ints(z, st, active, e, &ops, |l| x[l].checked_mul(y[l])),
            })
        }
        (Neg, &[a]) if a.is_int() => {
            let x = a.ints(z);
            Some(checked_ints(z, st, active, e, &ops, |l| x[l].checked_neg()))
        }
        _ => None,
    }
}

/// Comparison `p` of every lane of `x` with the same lane of `y` (1 or 0).
fn compare_all<T: PartialOrd + Copy>(p: Prim, x: &[T], y: &[T]) -> Slot {
    let z = x.len();
    let mut out = pool::buffer(z);
    let pairs = x.iter().zip(y);
    match p {
        Prim::Eq => out.extend(pairs.map(|(a, b)| (a == b) as i64)),
        Prim::Neq => out.extend(pairs.map(|(a, b)| (a != b) as i64)),
        Prim::Lt => out.extend(pairs.map(|(a, b)| (a < b) as i64)),
        Prim::Leq => out.extend(pairs.map(|(a, b)| (a <= b) as i64)),
        Prim::Gt => out.extend(pairs.map(|(a, b)| (a > b) as i64)),
        _ => out.extend(pairs.map(|(a, b)| (a >= b) as i64)),
    }
    Slot::Int(Dense::new(Shape::Int, z, out))
}

/// `f` of every lane of `x`, an int per lane.
fn map_ints(x: &[f64], f: impl Fn(f64) -> i64) -> Slot {
    let mut out = pool::buffer(x.len());
    out.extend(x.iter().map(|&v| f(v)));
    Slot::Int(Dense::new(Shape::Int, x.len(), out))
}

/// Integer arithmetic with Stan's 32-bit range: a running active lane
/// whose result leaves it fails with the interpreter's error.
fn checked_ints(
    z: usize,
    st: &mut State,
    active: &Lanes,
    e: &Expr,
    ops: &[Scalar],
    f: impl Fn(usize) -> Option<i64>,
) -> Slot {
    let in_range = |r: Option<i64>| r.filter(|r| i32::try_from(*r).is_ok());
    let mut out = pool::buffer(z);
    out.extend((0..z).map(|l| in_range(f(l)).unwrap_or(0)));
    let Expr { kind, span, .. } = e;
    let language::mir::ExprKind::Prim(p, _) = kind else {
        return Slot::Int(Dense::new(Shape::Int, z, out));
    };
    for l in active.iter() {
        if st.is_running(l) && in_range(f(l)).is_none() {
            let vals: Vec<Value> = ops.iter().map(|o| o.value(l)).collect();
            if let Err(err) = lane::eval_prim(*p, &vals) {
                st.fail(l, err.at(*span));
            }
        }
    }
    Slot::Int(Dense::new(Shape::Int, z, out))
}
