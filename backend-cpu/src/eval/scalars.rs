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
use language::interp::lane;
use language::mir::{Expr, Prim};
use language::value::Value;

/// One scalar operand over the lanes.
#[derive(Clone, Copy)]
enum Scalar<'a> {
    Ints(&'a [i64]),
    Reals(&'a [f64]),
    Int(i64),
    Real(f64),
}

impl Scalar<'_> {
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
        (Eq | Neq | Lt | Leq | Gt | Geq, &[a, b]) => {
            let both_int = a.is_int() && b.is_int();
            Some(ints(z, |l| {
                let truth = if both_int {
                    compare(p, a.int(l), b.int(l))
                } else {
                    compare(p, a.real(l), b.real(l))
                };
                truth as i64
            }))
        }
        (Not, &[a]) => Some(ints(z, |l| {
            bat_math::scalar::integer::logical_negation(a.real(l))
        })),
        (IsNan, &[a]) => Some(ints(z, |l| a.real(l).is_nan() as i64)),
        (IsInf, &[a]) => Some(ints(z, |l| a.real(l).is_infinite() as i64)),
        (Add | Sub | Mul, &[a, b]) if a.is_int() && b.is_int() => {
            let op = |x: i64, y: i64| match p {
                Add => x.checked_add(y),
                Sub => x.checked_sub(y),
                _ => x.checked_mul(y),
            };
            Some(checked_ints(z, st, active, e, &ops, |l| {
                op(a.int(l), b.int(l))
            }))
        }
        (Neg, &[a]) if a.is_int() => Some(checked_ints(z, st, active, e, &ops, |l| {
            a.int(l).checked_neg()
        })),
        _ => None,
    }
}

fn compare<T: PartialOrd>(p: Prim, x: T, y: T) -> bool {
    match p {
        Prim::Eq => x == y,
        Prim::Neq => x != y,
        Prim::Lt => x < y,
        Prim::Leq => x <= y,
        Prim::Gt => x > y,
        _ => x >= y,
    }
}

fn ints(z: usize, f: impl Fn(usize) -> i64) -> Slot {
    let mut out = pool::buffer(z);
    out.extend((0..z).map(f));
    Slot::Int(Dense::new(Shape::Int, z, out))
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
