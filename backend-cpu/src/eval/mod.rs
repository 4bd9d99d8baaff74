//! Batched evaluation of MIR expressions over the active lanes of a
//! [`State`].
//!
//! # Contract
//! For every active lane that has not failed, [`eval`] gives the value the
//! scalar interpreter's `Machine::eval` gives for that lane, with the same
//! side effects (stack pops, random draws) in the same order. A lane whose
//! evaluation fails gets the interpreter's error (with the innermost
//! expression's span) recorded in [`State::status`] — the first error of a
//! lane wins, as the interpreter stops at its first — and the lanes that
//! did not fail go on. Inactive lanes never fail, never pop, never draw.
//!
//! # How
//! Operands are evaluated first (left to right, as the interpreter), then
//! the operation chooses a kernel from the operands' slots:
//! - only [`Slot::Shared`] operands and no side effect: computed once with
//!   the interpreter's own code (`runtime::lane`), result shared;
//! - dense operands of a hot operation (arithmetic, elementwise math,
//!   reductions, indexing, shared-matrix × per-lane-vector products as one
//!   GEMM, derivative rules, argument checks): a batched kernel
//!   ([`kernels`], [`gemm`]) using the same scalar functions as the
//!   interpreter, so results are bit-identical (the GEMM too: each
//!   lane summed in the interpreter's order, one FMA per term);
//! - `_rng` draws at dense or shared scalar/container arguments: each
//!   lane's stream drawn in the interpreter's order straight into a dense
//!   slot ([`draws`]);
//! - anything else (e.g. ODE solves): the interpreter's code lane by lane
//!   ([`per_lane`]).

mod draws;
pub(crate) mod gemm;
pub(crate) mod index;
#[macro_use]
mod scalar_fns;
mod kernels;
pub mod logistic_pair;
mod scalars;

use crate::lanes::{Lanes, Slot, State};
use language::mir::{Expr, ExprKind, Prim, VarId};
use language::span::Span;
use language::value::Value;
use runtime::{RuntimeError, lane};
use std::sync::Arc;

pub use index::{LaneIx, eval_indexes};

/// A misuse of the batched evaluator (not a lane's runtime error).
#[derive(Clone, Debug, PartialEq)]
pub enum BatchError {
    /// A user-function call or control flow inside a straight-line op: the
    /// CFG lowering should have hoisted it.
    NotStraightLine(&'static str),
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchError::NotStraightLine(what) => {
                write!(f, "{what} inside a straight-line operation")
            }
        }
    }
}

impl std::error::Error for BatchError {}

pub type Result<T> = std::result::Result<T, BatchError>;

/// The value of `e` for the active lanes of `st` (see the module docs).
pub fn eval(e: &Expr, st: &mut State, active: &Lanes) -> Result<Arc<Slot>> {
    Ok(match &e.kind {
        ExprKind::Int(i) => shared(Value::Int(*i)),
        ExprKind::Real(x) => shared(Value::Real(*x)),
        ExprKind::Imag(x) => shared(Value::Complex(0.0, *x)),
        // One switch for the whole batch.
        ExprKind::JacobianOn => shared(Value::Int(st.jacobian as i64)),
        ExprKind::Var(v) => match read_var(st, *v) {
            Some(slot) => slot,
            None => {
                let msg = format!("variable `{}` used before it has a value", st.name(*v));
                fail_all(st, active, RuntimeError::fatal(msg).at(e.span));
                filler()
            }
        },
        ExprKind::Prim(p, args) => prim(*p, args, e, st, active)?,
        ExprKind::Call(..) => return Err(BatchError::NotStraightLine("a user-function call")),
        ExprKind::Index(base, idx) => {
            let base = eval(base, st, active)?;
            let idx = eval_indexes(idx, st, active)?;
            Arc::new(index::get(&base, &idx, st, active, e.span))
        }
        ExprKind::TupleProj(base, k) => {
            let base = eval(base, st, active)?;
            match &*base {
                Slot::Tuple(items) if (1..=items.len()).contains(k) => items[*k - 1].clone(),
                _ => Arc::new(per_lane(st, active, e.span, &[&base], |vals| {
                    lane::tuple_proj(vals[0].clone(), *k)
                })),
            }
        }
        ExprKind::Cond(c, t, f) => cond(e, c, t, f, st, active)?,
        ExprKind::ArrayLit(items) => {
            let items = eval_all(items, st, active)?;
            if let Some(stacked) = kernels::stack_array(&items, &e.ty) {
                Arc::new(stacked)
            } else {
                let refs: Vec<&Slot> = items.iter().map(|a| &**a).collect();
                Arc::new(per_lane(st, active, e.span, &refs, |vals| {
                    Ok(lane::promote(Value::Array(vals.to_vec()), &e.ty))
                }))
            }
        }
        ExprKind::RowVectorLit(items) => {
            let items = eval_all(items, st, active)?;
            if let Some(stacked) = kernels::stack_row_vector(&items) {
                Arc::new(stacked)
            } else {
                let refs: Vec<&Slot> = items.iter().map(|a| &**a).collect();
                Arc::new(per_lane(st, active, e.span, &refs, |vals| {
                    lane::row_vector_literal(vals.to_vec())
                }))
            }
        }
        ExprKind::TupleLit(items) => {
            let items = eval_all(items, st, active)?;
            tuple_literal(items, e, st, active)
        }
        ExprKind::Target => Arc::new(Slot::Real(crate::lanes::Dense::new(
            language::data::Shape::Real,
            st.z,
            st.target.clone(),
        ))),
        ExprKind::Pop(stack) => Arc::new(pop(st, active, stack.0 as usize, e.span)),
        ExprKind::Partial { prim, arg, args } => {
            let args = eval_all(args, st, active)?;
            let refs: Vec<&Slot> = args.iter().map(|a| &**a).collect();
            match kernels::partial(*prim, *arg, &refs, st.z) {
                Some(slot) => Arc::new(slot),
                None => Arc::new(per_lane(st, active, e.span, &refs, |vals| {
                    lane::partial(*prim, *arg, vals)
                })),
            }
        }
        ExprKind::ZerosLike(inner) => {
            let inner = eval(inner, st, active)?;
            Arc::new(zeros_like(&inner, st, active, e.span))
        }
        // An ODE solve runs the interpreter's solver lane by lane (its
        // system function is MIR, run by the interpreter).
        ExprKind::Ode(call) => {
            let operands: Vec<Arc<Slot>> = call
                .operands()
                .into_iter()
                .map(|a| eval(a, st, active))
                .collect::<Result<_>>()?;
            let refs: Vec<&Slot> = operands.iter().map(|a| &**a).collect();
            let program = st.program;
            Arc::new(per_lane(st, active, e.span, &refs, |vals| {
                lane::ode(program, call, vals)
            }))
        }
    })
}

/// Variable `v`'s slot: taken out of the state at its last read
/// ([`State::moving`], so kernels may reuse its buffer), else shared.
fn read_var(st: &mut State, v: VarId) -> Option<Arc<Slot>> {
    let slot = &mut st.vars[v.0 as usize];
    if st.moving.contains(&v) {
        slot.take()
    } else {
        slot.clone()
    }
}

fn prim(p: Prim, args: &[Expr], e: &Expr, st: &mut State, active: &Lanes) -> Result<Arc<Slot>> {
    // `transpose(X) * v` with shared X: one GEMM reading X transposed.
    if p == Prim::Mul
        && st.gemm
        && let ExprKind::Prim(Prim::Transpose, inner) = &args[0].kind
        && let [inner] = inner.as_slice()
    {
        let x = eval(inner, st, active)?;
        let v = eval(&args[1], st, active)?;
        if let Some(slot) = gemm::multiply(&x, &v, true) {
            return Ok(Arc::new(slot));
        }
        let xt = per_lane(st, active, args[0].span, &[&x], |vals| {
            lane::eval_prim(Prim::Transpose, vals)
        });
        return Ok(Arc::new(apply(p, &[&xt, &v], st, active, e)));
    }
    // `sum(log_inv_logit(x))` of such a variable (bernoulli_logit's log
    // mass): the terms summed per lane as they are computed.
    if p == Prim::Sum
        && active.is_full()
        && let [arg] = args
        && let ExprKind::Prim(Prim::LogInvLogit, inner) = &arg.kind
        && let [inner] = inner.as_slice()
        && let Some(var) = st.logistic.paired_var(inner)
    {
        let x = eval(inner, st, active)?;
        // Kept as `elt_multiply(inv_logit(-x), h)` when the program asks
        // for that product and h's value allows it ([`logistic_pair`]).
        let factor = st
            .logistic
            .factor(var)
            .and_then(|h| st.vars[h.0 as usize].clone());
        let factors = factor
            .as_deref()
            .and_then(|h| kernels::element_factors(&x, h));
        let scaled = factors.is_some();
        if let Some((sums, neg_inv_logit, neg_sums)) = kernels::sum_log_inv_logit_pair(&x, factors)
        {
            let factor = factor.filter(|_| scaled);
            st.logistic
                .keep(var, x, active.clone(), factor, neg_inv_logit, neg_sums);
            return Ok(Arc::new(sums));
        }
        let terms = log_inv_logit_paired(var, x, st, active, arg);
        return Ok(Arc::new(apply(p, &[&terms], st, active, e)));
    }
    // `sum(v)` of a product the pair just handed out (below) with its
    // per-lane sums: taken, not summed again (for a logistic regression,
    // α's gradient).
    if p == Prim::Sum
        && let [arg] = args
        && let ExprKind::Var(_) = arg.kind
    {
        let x = eval(arg, st, active)?;
        if let Some(sums) = st.logistic.take_sums(&x, active) {
            return Ok(Arc::new(sums));
        }
        return finish(p, vec![x], st, active, e);
    }
    // `elt_multiply(inv_logit(-x), h)` of a paired variable: the product
    // kept by `sum(log_inv_logit(x))`, if it was kept for this h.
    if p == Prim::EltMul
        && active.is_full()
        && let Some((v, h)) = logistic_pair::scaled_inv_logit_of_negated_var(e)
        && st.logistic.factor(v) == Some(h)
        && let [product, h_arg] = args
        && let ExprKind::Prim(Prim::InvLogit, neg) = &product.kind
        && let [neg] = neg.as_slice()
        && let ExprKind::Prim(Prim::Neg, inner) = &neg.kind
        && let [inner] = inner.as_slice()
    {
        // Left to right, as the interpreter (reading a variable has no
        // other effect).
        let x = eval(inner, st, active)?;
        let h = eval(h_arg, st, active)?;
        if let Some(slot) = st.logistic.take(inner, &x, active, Some(&h)) {
            return Ok(slot);
        }
        let first = neg_inv_logit(x, inner, st, active, product, neg)?;
        return finish(p, vec![first, h], st, active, e);
    }
    // `log_inv_logit(x)` of a variable whose `inv_logit(-x)` comes later:
    // both in one pass, the second kept ([`logistic_pair`]).
    let paired = match args {
        [arg] if p == Prim::LogInvLogit && active.is_full() => st.logistic.paired_var(arg),
        _ => None,
    };
    let args = match (args, paired) {
        ([arg], Some(var)) => {
            let x = eval(arg, st, active)?;
            return Ok(log_inv_logit_paired(var, x, st, active, e));
        }
        // `inv_logit(-x)`: one pass over x (no temporary for -x).
        ([arg], None) if matches!(p, Prim::InvLogit | Prim::LogInvLogit) => match &arg.kind {
            ExprKind::Prim(Prim::Neg, inner) if inner.len() == 1 => {
                let mut x = eval(&inner[0], st, active)?;
                if p == Prim::InvLogit
                    && let Some(slot) = st.logistic.take(&inner[0], &x, active, None)
                {
                    return Ok(slot);
                }
                if let Some(slot) = kernels::map_negated(p, &mut x) {
                    return Ok(Arc::new(slot));
                }
                vec![Arc::new(apply(Prim::Neg, &[&x], st, active, arg))]
            }
            _ => eval_all(args, st, active)?,
        },
        _ => eval_all(args, st, active)?,
    };
    finish(p, args, st, active, e)
}

/// Primitive `p` (the expression `e`) on its evaluated operands.
fn finish(
    p: Prim,
    mut args: Vec<Arc<Slot>>,
    st: &mut State,
    active: &Lanes,
    e: &Expr,
) -> Result<Arc<Slot>> {
    if let Some(slot) = shape_query(p, &args, st, active, e) {
        return Ok(slot);
    }
    if p.is_rng() {
        return Ok(Arc::new(draw(p, &args, st, active, e.span)));
    }
    if !args.iter().all(|a| a.is_shared())
        && let Some(slot) =
            kernels::prim_in_place(p, &mut args, st.z, kernels::sparse_lanes(active, st.z))
    {
        return Ok(Arc::new(slot));
    }
    let refs: Vec<&Slot> = args.iter().map(|a| &**a).collect();
    Ok(Arc::new(apply(p, &refs, st, active, e)))
}

/// `inv_logit(-x)` (the expression `e`, its argument `neg`) of the value
/// `x` of variable `var`, as [`prim`] computes it: kept by the pair, else
/// in one pass, else negated then mapped.
fn neg_inv_logit(
    mut x: Arc<Slot>,
    var: &Expr,
    st: &mut State,
    active: &Lanes,
    e: &Expr,
    neg: &Expr,
) -> Result<Arc<Slot>> {
    if let Some(slot) = st.logistic.take(var, &x, active, None) {
        return Ok(slot);
    }
    if let Some(slot) = kernels::map_negated(Prim::InvLogit, &mut x) {
        return Ok(Arc::new(slot));
    }
    let negated = Arc::new(apply(Prim::Neg, &[&x], st, active, neg));
    finish(Prim::InvLogit, vec![negated], st, active, e)
}

/// `log_inv_logit(x)` (the expression `e`) of the value `x` of paired
/// variable `var`, its `inv_logit(-x)` kept from the same pass.
fn log_inv_logit_paired(
    var: VarId,
    x: Arc<Slot>,
    st: &mut State,
    active: &Lanes,
    e: &Expr,
) -> Arc<Slot> {
    if let Some((value, neg_inv_logit)) = kernels::log_inv_logit_pair(&x) {
        st.logistic
            .keep(var, x, active.clone(), None, neg_inv_logit, None);
        return Arc::new(value);
    }
    // Not dense reals: as any other `log_inv_logit`.
    Arc::new(apply(Prim::LogInvLogit, &[&x], st, active, e))
}

/// `rows(x)`, `size(x)`, ... of a dense slot: every lane has the same
/// shape, so the answer is shared (sizes then stay shared downstream, and
/// declarations sized by them are laid out once).
fn shape_query(
    p: Prim,
    args: &[Arc<Slot>],
    st: &mut State,
    active: &Lanes,
    e: &Expr,
) -> Option<Arc<Slot>> {
    use Prim::*;
    if !matches!(p, Size | Rows | Cols | NumElements | Dims) {
        return None;
    }
    let [arg] = args else { return None };
    let representative = match &**arg {
        Slot::Real(d) => crate::lanes::build_real(&d.shape, &mut std::iter::repeat(0.0)),
        Slot::Int(d) => crate::lanes::build_int(&d.shape, &mut std::iter::repeat(0)),
        _ => return None,
    };
    let rep = Slot::shared(representative);
    Some(Arc::new(per_lane(st, active, e.span, &[&rep], |vals| {
        lane::eval_prim(p, vals)
    })))
}

/// Primitive `p` on evaluated operands: a batched kernel or lane by lane.
fn apply(p: Prim, args: &[&Slot], st: &mut State, active: &Lanes, e: &Expr) -> Slot {
    if !args.iter().all(|a| a.is_shared())
        && let Some(slot) = scalars::prim(p, args, st, active, e)
    {
        return slot;
    }
    match kernels::prim(p, args, st, active, e) {
        Some(slot) => slot,
        None => per_lane(st, active, e.span, args, |vals| lane::eval_prim(p, vals)),
    }
}

/// The running lanes of `lanes` split by the truth of `cond` (a `Branch`
/// terminator's condition): (true, false). A lane whose condition fails
/// to evaluate is marked failed and is in neither.
pub fn split_on(cond: &Expr, st: &mut State, lanes: &Lanes) -> Result<(Lanes, Lanes)> {
    let c = eval(cond, st, lanes)?;
    let mut truth = vec![false; st.z];
    for l in st.running(lanes).iter() {
        match lane::truthy(&c.lane_value(l)) {
            Ok(b) => truth[l] = b,
            Err(err) => st.fail(l, err.at(cond.span)),
        }
    }
    Ok(st.running(lanes).split(|l| truth[l]))
}

pub(crate) fn eval_all(es: &[Expr], st: &mut State, active: &Lanes) -> Result<Vec<Arc<Slot>>> {
    es.iter().map(|e| eval(e, st, active)).collect()
}

pub(crate) fn shared(v: Value) -> Arc<Slot> {
    Arc::new(Slot::shared(v))
}

/// The placeholder result of an operation that failed on every lane.
pub(crate) fn filler() -> Arc<Slot> {
    shared(Value::Int(0))
}

/// Record `err` for every running active lane.
pub(crate) fn fail_all(st: &mut State, active: &Lanes, err: RuntimeError) {
    for l in active.iter() {
        st.fail(l, err.clone());
    }
}

/// Apply `f` (the interpreter's rule) to each running active lane's
/// operand values; once for all when every operand is shared. Errors get
/// `span` unless they have one.
pub(crate) fn per_lane(
    st: &mut State,
    active: &Lanes,
    span: Span,
    args: &[&Slot],
    mut f: impl FnMut(&[Value]) -> std::result::Result<Value, RuntimeError>,
) -> Slot {
    if args.iter().all(|a| a.is_shared()) {
        let vals: Vec<Value> = args.iter().map(|a| a.lane_value(0)).collect();
        return match f(&vals) {
            Ok(v) => Slot::shared(v),
            Err(err) => {
                fail_all(st, active, err.at(span));
                Slot::shared(Value::Int(0))
            }
        };
    }
    let mut out: Vec<Option<Value>> = vec![None; st.z];
    let mut vals = Vec::with_capacity(args.len());
    for l in active.iter() {
        if !st.is_running(l) {
            continue;
        }
        vals.clear();
        vals.extend(args.iter().map(|a| a.lane_value(l)));
        match f(&vals) {
            Ok(v) => out[l] = Some(v),
            Err(err) => st.fail(l, err.at(span)),
        }
    }
    from_partial(out)
}

/// A slot from the values of some lanes (the others get a copy of one of
/// them, so that shapes agree and the slot stays dense).
pub(crate) fn from_partial(out: Vec<Option<Value>>) -> Slot {
    let Some(fill) = out.iter().flatten().next().cloned() else {
        return Slot::shared(Value::Int(0));
    };
    Slot::from_lane_values(
        out.into_iter()
            .map(|v| v.unwrap_or_else(|| fill.clone()))
            .collect(),
    )
}

/// `_rng` draws from each running active lane's stream.
fn draw(
    p: language::mir::Prim,
    args: &[Arc<Slot>],
    st: &mut State,
    active: &Lanes,
    span: Span,
) -> Slot {
    let refs: Vec<&Slot> = args.iter().map(|a| &**a).collect();
    if let Some(slot) = draws::draw(p, &refs, st, active, span) {
        return slot;
    }
    let mut out: Vec<Option<Value>> = vec![None; st.z];
    for l in active.iter() {
        if !st.is_running(l) {
            continue;
        }
        let vals: Vec<Value> = args.iter().map(|a| a.lane_value(l)).collect();
        let result = match st.rng_mut(l) {
            Some(rng) => lane::draw_rng(p, rng, &vals),
            None => Err(RuntimeError::fatal(format!(
                "`{}` draws random numbers outside generated quantities",
                p.name()
            ))),
        };
        match result {
            Ok(v) => out[l] = Some(v),
            Err(err) => st.fail(l, err.at(span)),
        }
    }
    from_partial(out)
}

fn pop(st: &mut State, active: &Lanes, stack: usize, span: Span) -> Slot {
    let mut out: Vec<Option<Value>> = vec![None; st.z];
    for l in active.iter() {
        if !st.is_running(l) {
            continue;
        }
        let popped = st.stacks.get_mut(stack).and_then(|s| s[l].pop());
        match popped {
            Some(v) => out[l] = Some(v),
            None => st.fail(
                l,
                RuntimeError::fatal(format!("gradient program popped the empty stack {stack}"))
                    .at(span),
            ),
        }
    }
    // The reverse sweep pops its loop bounds: an int every lane agrees on
    // stays shared, so the loop's counter, tests and indexes are computed
    // once rather than per lane (a dense counter also made every indexed
    // access check that the lanes agree).
    let mut popped = out.iter().flatten();
    if let Some(Value::Int(first)) = popped.next()
        && popped.all(|v| matches!(v, Value::Int(i) if i == first))
    {
        return Slot::shared(Value::Int(*first));
    }
    from_partial(out)
}

fn zeros_like(inner: &Slot, st: &mut State, active: &Lanes, span: Span) -> Slot {
    match inner {
        Slot::Shared(v) => Slot::shared(lane::zeros_like(v)),
        // Every lane has the same shape: the zeros are shared.
        Slot::Real(d) => Slot::shared(lane::zeros_like(&crate::lanes::build_real(
            &d.shape,
            &mut std::iter::repeat(0.0),
        ))),
        Slot::Int(d) => Slot::shared(lane::zeros_like(&crate::lanes::build_int(
            &d.shape,
            &mut std::iter::repeat(0),
        ))),
        Slot::Tuple(items) => Slot::tuple(
            items
                .iter()
                .map(|i| Arc::new(zeros_like(i, st, active, span)))
                .collect(),
        ),
        Slot::PerLane(_) => per_lane(st, active, span, &[inner], |v| Ok(lane::zeros_like(&v[0]))),
    }
}

/// `(a, b, ...)`: each component promoted to its declared type (as the
/// interpreter promotes the tuple), kept as its own slot.
fn tuple_literal(items: Vec<Arc<Slot>>, e: &Expr, st: &mut State, active: &Lanes) -> Arc<Slot> {
    let types = match &e.ty {
        language::types::Type::Tuple(types) if types.len() == items.len() => types,
        _ => {
            let refs: Vec<&Slot> = items.iter().map(|a| &**a).collect();
            return Arc::new(per_lane(st, active, e.span, &refs, |vals| {
                Ok(lane::promote(Value::Tuple(vals.to_vec()), &e.ty))
            }));
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for (item, ty) in items.into_iter().zip(types) {
        out.push(match kernels::promote(&item, ty) {
            Some(p) => p,
            None => Arc::new(per_lane(st, active, e.span, &[&item], |v| {
                Ok(lane::promote(v[0].clone(), ty))
            })),
        });
    }
    Arc::new(Slot::tuple(out))
}

/// `c ? t : f`, each branch evaluated only on the lanes that take it.
fn cond(
    e: &Expr,
    c: &Expr,
    t: &Expr,
    f: &Expr,
    st: &mut State,
    active: &Lanes,
) -> Result<Arc<Slot>> {
    let c = eval(c, st, active)?;
    let mut truth = vec![false; st.z];
    let span = e.span;
    // A condition shared by every lane (data, a hoisted check's flag) is
    // decided once rather than per lane through a copy of its value; an
    // error is still reported per lane, below.
    let shared = match &*c {
        Slot::Shared(v) => lane::truthy(v).ok(),
        _ => None,
    };
    for l in active.iter() {
        if !st.is_running(l) {
            continue;
        }
        // A dense scalar condition (NUTS's `take_final ? … : …`) read in
        // place: the interpreter's truth (non-zero) without a value per lane.
        let decided = match shared {
            Some(b) => Ok(b),
            None => c
                .scalar_truth(l)
                .map_or_else(|| lane::truthy(&c.lane_value(l)), Ok),
        };
        match decided {
            Ok(b) => truth[l] = b,
            Err(err) => st.fail(l, err.at(span)),
        }
    }
    let live = st.running(active);
    let (yes, no) = live.split(|l| truth[l]);
    let promote = |s: Arc<Slot>, st: &mut State, lanes: &Lanes| -> Arc<Slot> {
        match kernels::promote(&s, &e.ty) {
            Some(p) => p,
            None => Arc::new(per_lane(st, lanes, span, &[&s], |v| {
                Ok(lane::promote(v[0].clone(), &e.ty))
            })),
        }
    };
    if no.is_empty() {
        let v = eval(t, st, &yes)?;
        return Ok(promote(v, st, &yes));
    }
    if yes.is_empty() {
        let v = eval(f, st, &no)?;
        return Ok(promote(v, st, &no));
    }
    let tv = eval(t, st, &yes)?;
    let tv = promote(tv, st, &yes);
    let fv = eval(f, st, &no)?;
    let fv = promote(fv, st, &no);
    // The side of more lanes is the result, the other's lanes copied in.
    let (mut out, other, other_lanes) = if yes.len() >= no.len() {
        (tv, fv, no)
    } else {
        (fv, tv, yes)
    };
    Slot::merge_lanes(&mut out, other, &other_lanes);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use language::mir::StackId;
    use language::types::{AdLevel, Type};

    /// Pop stack 0 of a 4-lane state whose lanes hold `tops` (one value
    /// each) on `lanes`.
    fn pop_tops(tops: [Value; 4], lanes: &[usize]) -> (Slot, Vec<Value>) {
        let (mir, diags) = language::compile_model("parameters { real mu; }", "pop");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        let mut st = State::new(&mir, &[], 4);
        st.stacks = vec![tops.iter().map(|v| vec![v.clone()]).collect()];
        let e = Expr {
            kind: ExprKind::Pop(StackId(0)),
            ty: Type::Int,
            ad: AdLevel::DataOnly,
            span: Span::default(),
        };
        let active = Lanes::from_indices(4, lanes.to_vec());
        let slot = Arc::unwrap_or_clone(eval(&e, &mut st, &active).unwrap());
        let got = lanes.iter().map(|&l| slot.lane_value(l)).collect();
        assert!(lanes.iter().all(|&l| st.stacks[0][l].is_empty()));
        (slot, got)
    }

    #[test]
    fn popped_ints_every_lane_agrees_on_are_shared() {
        let (slot, got) = pop_tops([3, 3, 3, 3].map(Value::Int), &[0, 1, 2, 3]);
        assert_eq!(slot, Slot::shared(Value::Int(3)));
        assert_eq!(got, vec![Value::Int(3); 4]);
        // Only the popping lanes need agree.
        let (slot, got) = pop_tops([3, 9, 3, 9].map(Value::Int), &[1, 3]);
        assert_eq!(slot, Slot::shared(Value::Int(9)));
        assert_eq!(got, vec![Value::Int(9); 2]);
    }

    #[test]
    fn popped_values_that_differ_or_are_reals_stay_per_lane() {
        let (slot, got) = pop_tops([3, 3, 4, 3].map(Value::Int), &[0, 1, 2, 3]);
        assert!(!slot.is_shared());
        assert_eq!(got, [3, 3, 4, 3].map(Value::Int).to_vec());
        let (slot, got) = pop_tops([0.5; 4].map(Value::Real), &[0, 1, 2, 3]);
        assert!(!slot.is_shared());
        assert_eq!(got, vec![Value::Real(0.5); 4]);
    }
}
