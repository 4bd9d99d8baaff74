//! Batched kernels over dense slots for the hot primitives. Each applies
//! the same scalar function as the interpreter (`runtime`'s
//! prims and `bat_math`), element by element and lane by lane, in the
//! same order, so results are bit-identical. A kernel returns `None` when
//! its operands are not of the form it handles (including every case in
//! which the interpreter would fail); the caller then goes lane by lane.

use super::gemm;
use crate::lanes::{Dense, Lanes, Slot, State};
use language::data::Shape;
use language::mir::{Expr, Prim};
use language::types::Type;
use language::value::Value;
use runtime::lane;
use std::borrow::Cow;
use std::sync::Arc;

use bat_math::scalar as m;

/// One operand of an elementwise kernel.
enum Src<'a> {
    /// The same scalar for every element and lane.
    Scalar(f64),
    /// A shared container: element e is the same for every lane. Borrowed
    /// from vectors and matrices (an N×D data matrix is not copied per
    /// operation), flattened only for arrays.
    Elems(Cow<'a, [f64]>),
    /// A dense real slot of `n` elements.
    Lanes(&'a [f64], usize),
}

/// Element `e` of an operand: a constant or the Z lanes.
#[derive(Clone, Copy)]
enum ElemCol<'a> {
    Const(f64),
    Lane(&'a [f64]),
}

impl Src<'_> {
    fn col(&self, e: usize, z: usize) -> ElemCol<'_> {
        match self {
            Src::Scalar(x) => ElemCol::Const(*x),
            Src::Elems(v) => ElemCol::Const(v[e]),
            Src::Lanes(d, 1) => ElemCol::Lane(&d[..z]),
            Src::Lanes(d, _) => ElemCol::Lane(&d[e * z..(e + 1) * z]),
        }
    }
}

/// An operand of `n` elements over Z lanes seen as one run of `n · Z`
/// numbers in the result's `[element][lane]` order, when it is one: a
/// constant, a dense slot of all `n` elements, or a shared container when
/// Z is 1. Elementwise kernels then make one pass over the whole run
/// instead of one per element — at Z = 1 a pass per element costs more
/// than its arithmetic.
#[derive(Clone, Copy)]
enum Flat<'a> {
    Const(f64),
    Run(&'a [f64]),
}

impl Src<'_> {
    fn flat(&self, n: usize, z: usize) -> Option<Flat<'_>> {
        match self {
            Src::Scalar(x) => Some(Flat::Const(*x)),
            Src::Lanes(d, m) if *m == n => Some(Flat::Run(&d[..n * z])),
            Src::Lanes(d, 1) if z == 1 => Some(Flat::Const(d[0])),
            Src::Elems(v) if z == 1 && v.len() == n => Some(Flat::Run(v)),
            Src::Elems(v) if v.len() == 1 => Some(Flat::Const(v[0])),
            _ => None,
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
                let elems = match other {
                    // Stored in Stan's element order already.
                    Value::Vector(xs) | Value::RowVector(xs) | Value::Matrix { data: xs, .. } => {
                        Cow::Borrowed(xs.as_slice())
                    }
                    _ => Cow::Owned(lane::flat_reals(other)),
                };
                Some(Operand {
                    src: Src::Elems(elems),
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

/// A real-valued operand (dense reals or a shared real scalar/container).
fn is_real_valued(slot: &Slot) -> bool {
    match slot {
        Slot::Real(_) => true,
        Slot::Shared(v) => matches!(
            **v,
            Value::Real(_) | Value::Vector(_) | Value::RowVector(_) | Value::Matrix { .. }
        ),
        _ => false,
    }
}

/// A dense int operand as dense reals (same shape, each int converted).
fn ints_as_reals(slot: &Slot) -> Option<Slot> {
    match slot {
        Slot::Int(d) => Some(Slot::Real(Dense::new(
            super::index::real_shape(&d.shape),
            d.z,
            d.data.iter().map(|&i| i as f64).collect(),
        ))),
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

/// The lanes a kernel computes when they are few (under a quarter of the
/// batch, as in a block that only the chains unwinding NUTS's recursion
/// run): only those lanes of the result are computed, the others hold
/// zeros — unspecified values no masked write reads —, so the arithmetic
/// follows the running lanes instead of the batch. `None`: every lane.
pub(crate) fn sparse_lanes(active: &Lanes, z: usize) -> Option<&[usize]> {
    (4 * active.len() < z).then(|| active.indices())
}

/// A result of `n` elements computed at lanes `at` only.
fn sparse_map(n: usize, z: usize, at: &[usize], f: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    let mut out = crate::lanes::pool::filled(n * z, 0.0);
    for e in 0..n {
        let row = &mut out[e * z..(e + 1) * z];
        for &l in at {
            row[l] = f(e, l);
        }
    }
    out
}

/// Element `e` of lane `l` of an operand column.
fn at_lane(c: ElemCol, l: usize) -> f64 {
    match c {
        ElemCol::Const(x) => x,
        ElemCol::Lane(xs) => xs[l],
    }
}

fn map1(
    p: Prim,
    a: &Operand,
    z: usize,
    at: Option<&[usize]>,
    f: impl Fn(f64) -> f64,
) -> Option<Slot> {
    let (shape, n) = zip_shape(std::slice::from_ref(a))?;
    if let Some(at) = at {
        let out = sparse_map(n, z, at, |e, l| f(at_lane(a.src.col(e, z), l)));
        return Some(Slot::Real(Dense::new(shape, z, out)));
    }
    let mut out = crate::lanes::pool::buffer(n * z);
    if let Src::Lanes(xs, m) = a.src
        && m == n
        && map_wide(p, false, Wide::Append(&xs[..n * z], &mut out))
    {
        return Some(Slot::Real(Dense::new(shape, z, out)));
    }
    if let Some(Flat::Run(xs)) = a.src.flat(n, z) {
        out.extend(xs.iter().map(|&x| f(x)));
        return Some(Slot::Real(Dense::new(shape, z, out)));
    }
    for e in 0..n {
        match a.src.col(e, z) {
            ElemCol::Const(x) => out.extend(std::iter::repeat_n(f(x), z)),
            ElemCol::Lane(xs) => out.extend(xs.iter().map(|&x| f(x))),
        }
    }
    Some(Slot::Real(Dense::new(shape, z, out)))
}

/// Where [`map_wide`] writes.
enum Wide<'a> {
    /// `x = f(x)` for each element.
    InPlace(&'a mut [f64]),
    /// `f` of each source element appended to the vector.
    Append(&'a [f64], &'a mut Vec<f64>),
}

/// `f` elementwise for the primitives whose `f` is branch-free
/// (bat_math's logistic functions on [`bat_math::scalar::branchless`]),
/// compiled also for AVX2 and AVX-512 so it runs 4 or 8 lanes per
/// instruction; `false` (nothing written) for other primitives. With
/// `negate`, `f(-x)`: `p(minus(x))` in one pass (the logistic gradient's
/// `inv_logit(-η)`). The results are the interpreter's at every width:
/// each IEEE operation rounds the same way in a vector, negation is
/// exact, Rust never fuses a multiply and an add by itself, and the
/// functions' explicit `mul_add`s round once everywhere (vector FMA here,
/// libm's `fma` in the scalar build).
fn map_wide(p: Prim, negate: bool, target: Wide) -> bool {
    // Plain loops, no closures: LLVM then inlines `$f` into each loop
    // and vectorizes it (through a closure it keeps a scalar call).
    macro_rules! run {
        ($f:path, $target:expr) => {
            match $target {
                Wide::InPlace(xs) => {
                    for x in xs {
                        *x = $f(*x);
                    }
                }
                Wide::Append(xs, out) => {
                    out.reserve(xs.len());
                    for (o, &x) in out.spare_capacity_mut().iter_mut().zip(xs) {
                        o.write($f(x));
                    }
                    let len = out.len() + xs.len();
                    // SAFETY: the first xs.len() spare elements (there are
                    // that many, reserved above) were written just now.
                    unsafe { out.set_len(len) };
                }
            }
        };
    }
    macro_rules! wide {
        ($f:path) => {{
            #[cfg(target_arch = "x86_64")]
            {
                // FMA too: the functions' polynomials are `mul_add`s,
                // which are otherwise calls to libm's `fma`.
                #[target_feature(enable = "avx512f,fma")]
                fn avx512(target: Wide) {
                    run!($f, target)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2(target: Wide) {
                    run!($f, target)
                }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has AVX-512F and FMA (checked above).
                    unsafe { avx512(target) };
                    return true;
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has AVX2 and FMA (checked above).
                    unsafe { avx2(target) };
                    return true;
                }
            }
            run!($f, target);
            true
        }};
    }
    match (p, negate) {
        (Prim::InvLogit, false) => wide!(m::inv_logit),
        (Prim::LogInvLogit, false) => wide!(m::log_inv_logit),
        (Prim::InvLogit, true) => wide!(neg_inv_logit),
        (Prim::LogInvLogit, true) => wide!(neg_log_inv_logit),
        _ => false,
    }
}

#[inline(always)]
fn neg_inv_logit(x: f64) -> f64 {
    m::inv_logit(-x)
}

#[inline(always)]
fn neg_log_inv_logit(x: f64) -> f64 {
    m::log_inv_logit(-x)
}

/// `p(minus(x))` for a dense real `x` in one pass, into `x`'s buffer when
/// nothing else holds it; `None` when `x` is not dense reals or `p` has
/// no fused form (the caller then negates and applies `p` separately).
pub(crate) fn map_negated(p: Prim, x: &mut Arc<Slot>) -> Option<Slot> {
    if !matches!(p, Prim::InvLogit | Prim::LogInvLogit) {
        return None;
    }
    if let Some(Slot::Real(d)) = Arc::get_mut(x) {
        let mut d = std::mem::replace(
            d,
            Dense::new(Shape::Array(0, Box::new(Shape::Real)), 0, Vec::new()),
        );
        map_wide(p, true, Wide::InPlace(&mut d.data));
        return Some(Slot::Real(d));
    }
    let Slot::Real(d) = &**x else { return None };
    let mut out = crate::lanes::pool::buffer(d.data.len());
    map_wide(p, true, Wide::Append(&d.data, &mut out));
    Some(Slot::Real(Dense::new(d.shape.clone(), d.z, out)))
}

/// `(log_inv_logit(x), inv_logit(-x))` elementwise for a dense real `x`
/// in one pass sharing each element's exponential
/// ([`super::logistic_pair`]); `None` when `x` is not dense reals.
pub(crate) fn log_inv_logit_pair(x: &Slot) -> Option<(Slot, Slot)> {
    let Slot::Real(d) = x else { return None };
    let mut value = crate::lanes::pool::buffer(d.data.len());
    let mut neg_inv_logit = crate::lanes::pool::buffer(d.data.len());
    pair_wide(
        &d.data,
        d.z,
        PairValue::Store(&mut value),
        &mut neg_inv_logit,
        None,
        &mut [],
    );
    Some((
        Slot::Real(Dense::new(d.shape.clone(), d.z, value)),
        Slot::Real(Dense::new(d.shape.clone(), d.z, neg_inv_logit)),
    ))
}

/// As [`log_inv_logit_pair`] with the first of the pair summed per lane:
/// `sum(log_inv_logit(x))` (bit for bit [`reduce`]'s sum of it, in
/// element order from −0.0) without the N × Z block of terms written and
/// read back; with `factor` ([`element_factors`] of `h`), the second is
/// `elt_multiply(inv_logit(-x), h)` (each `inv_logit(−x)·h`, the binary
/// kernel's multiplication, so its bits). `None` when `x` is not dense
/// reals or the batch too narrow for the runs of lanes the kernel works
/// in.
pub(crate) fn sum_log_inv_logit_pair(
    x: &Slot,
    factor: Option<ElementFactors>,
) -> Option<(Slot, Slot, Option<Slot>)> {
    let Slot::Real(d) = x else { return None };
    if d.z < MIN_SUM_LANES || factor.as_ref().is_some_and(|f| f.of.len() != d.elements()) {
        return None;
    }
    let mut sums = crate::lanes::pool::filled(d.z, -0.0);
    let mut neg_inv_logit = crate::lanes::pool::buffer(d.data.len());
    // The scaled product's own sums per lane (α's gradient in a logistic
    // regression is `sum` of it): the same adds in the same order as
    // [`reduce`]'s, while each product is in a register.
    let mut neg_sums = if factor.is_some() {
        crate::lanes::pool::filled(d.z, -0.0)
    } else {
        Vec::new()
    };
    pair_wide(
        &d.data,
        d.z,
        PairValue::SumLanes(&mut sums),
        &mut neg_inv_logit,
        factor.as_ref().map(|f| &*f.of),
        &mut neg_sums,
    );
    let shape = factor.map_or_else(|| d.shape.clone(), |f| f.shape);
    let neg_sums =
        (!neg_sums.is_empty()).then(|| Slot::Real(Dense::new(Shape::Real, d.z, neg_sums)));
    Some((
        Slot::Real(Dense::new(Shape::Real, d.z, sums)),
        Slot::Real(Dense::new(shape, d.z, neg_inv_logit)),
        neg_sums,
    ))
}

/// The numbers `h` of `elt_multiply(p, h)` scales each element of a
/// dense `p` by, and the product's shape.
pub(crate) struct ElementFactors<'a> {
    of: Cow<'a, [f64]>,
    shape: Shape,
}

/// [`ElementFactors`] of `h` for `elt_multiply(p, h)` with `p` dense
/// reals shaped as `x`: when `h` is a shared container with one number
/// per element of `p` (as the binary kernel reads it: [`operand`]'s
/// numbers, ints as reals, and [`zip_shape`]'s shape), else `None`.
pub(crate) fn element_factors<'a>(x: &Slot, h: &'a Slot) -> Option<ElementFactors<'a>> {
    let (Slot::Real(d), Slot::Shared(_)) = (x, h) else {
        return None;
    };
    let h = operand(h)?;
    let p = Operand {
        src: Src::Scalar(0.0),
        shape: (d.shape != Shape::Real).then(|| d.shape.clone()),
    };
    let (shape, n) = zip_shape(&[p, shape_only(&h)])?;
    match h.src {
        Src::Elems(of) if of.len() == n && n == d.elements() => Some(ElementFactors { of, shape }),
        _ => None,
    }
}

/// Below this many lanes the per-lane sums' runs are too short to pay.
const MIN_SUM_LANES: usize = 64;

/// Where [`pair_wide`] puts each `log_inv_logit(x)`.
enum PairValue<'a> {
    /// Appended to the vector, element by element.
    Store(&'a mut Vec<f64>),
    /// Added to its lane's sum (`z` sums).
    SumLanes(&'a mut [f64]),
}

/// Elements per stage of [`pair_wide`]: a run's exponentials are computed
/// first, then the rest — the same operations per element (the same bits),
/// but shorter chains of dependent operations each, so the core overlaps
/// more elements (one chain of ~100 instructions with three divisions left
/// it waiting: 5.5–6 → 4.5–5 ns per element at 1,024 lanes). The
/// exponentials themselves in two steps (range reductions, then the
/// polynomials and scaling) for the same reason: 3.9–4.1 → 3.7–3.8 ns.
const STAGE: usize = 256;

/// [`m::log_inv_logit_and_neg_inv_logit`] of each of `xs` (`[element][lane]`
/// of `z` lanes): the first as `value` says, the second appended to
/// `neg_inv_logit`; compiled for AVX2 / AVX-512 with FMA as [`map_wide`]
/// (and bit for bit the scalar function, for its reasons).
fn pair_wide(
    xs: &[f64],
    z: usize,
    value: PairValue,
    neg_inv_logit: &mut Vec<f64>,
    factors: Option<&[f64]>,
    neg_sums: &mut [f64],
) {
    use std::mem::MaybeUninit;
    /// A run's reduced arguments (`hi`, `lo`) and exponentials.
    type Scratch = ([f64; STAGE], [f64; STAGE], [f64; STAGE]);
    /// One run of at most STAGE elements: the exponentials' range
    /// reductions first, then the exponentials, then each element's pair —
    /// the first to `put` (the run's slice of the values or of the lanes'
    /// sums), the second into `neg`.
    /// With `SUM_NEG`, each second value is also added to its lane's sum
    /// in `neg_sums` (the run's slice of them).
    #[inline(always)]
    fn stage<P, const SUM_NEG: bool>(
        xs: &[f64],
        (hi, lo, e): &mut Scratch,
        (neg, scale): (&mut [MaybeUninit<f64>], impl Fn(f64) -> f64),
        put: &mut [P],
        to: impl Fn(&mut P, f64),
        neg_sums: &mut [f64],
    ) {
        use m::branchless::{ExpReduced, exp_nonpos_finish, exp_nonpos_reduce};
        // The reductions' parts in three arrays (`e` holds `shifted` until
        // it is replaced by the exponential): an array of the structs
        // vectorized with shuffles, 20% slower.
        for (((h, l), s), &x) in hi.iter_mut().zip(lo.iter_mut()).zip(e.iter_mut()).zip(xs) {
            let r = exp_nonpos_reduce(-x.abs());
            (*h, *l, *s) = (r.hi, r.lo, r.shifted);
        }
        for ((e, &hi), &lo) in e.iter_mut().zip(hi.iter()).zip(lo.iter()) {
            let shifted = *e;
            *e = exp_nonpos_finish(ExpReduced { hi, lo, shifted });
        }
        let neg_sums = &mut neg_sums[..if SUM_NEG { xs.len() } else { 0 }];
        for (i, (((&x, &e), p), n)) in xs.iter().zip(e.iter()).zip(put).zip(neg).enumerate() {
            let (a, b) = m::log_inv_logit_and_neg_inv_logit_given(x, e);
            to(p, a);
            let b = scale(b);
            n.write(b);
            if SUM_NEG {
                neg_sums[i] += b;
            }
        }
    }
    /// Runs of at most STAGE elements: `xs` whole, or each row of `z`
    /// lanes cut in runs when the values are summed per lane.
    #[inline(always)]
    fn run(
        xs: &[f64],
        z: usize,
        value: &mut [MaybeUninit<f64>],
        (sums, factors, neg_sums): (&mut [f64], Option<&[f64]>, &mut [f64]),
        neg: &mut [MaybeUninit<f64>],
    ) {
        let mut e: Scratch = ([0.0; STAGE], [0.0; STAGE], [0.0; STAGE]);
        if sums.is_empty() {
            let runs = xs.chunks(STAGE).zip(neg.chunks_mut(STAGE));
            for ((xs, neg), value) in runs.zip(value.chunks_mut(STAGE)) {
                stage::<_, false>(
                    xs,
                    &mut e,
                    (neg, |b| b),
                    value,
                    |v, a| {
                        v.write(a);
                    },
                    &mut [],
                );
            }
            return;
        }
        let rows = xs.chunks_exact(z).zip(neg.chunks_exact_mut(z));
        for (k, (row, neg)) in rows.enumerate() {
            // Element k's factor for its lanes; the product as
            // `elt_multiply(inv_logit(-x), h)` computes it.
            let factor = factors.map(|h| h[k]);
            let runs = row.chunks(STAGE).zip(neg.chunks_mut(STAGE));
            if !neg_sums.is_empty() {
                let f = factor.expect("the product's sums only with its factors");
                let runs = runs
                    .zip(sums.chunks_mut(STAGE))
                    .zip(neg_sums.chunks_mut(STAGE));
                for (((xs, neg), sums), neg_sums) in runs {
                    stage::<_, true>(xs, &mut e, (neg, |b| b * f), sums, |s, a| *s += a, neg_sums);
                }
                continue;
            }
            for ((xs, neg), sums) in runs.zip(sums.chunks_mut(STAGE)) {
                match factor {
                    Some(f) => stage::<_, false>(
                        xs,
                        &mut e,
                        (neg, |b| b * f),
                        sums,
                        |s, a| *s += a,
                        &mut [],
                    ),
                    None => {
                        stage::<_, false>(xs, &mut e, (neg, |b| b), sums, |s, a| *s += a, &mut [])
                    }
                }
            }
        }
    }
    let (value, sums): (Option<&mut Vec<f64>>, &mut [f64]) = match value {
        PairValue::Store(v) => {
            assert!(
                factors.is_none() && neg_sums.is_empty(),
                "factors only with per-lane sums"
            );
            (Some(v), &mut [])
        }
        PairValue::SumLanes(s) => {
            assert_eq!(s.len(), z, "one sum per lane");
            let rows = xs.len() / z.max(1);
            assert!(
                factors.is_none_or(|h| h.len() == rows),
                "one factor per element"
            );
            assert!(
                neg_sums.is_empty() || (neg_sums.len() == z && factors.is_some()),
                "the product's sums: one per lane, with factors"
            );
            (None, s)
        }
    };
    let mut no_values = Vec::new();
    let value = value.unwrap_or(&mut no_values);
    let stored = if sums.is_empty() { xs.len() } else { 0 };
    value.reserve(stored);
    neg_inv_logit.reserve(xs.len());
    let (v, n) = (
        &mut value.spare_capacity_mut()[..stored],
        &mut neg_inv_logit.spare_capacity_mut()[..xs.len()],
    );
    let mut done = false;
    #[cfg(target_arch = "x86_64")]
    {
        type Slices<'a> = (
            &'a mut [MaybeUninit<f64>],
            (&'a mut [f64], Option<&'a [f64]>, &'a mut [f64]),
            &'a mut [MaybeUninit<f64>],
        );
        #[target_feature(enable = "avx512f,fma")]
        fn avx512(xs: &[f64], z: usize, (v, s, n): Slices) {
            run(xs, z, v, s, n)
        }
        #[target_feature(enable = "avx2,fma")]
        fn avx2(xs: &[f64], z: usize, (v, s, n): Slices) {
            run(xs, z, v, s, n)
        }
        let fma = std::arch::is_x86_feature_detected!("fma");
        if fma && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F and FMA (checked above).
            unsafe {
                avx512(
                    xs,
                    z,
                    (&mut *v, (&mut *sums, factors, &mut *neg_sums), &mut *n),
                )
            };
            done = true;
        } else if fma && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            unsafe {
                avx2(
                    xs,
                    z,
                    (&mut *v, (&mut *sums, factors, &mut *neg_sums), &mut *n),
                )
            };
            done = true;
        }
    }
    if !done {
        run(xs, z, v, (sums, factors, neg_sums), n);
    }
    // SAFETY: the first `stored` and xs.len() spare elements of the two
    // (reserved above) were written just now.
    unsafe {
        value.set_len(value.len() + stored);
        neg_inv_logit.set_len(neg_inv_logit.len() + xs.len());
    }
}

/// An operand's shape with no data (for [`zip_shape`]).
fn shape_only(o: &Operand) -> Operand<'static> {
    Operand {
        src: Src::Scalar(0.0),
        shape: o.shape.clone(),
    }
}

fn map2(
    a: &Operand,
    b: &Operand,
    z: usize,
    at: Option<&[usize]>,
    f: impl Fn(f64, f64) -> f64,
) -> Option<Slot> {
    let (shape, n) = zip_shape(&[shape_only(a), shape_only(b)])?;
    if let Some(at) = at {
        let out = sparse_map(n, z, at, |e, l| {
            f(at_lane(a.src.col(e, z), l), at_lane(b.src.col(e, z), l))
        });
        return Some(Slot::Real(Dense::new(shape, z, out)));
    }
    let mut out = crate::lanes::pool::buffer(n * z);
    match (a.src.flat(n, z), b.src.flat(n, z)) {
        (Some(Flat::Run(xs)), Some(Flat::Run(ys))) => {
            out.extend(xs.iter().zip(ys).map(|(&x, &y)| f(x, y)));
            return Some(Slot::Real(Dense::new(shape, z, out)));
        }
        (Some(Flat::Run(xs)), Some(Flat::Const(y))) => {
            out.extend(xs.iter().map(|&x| f(x, y)));
            return Some(Slot::Real(Dense::new(shape, z, out)));
        }
        (Some(Flat::Const(x)), Some(Flat::Run(ys))) => {
            out.extend(ys.iter().map(|&y| f(x, y)));
            return Some(Slot::Real(Dense::new(shape, z, out)));
        }
        _ => {}
    }
    for e in 0..n {
        match (a.src.col(e, z), b.src.col(e, z)) {
            (ElemCol::Const(x), ElemCol::Const(y)) => out.extend(std::iter::repeat_n(f(x, y), z)),
            (ElemCol::Const(x), ElemCol::Lane(ys)) => out.extend(ys.iter().map(|&y| f(x, y))),
            (ElemCol::Lane(xs), ElemCol::Const(y)) => out.extend(xs.iter().map(|&x| f(x, y))),
            (ElemCol::Lane(xs), ElemCol::Lane(ys)) => {
                out.extend(xs.iter().zip(ys).map(|(&x, &y)| f(x, y)))
            }
        }
    }
    Some(Slot::Real(Dense::new(shape, z, out)))
}

fn map3(
    ops: &[Operand; 3],
    z: usize,
    at: Option<&[usize]>,
    f: impl Fn(f64, f64, f64) -> f64,
) -> Option<Slot> {
    let shapes: Vec<Operand> = ops.iter().map(shape_only).collect();
    let (shape, n) = zip_shape(&shapes)?;
    if let Some(at) = at {
        let out = sparse_map(n, z, at, |e, l| {
            f(
                at_lane(ops[0].src.col(e, z), l),
                at_lane(ops[1].src.col(e, z), l),
                at_lane(ops[2].src.col(e, z), l),
            )
        });
        return Some(Slot::Real(Dense::new(shape, z, out)));
    }
    let mut out = crate::lanes::pool::buffer(n * z);
    if let [Some(a), Some(b), Some(c)] = [0, 1, 2].map(|i| ops[i].src.flat(n, z)) {
        let at = |x: Flat, i: usize| match x {
            Flat::Const(x) => x,
            Flat::Run(xs) => xs[i],
        };
        out.extend((0..n * z).map(|i| f(at(a, i), at(b, i), at(c, i))));
        return Some(Slot::Real(Dense::new(shape, z, out)));
    }
    for e in 0..n {
        let cols = [
            ops[0].src.col(e, z),
            ops[1].src.col(e, z),
            ops[2].src.col(e, z),
        ];
        let at = |c: ElemCol, l: usize| match c {
            ElemCol::Const(x) => x,
            ElemCol::Lane(xs) => xs[l],
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
    if p == ToVector
        && let [Slot::Real(d)] = args
        && let Some(n) = flat_reals(&d.shape)
    {
        // The same numbers in the same order (arrays and row vectors in
        // order, matrices column-major as stored): a new shape.
        let data = crate::lanes::pool::copy(&d.data);
        return Some(Slot::Real(Dense::new(Shape::Vector(n), z, data)));
    }
    let at = sparse_lanes(active, z);
    if p == Mul
        && st.gemm
        && let Some(slot) = gemm::multiply(args[0], args[1], false)
    {
        return Some(slot);
    }
    // From here on: real elementwise math and reductions on real operands
    // (ints mixed with reals count as reals, as the interpreter converts
    // them; ints alone keep their integer rules).
    let mixed = args.iter().any(|a| is_real_valued(a));
    let int_reals: Vec<Option<Slot>> = args
        .iter()
        .map(|a| if mixed { ints_as_reals(a) } else { None })
        .collect();
    let mut ops: Vec<Operand> = args
        .iter()
        .zip(&int_reals)
        .map(|(a, r)| operand(r.as_ref().unwrap_or(a)))
        .collect::<Option<_>>()?;
    if !elementwise_applies(p, &ops) {
        return None;
    }
    if ops.len() == 1
        && let Some(slot) = unary!(p, f => map1(p, &ops[0], z, at, f))
    {
        return Some(slot);
    }
    if ops.len() == 2
        && let Some(slot) = binary!(p, f => map2(&ops[0], &ops[1], z, at, f))
    {
        return Some(slot);
    }
    match p {
        IncBeta => map3(
            &[ops.remove(0), ops.remove(0), ops.remove(0)],
            z,
            at,
            m::inc_beta,
        ),
        Fma => map3(
            &[ops.remove(0), ops.remove(0), ops.remove(0)],
            z,
            at,
            |a, b, c| a.mul_add(b, c),
        ),
        Sum => reduce(&ops[0], z, at, |acc, x| acc + x),
        DotSelf => reduce(&ops[0], z, at, |acc, x| acc + x * x),
        DotProduct => dot(&ops[0], &ops[1], z, at),
        _ => None,
    }
}

/// The length of `to_vector` of a value of this shape, for the shapes
/// whose elements are already in `to_vector`'s order (a one-dimensional
/// real array, a vector, a row vector, a matrix).
fn flat_reals(shape: &Shape) -> Option<usize> {
    match shape {
        Shape::Array(n, inner) if **inner == Shape::Real => Some(*n),
        Shape::Vector(n) | Shape::RowVector(n) => Some(*n),
        Shape::Matrix(r, c) => Some(r * c),
        _ => None,
    }
}

/// `Mul` and `Div` are elementwise only with a scalar operand (else they
/// are matrix products and solves).
fn elementwise_applies(p: Prim, ops: &[Operand]) -> bool {
    let scalar = |i: usize| ops.get(i).is_some_and(|o| o.shape.is_none());
    match p {
        Prim::Mul => scalar(0) || scalar(1),
        Prim::Div => scalar(1),
        _ => true,
    }
}

/// An elementwise unary or binary primitive whose result may be written
/// into the buffer of an operand that nothing else holds (a temporary),
/// saving an allocation; `args` are the evaluated operands.
/// With `at` ([`sparse_lanes`]), only those lanes are computed.
pub(crate) fn prim_in_place(
    p: Prim,
    args: &mut [Arc<Slot>],
    z: usize,
    at: Option<&[usize]>,
) -> Option<Slot> {
    if args.len() == 1 {
        let Slot::Real(_) = &*args[0] else {
            return None;
        };
        let d = Arc::get_mut(&mut args[0])?;
        let Slot::Real(d) = d else { return None };
        return unary!(p, f => {
            let mut d = std::mem::replace(d, Dense::new(Shape::Array(0, Box::new(Shape::Real)), 0, Vec::new()));
            if let Some(at) = at {
                for row in d.data.chunks_exact_mut(z) {
                    for &l in at {
                        row[l] = f(row[l]);
                    }
                }
            } else if !map_wide(p, false, Wide::InPlace(&mut d.data)) {
                d.data.iter_mut().for_each(|x| *x = f(*x));
            }
            Some(Slot::Real(d))
        });
    }
    // A cheap test first: operands of other primitives are not built.
    binary!(p, _f => Some(()))?;
    // One operand() per argument: the result's shape comes from both, and
    // the one not reused is read through its operand below.
    let [a, b] = args else { return None };
    let (op_a, op_b) = (operand(a)?, operand(b)?);
    // Shape stand-ins: an array of the operands would tie both borrows
    // to one lifetime and keep the reused one borrowed.
    let shapes = [shape_only(&op_a), shape_only(&op_b)];
    if !elementwise_applies(p, &shapes) {
        return None;
    }
    let (result_shape, _) = zip_shape(&shapes)?;
    // Reuse the operand that has the result's shape and is unique.
    let reusable = |s: &Arc<Slot>| {
        matches!(&**s, Slot::Real(d) if d.shape == result_shape)
            && Arc::strong_count(s) == 1
            && Arc::weak_count(s) == 0
    };
    let k = if reusable(a) {
        0
    } else if reusable(b) {
        1
    } else {
        return None;
    };
    let (mine, other) = if k == 0 {
        drop(op_a);
        (a, op_b)
    } else {
        drop(op_b);
        (b, op_a)
    };
    let Some(Slot::Real(d)) = Arc::get_mut(mine) else {
        return None;
    };
    let n = d.elements();
    let other_flat = match at {
        None => other.src.flat(n, z),
        Some(_) => None,
    };
    binary!(p, f => {
        match (other_flat, k) {
            (Some(Flat::Const(y)), 0) => d.data.iter_mut().for_each(|x| *x = f(*x, y)),
            (Some(Flat::Const(x)), _) => d.data.iter_mut().for_each(|y| *y = f(x, *y)),
            (Some(Flat::Run(ys)), 0) => {
                d.data.iter_mut().zip(ys).for_each(|(x, &y)| *x = f(*x, y))
            }
            (Some(Flat::Run(xs)), _) => {
                d.data.iter_mut().zip(xs).for_each(|(y, &x)| *y = f(x, *y))
            }
            (None, _) => {}
        }
        for e in (0..n).filter(|_| other_flat.is_none()) {
            let row = &mut d.data[e * z..(e + 1) * z];
            let col = other.src.col(if other.shape.is_none() { 0 } else { e }, z);
            if let Some(at) = at {
                for &l in at {
                    let o = at_lane(col, l);
                    row[l] = if k == 0 { f(row[l], o) } else { f(o, row[l]) };
                }
                continue;
            }
            match (col, k) {
                (ElemCol::Const(y), 0) => row.iter_mut().for_each(|x| *x = f(*x, y)),
                (ElemCol::Const(x), _) => row.iter_mut().for_each(|y| *y = f(x, *y)),
                (ElemCol::Lane(ys), 0) => row.iter_mut().zip(ys).for_each(|(x, &y)| *x = f(*x, y)),
                (ElemCol::Lane(xs), _) => row.iter_mut().zip(xs).for_each(|(y, &x)| *y = f(x, *y)),
            }
        }
        Some(())
    })?;
    let d = std::mem::replace(
        d,
        Dense::new(Shape::Array(0, Box::new(Shape::Real)), 0, Vec::new()),
    );
    Some(Slot::Real(d))
}

/// A per-lane fold over the elements of a dense operand, from −0.0 (the
/// start of Rust's `f64` sum, which the interpreter uses).
fn reduce(
    a: &Operand,
    z: usize,
    at: Option<&[usize]>,
    f: impl Fn(f64, f64) -> f64,
) -> Option<Slot> {
    let Src::Lanes(data, n) = a.src else {
        return None;
    };
    let mut acc = crate::lanes::pool::filled(z, -0.0);
    if let Some(at) = at {
        for e in 0..n {
            let xs = &data[e * z..(e + 1) * z];
            for &l in at {
                acc[l] = f(acc[l], xs[l]);
            }
        }
        return Some(Slot::Real(Dense::new(Shape::Real, z, acc)));
    }
    if z == 1 {
        // One chain: the same fold over the elements in one pass.
        acc[0] = data[..n].iter().fold(acc[0], |a, &x| f(a, x));
        return Some(Slot::Real(Dense::new(Shape::Real, z, acc)));
    }
    for e in 0..n {
        let xs = &data[e * z..(e + 1) * z];
        for (a, &x) in acc.iter_mut().zip(xs) {
            *a = f(*a, x);
        }
    }
    Some(Slot::Real(Dense::new(Shape::Real, z, acc)))
}

fn dot(a: &Operand, b: &Operand, z: usize, at: Option<&[usize]>) -> Option<Slot> {
    let len = |o: &Operand| match &o.src {
        Src::Scalar(_) => 1,
        Src::Elems(v) => v.len(),
        Src::Lanes(_, n) => *n,
    };
    let n = len(a);
    if len(b) != n {
        return None;
    }
    let mut acc = crate::lanes::pool::filled(z, -0.0);
    // One chain: the products summed in element order in one pass.
    if z == 1
        && let (Some(x), Some(y)) = (a.src.flat(n, 1), b.src.flat(n, 1))
    {
        let at = |x: Flat, e: usize| match x {
            Flat::Const(x) => x,
            Flat::Run(xs) => xs[e],
        };
        for e in 0..n {
            acc[0] += at(x, e) * at(y, e);
        }
        return Some(Slot::Real(Dense::new(Shape::Real, z, acc)));
    }
    if let Some(at) = at {
        for e in 0..n {
            let (x, y) = (a.src.col(e, z), b.src.col(e, z));
            for &l in at {
                acc[l] += at_lane(x, l) * at_lane(y, l);
            }
        }
        return Some(Slot::Real(Dense::new(Shape::Real, z, acc)));
    }
    for e in 0..n {
        match (a.src.col(e, z), b.src.col(e, z)) {
            (ElemCol::Const(x), ElemCol::Const(y)) => acc.iter_mut().for_each(|a| *a += x * y),
            (ElemCol::Const(x), ElemCol::Lane(ys)) | (ElemCol::Lane(ys), ElemCol::Const(x)) => {
                // x * y and y * x are the same float.
                acc.iter_mut().zip(ys).for_each(|(a, &y)| *a += x * y)
            }
            (ElemCol::Lane(xs), ElemCol::Lane(ys)) => acc
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
    if args.len() > 1 && !args[1].is_shared() {
        return None;
    }
    let z = st.z;
    // Element-major: each element's lanes are contiguous. Almost always
    // every value passes: one branch-free scan per check (vectorized, see
    // [`count_failing`]) finds that, and only when some value fails are
    // the failing lanes marked.
    let bad: Vec<bool> = match args[0] {
        Slot::Real(d) if count_failing(p, &d.data) > 0 => {
            let mut bad = vec![false; z];
            for k in 0..d.elements() {
                for (b, &x) in bad.iter_mut().zip(d.element(k)) {
                    *b |= !passes(p, x);
                }
            }
            bad
        }
        Slot::Int(d) => {
            let mut bad = vec![false; z];
            for k in 0..d.elements() {
                for (b, &x) in bad.iter_mut().zip(d.element(k)) {
                    *b |= !passes(p, x as f64);
                }
            }
            bad
        }
        Slot::Real(_) => Vec::new(),
        _ => return None,
    };
    if bad.is_empty() {
        return Some(Slot::shared(Value::Real(0.0)));
    }
    let failing: Vec<usize> = active.iter().filter(|&l| bad[l]).collect();
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

/// Whether `x` passes the argument check `p`: the interpreter's test.
#[inline(always)]
fn passes(p: Prim, x: f64) -> bool {
    runtime::passes_check(p, x)
}

/// How many of `xs` fail the check `p`. One loop per check with the
/// check's test inlined (a test chosen inside the loop kept it scalar:
/// the logistic regression's NaN check of its 10,000 × 1024 linear
/// predictor took 6% of the gradient).
fn count_failing(p: Prim, xs: &[f64]) -> usize {
    use Prim::*;
    fn count(xs: &[f64], ok: impl Fn(f64) -> bool) -> usize {
        xs.iter().map(|&x| usize::from(!ok(x))).sum()
    }
    match p {
        CheckPositiveFinite => count(xs, |x| passes(CheckPositiveFinite, x)),
        CheckPositive => count(xs, |x| passes(CheckPositive, x)),
        CheckNonNegative => count(xs, |x| passes(CheckNonNegative, x)),
        CheckFinite => count(xs, |x| passes(CheckFinite, x)),
        CheckNotNan => count(xs, |x| passes(CheckNotNan, x)),
        CheckProbability => count(xs, |x| passes(CheckProbability, x)),
        other => count(xs, |x| passes(other, x)),
    }
}

/// ∂prim/∂args[arg] elementwise for dense operands (the interpreter's
/// `partial`: the first non-scalar operand gives the shape).
pub(crate) fn partial(prim: Prim, arg: usize, args: &[&Slot], z: usize) -> Option<Slot> {
    if args.iter().all(|a| a.is_shared()) {
        return None;
    }
    let p = prim.scalar_rule().filter(|p| p.arity() == args.len())?;
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
    let mut out = crate::lanes::pool::buffer(n * z);
    let mut point = vec![0.0; ops.len()];
    for e in 0..n {
        let cols: Vec<ElemCol> = ops
            .iter()
            .map(|o| o.src.col(if len(o) == 1 { 0 } else { e }, z))
            .collect();
        for l in 0..z {
            for (k, c) in cols.iter().enumerate() {
                point[k] = match c {
                    ElemCol::Const(x) => *x,
                    ElemCol::Lane(xs) => xs[l],
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
        Slot::Tuple(items) => match ty {
            Type::Tuple(types) if types.len() == items.len() => {
                let items = items
                    .iter()
                    .zip(types)
                    .map(|(i, t)| promote(i, t))
                    .collect::<Option<Vec<_>>>()?;
                Some(Arc::new(Slot::Tuple(items)))
            }
            _ => None,
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Argument checks over dense values fail exactly the active lanes
    /// holding a failing value (at any element), with the interpreter's
    /// error, and pass the rest; an inactive lane's failing value is
    /// ignored.
    #[test]
    fn checks_fail_exactly_the_lanes_with_a_failing_value() {
        use crate::lanes::LaneStatus;
        let (mir, diags) = language::compile_model("parameters { real mu; }", "check");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        let e = Expr {
            kind: language::mir::ExprKind::Real(0.0),
            ty: Type::Real,
            ad: language::types::AdLevel::DataOnly,
            span: Default::default(),
        };
        let checks = [
            (Prim::CheckPositiveFinite, f64::INFINITY),
            (Prim::CheckPositive, 0.0),
            (Prim::CheckNonNegative, -1.0),
            (Prim::CheckFinite, f64::NEG_INFINITY),
            (Prim::CheckNotNan, f64::NAN),
            (Prim::CheckProbability, 1.5),
        ];
        let (z, n) = (5, 3);
        for (p, failing) in checks {
            for bad_lanes in [vec![], vec![1], vec![1, 4], vec![0, 2, 3]] {
                // Element-major: element 2 of lane l is at 2·z + l.
                let mut xs = vec![0.5; n * z];
                for &l in &bad_lanes {
                    xs[2 * z + l] = failing;
                }
                let slot = Slot::Real(Dense::new(Shape::Vector(n), z, xs));
                let mut st = State::new(&mir, &[], z);
                // Lane 4 is not active: its value is not checked.
                let active = Lanes::from_indices(z, vec![0, 1, 2, 3]);
                let out = check(p, &[&slot], &mut st, &active, &e);
                assert_eq!(out, Some(Slot::shared(Value::Real(0.0))));
                for l in 0..z {
                    let want_fail = bad_lanes.contains(&l) && l != 4;
                    assert_eq!(
                        !st.is_running(l),
                        want_fail,
                        "{p:?} lane {l} of {bad_lanes:?}"
                    );
                    if want_fail {
                        let LaneStatus::Failed(err) = &st.status[l] else {
                            unreachable!()
                        };
                        let want = lane::eval_prim(p, &[slot.lane_value(l)]).unwrap_err();
                        assert_eq!(err.to_string(), want.at(e.span).to_string());
                    }
                }
            }
        }
    }

    /// `map_negated` gives `p(-x)` elementwise, in place for a unique
    /// slot and into a new buffer (leaving `x` as it was) for a held one,
    /// and declines what it has no fused form for.
    #[test]
    fn negated_maps_in_place_and_copied() {
        let (z, n) = (5, 3);
        let xs: Vec<f64> = (0..n * z).map(|i| i as f64 * 7.5 - 50.0).collect();
        let dense = || Slot::Real(Dense::new(Shape::Vector(n), z, xs.clone()));
        let reference = [
            (Prim::InvLogit, m::inv_logit as fn(f64) -> f64),
            (Prim::LogInvLogit, m::log_inv_logit),
        ];
        for (p, f) in reference {
            let want: Vec<u64> = xs.iter().map(|&x| f(-x).to_bits()).collect();
            let mut unique = Arc::new(dense());
            let mut held = Arc::new(dense());
            let holder = held.clone();
            for x in [&mut unique, &mut held] {
                let Some(Slot::Real(d)) = map_negated(p, x) else {
                    panic!("{p:?}: not mapped")
                };
                assert_eq!((&d.shape, d.z), (&Shape::Vector(n), z));
                let got: Vec<u64> = d.data.iter().map(|y| y.to_bits()).collect();
                assert_eq!(got, want, "{p:?}");
            }
            let Slot::Real(d) = &*holder else { panic!() };
            assert_eq!(d.data, xs, "{p:?}: a held operand was overwritten");
        }
        assert!(map_negated(Prim::Exp, &mut Arc::new(dense())).is_none());
        let shared = Slot::shared(Value::Vector(xs.clone()));
        assert!(map_negated(Prim::InvLogit, &mut Arc::new(shared)).is_none());
    }

    /// The wide loops give each element the scalar function's bits (the
    /// interpreter's), at whatever width this CPU runs them, including
    /// the vector remainders and the special values.
    #[test]
    fn wide_maps_are_the_scalar_functions_bit_for_bit() {
        let mut xs: Vec<f64> = (0..20_011)
            .map(|i| {
                let t = i as f64 / 20_011.0;
                (t - 0.5) * 80.0 * (1.0 + (i % 7) as f64)
            })
            .collect();
        xs.extend([
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            f64::MIN_POSITIVE,
            -745.5,
            745.5,
            -800.0,
            800.0,
            m::LOG_EPSILON,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]);
        type Scalar = fn(f64) -> f64;
        let scalar: [(Prim, Scalar); 2] = [
            (Prim::InvLogit, m::inv_logit),
            (Prim::LogInvLogit, m::log_inv_logit),
        ];
        for (p, f) in scalar {
            for len in [xs.len(), 1, 3, 8, 13] {
                let src = &xs[xs.len() - len..];
                for negate in [false, true] {
                    // The interpreter's: negate (if fused), then f.
                    let f = |x: f64| f(if negate { -x } else { x });
                    let mut in_place = src.to_vec();
                    assert!(map_wide(p, negate, Wide::InPlace(&mut in_place)));
                    let mut appended = vec![];
                    assert!(map_wide(p, negate, Wide::Append(src, &mut appended)));
                    assert_eq!(appended.len(), len);
                    for ((x, a), b) in src.iter().zip(&in_place).zip(&appended) {
                        let want = f(*x).to_bits();
                        assert_eq!(a.to_bits(), want, "{p:?}({x}, {negate}) in place");
                        assert_eq!(b.to_bits(), want, "{p:?}({x}, {negate})");
                    }
                }
            }
        }
        // The pair: both functions' bits from one pass.
        for len in [xs.len(), 1, 3, 8, 13] {
            pair_is_both_maps(&xs[xs.len() - len..]);
        }
        let shared = Slot::shared(Value::Vector(vec![1.0]));
        assert!(log_inv_logit_pair(&shared).is_none());
        assert!(sum_log_inv_logit_pair(&shared, None).is_none());
        assert!(!map_wide(Prim::Exp, false, Wide::InPlace(&mut xs)));
        assert!(!map_wide(Prim::Exp, true, Wide::InPlace(&mut xs)));
    }

    /// [`log_inv_logit_pair`] of `src` (one lane) gives both functions'
    /// bits.
    fn pair_is_both_maps(src: &[f64]) {
        let len = src.len();
        let x = Slot::Real(Dense::new(Shape::Vector(len), 1, src.to_vec()));
        let Some((Slot::Real(value), Slot::Real(neg))) = log_inv_logit_pair(&x) else {
            panic!("not paired")
        };
        assert_eq!((value.data.len(), neg.data.len()), (len, len));
        for ((x, a), b) in src.iter().zip(&value.data).zip(&neg.data) {
            let want = m::log_inv_logit(*x).to_bits();
            assert_eq!(a.to_bits(), want, "log_inv_logit({x})");
            assert_eq!(b.to_bits(), m::inv_logit(-*x).to_bits(), "inv_logit(-{x})");
        }
    }

    /// Values over the logistic functions' ranges and edges.
    fn logistic_inputs(len: usize) -> Vec<f64> {
        let special = [
            0.0,
            -0.0,
            1e-300,
            -745.2,
            800.0,
            -800.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        (0..len)
            .map(|i| match i % 37 {
                k if k < special.len() => special[k],
                _ => ((i as f64) * 0.7331).sin() * 40.0 / (1.0 + (i % 5) as f64),
            })
            .collect()
    }

    #[test]
    fn log_inv_logit_pair_in_stages_and_summed_per_lane() {
        // Several runs of the kernel's stages, and a short last one.
        pair_is_both_maps(&logistic_inputs(3 * STAGE + 37));
        // Summed: each lane's terms in element order from −0.0, as `sum`.
        for (n, z) in [(1, MIN_SUM_LANES), (3, 300), (5, 4 * STAGE + 7)] {
            let data = logistic_inputs(n * z);
            let x = Slot::Real(Dense::new(Shape::Vector(n), z, data.clone()));
            let Some((Slot::Real(sums), Slot::Real(neg), None)) = sum_log_inv_logit_pair(&x, None)
            else {
                panic!("not summed")
            };
            assert_eq!((sums.data.len(), neg.data.len()), (z, n * z));
            for l in 0..z {
                let want = (0..n).fold(-0.0, |s, e| s + m::log_inv_logit(data[e * z + l]));
                assert_eq!(sums.data[l].to_bits(), want.to_bits(), "lane {l} of {z}");
            }
            for (x, b) in data.iter().zip(&neg.data) {
                assert_eq!(b.to_bits(), m::inv_logit(-*x).to_bits(), "inv_logit(-{x})");
            }
        }
        // Too few lanes for runs: not summed here (`sum` of the pair's terms).
        let x = Slot::Real(Dense::new(Shape::Vector(2), 3, logistic_inputs(6)));
        assert!(sum_log_inv_logit_pair(&x, None).is_none());
    }

    /// With factors, the second of the pair is `elt_multiply(inv_logit(-x),
    /// h)`: each element's `inv_logit(−x)·h` bit for bit (signs, zeros,
    /// infinities and NaN among the factors), shaped as the product; the
    /// sums are unchanged.
    #[test]
    fn log_inv_logit_pair_scaled_per_element() {
        let special = [1.0, -1.0, 0.5, -0.0, 0.0, 3e300, f64::INFINITY, f64::NAN];
        for (n, z) in [(1, MIN_SUM_LANES), (11, 300), (3, 2 * STAGE + 5)] {
            let data = logistic_inputs(n * z);
            let h: Vec<f64> = (0..n).map(|e| special[e % special.len()]).collect();
            let x = Slot::Real(Dense::new(Shape::Vector(n), z, data.clone()));
            let hs = Slot::shared(Value::Vector(h.clone()));
            let factors = element_factors(&x, &hs).expect("a vector of n");
            let Some((Slot::Real(sums), Slot::Real(neg), Some(Slot::Real(neg_sums)))) =
                sum_log_inv_logit_pair(&x, Some(factors))
            else {
                panic!("not summed")
            };
            // The product's per-lane sums are `sum`'s ([`reduce`]: from
            // −0.0, element by element) of the product, bit for bit.
            for l in 0..z {
                let want = (0..n).fold(-0.0, |s, e| s + m::inv_logit(-data[e * z + l]) * h[e]);
                let got = neg_sums.data[l];
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "product sum, lane {l} of {z}: {got} vs {want}"
                );
            }
            assert_eq!(neg.shape, Shape::Vector(n));
            for l in 0..z {
                let want = (0..n).fold(-0.0, |s, e| s + m::log_inv_logit(data[e * z + l]));
                assert_eq!(sums.data[l].to_bits(), want.to_bits(), "lane {l} of {z}");
            }
            for (i, (x, b)) in data.iter().zip(&neg.data).enumerate() {
                let want = m::inv_logit(-*x) * h[i / z];
                assert_eq!(
                    b.to_bits(),
                    want.to_bits(),
                    "inv_logit(-{x}) * {}",
                    h[i / z]
                );
            }
        }
        // One number per element of a shared real container only.
        let x = Slot::Real(Dense::new(Shape::Vector(3), 2, vec![0.0; 6]));
        let ints = Slot::shared(Value::Array(vec![Value::Int(1); 3]));
        let factors = element_factors(&x, &ints).expect("ints as reals");
        assert_eq!(
            (&*factors.of, &factors.shape),
            (&[1.0; 3][..], &Shape::Vector(3))
        );
        for h in [
            Slot::shared(Value::Vector(vec![1.0; 4])),
            Slot::shared(Value::Real(2.0)),
            Slot::Real(Dense::new(Shape::Vector(3), 2, vec![1.0; 6])),
        ] {
            assert!(element_factors(&x, &h).is_none(), "{h:?}");
        }
    }
}
