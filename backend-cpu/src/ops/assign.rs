//! Assignment, tuple unpacking and accumulation (`+=` of the reverse
//! sweep) for a batch.

use super::{get_var, set_var};
use crate::eval::index::{LaneIx, index_slots, ixs_from_values, positions, shared_ixs};
use crate::eval::{Result, eval, eval_indexes, fail_all};
use crate::lanes::{Dense, Lanes, Slot, State, dense_shape};
use language::data::Shape;
use language::mir::{Expr, LValue, LValueStep, Stmt};
use language::value::Value;
use runtime::RuntimeError;
use runtime::lane::{self, Ix, Step};
use std::sync::Arc;

/// An lvalue's path with its indexes evaluated.
enum LaneStep {
    Index(Vec<LaneIx>),
    Proj(usize),
}

fn eval_path(lhs: &LValue, st: &mut State, active: &Lanes) -> Result<Vec<LaneStep>> {
    lhs.path
        .iter()
        .map(|step| {
            Ok(match step {
                LValueStep::Index(idx) => LaneStep::Index(eval_indexes(idx, st, active)?),
                LValueStep::TupleProj(k) => LaneStep::Proj(*k),
            })
        })
        .collect()
}

/// The interpreter's steps for lane `l`.
fn lane_steps(path: &[LaneStep], l: usize) -> std::result::Result<Vec<Step>, RuntimeError> {
    path.iter()
        .map(|s| {
            Ok(match s {
                LaneStep::Index(idx) => {
                    let vals: Vec<Value> =
                        index_slots(idx).iter().map(|s| s.lane_value(l)).collect();
                    Step::Index(ixs_from_values(idx, &vals)?)
                }
                LaneStep::Proj(k) => Step::Proj(*k),
            })
        })
        .collect()
}

/// `lhs = value` on the active lanes.
pub(crate) fn assign(
    s: &Stmt,
    lhs: &LValue,
    value: &Arc<Slot>,
    st: &mut State,
    active: &Lanes,
) -> Result<()> {
    let path = eval_path(lhs, st, active)?;
    let active = &st.running(active);
    let Some(current) = get_var(st, lhs.var, active, "assigned before declared") else {
        return Ok(());
    };
    // Whole variable, same dense shape and kind: the value itself (also
    // a shared one, e.g. an adjoint reset to zeros).
    if path.is_empty() && same_layout(&current, value) {
        // Without this handle, a variable nobody else holds is written in
        // place (the merge would otherwise copy it whole first).
        drop(current);
        set_var(st, lhs.var, value.clone(), active);
        return Ok(());
    }
    let current = match path.as_slice() {
        [LaneStep::Index(idx)] => match shared_ixs(idx, active) {
            Some(Ok(ixs)) => match write_positions(lhs, current, &ixs, value, st, active) {
                Ok(()) => return Ok(()),
                Err(current) => current,
            },
            _ => current,
        },
        _ => current,
    };
    let name = st.name(lhs.var).to_string();
    assign_per_lane(s, lhs, &name, &current, &path, st, active, |l| {
        value.lane_value(l)
    });
    Ok(())
}

/// Lane-by-lane assignment through the interpreter's `assign`.
#[allow(clippy::too_many_arguments)]
fn assign_per_lane(
    s: &Stmt,
    lhs: &LValue,
    name: &str,
    current: &Slot,
    path: &[LaneStep],
    st: &mut State,
    active: &Lanes,
    value: impl Fn(usize) -> Value,
) {
    let mut out: Vec<Option<Value>> = vec![None; st.z];
    for l in active.iter() {
        if !st.is_running(l) {
            continue;
        }
        let mut v = current.lane_value(l);
        let result =
            lane_steps(path, l).and_then(|steps| lane::assign(name, &mut v, &steps, value(l)));
        match result {
            Ok(()) => out[l] = Some(v),
            Err(err) => st.fail(l, err.at(s.span)),
        }
    }
    let written = st.running(active);
    let new = Arc::new(crate::eval::from_partial(out));
    set_var(st, lhs.var, new, &written);
}

/// The element shape and kind of a dense or dense-able shared slot.
/// Both have one dense shape and kind, or are tuples whose components
/// pairwise do (a tuple variable given a tuple value, e.g. NUTS's leapfrog
/// result): the value is written by a masked merge, component by
/// component, not lane by lane through the interpreter.
fn same_layout(a: &Slot, b: &Slot) -> bool {
    match (a, b) {
        (Slot::Tuple(xs), Slot::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_layout(x, y))
        }
        _ => matches!((slot_shape(a), slot_shape(b)), (Some(x), Some(y)) if x == y),
    }
}

fn slot_shape(s: &Slot) -> Option<(Shape, bool)> {
    match s {
        Slot::Real(d) => Some((d.shape.clone(), false)),
        Slot::Int(d) => Some((d.shape.clone(), true)),
        Slot::Shared(v) => dense_shape(v),
        Slot::Tuple(_) | Slot::PerLane(_) => None,
    }
}

/// `x[ixs] = value` with shared indexes into a real or int dense variable:
/// write the selected element rows. `current` (the variable's slot) is
/// handed back when not of that form (nothing done); otherwise it is
/// dropped before the write, so that a variable nobody else holds is
/// written in place instead of copied whole. (Lane by lane, an element
/// write would rebuild the whole variable: O(size) per write, O(N²) for a
/// loop filling an array of N, as a Viterbi back-pointer table does.)
fn write_positions(
    lhs: &LValue,
    current: Arc<Slot>,
    ixs: &[Ix],
    value: &Slot,
    st: &mut State,
    active: &Lanes,
) -> std::result::Result<(), Arc<Slot>> {
    let Some((shape, is_int)) = slot_shape(&current) else {
        return Err(current);
    };
    let Ok(Some((pos, sub))) = positions(&shape, ixs, is_int) else {
        return Err(current);
    };
    if is_int {
        write_dense::<i64>(lhs, current, &pos, &sub, value, st, active)
    } else {
        write_dense::<f64>(lhs, current, &pos, &sub, value, st, active)
    }
}

/// The numbers of a dense slot written in place: reals or ints.
trait Element: Copy + 'static {
    /// The shape of one number.
    const SCALAR: Shape;
    fn dense(slot: &Slot) -> Option<&Dense<Self>>;
    fn dense_mut(slot: &mut Slot) -> Option<&mut Dense<Self>>;
    fn slot(dense: Dense<Self>) -> Slot;
    fn take(slot: Slot) -> Option<Dense<Self>>;
    /// A shared scalar value as this kind (an int is a real too).
    fn scalar(value: &Value) -> Option<Self>;
}

impl Element for f64 {
    const SCALAR: Shape = Shape::Real;
    fn dense(slot: &Slot) -> Option<&Dense<f64>> {
        match slot {
            Slot::Real(d) => Some(d),
            _ => None,
        }
    }
    fn dense_mut(slot: &mut Slot) -> Option<&mut Dense<f64>> {
        match slot {
            Slot::Real(d) => Some(d),
            _ => None,
        }
    }
    fn slot(dense: Dense<f64>) -> Slot {
        Slot::Real(dense)
    }
    fn take(slot: Slot) -> Option<Dense<f64>> {
        match slot {
            Slot::Real(d) => Some(d),
            _ => None,
        }
    }
    fn scalar(value: &Value) -> Option<f64> {
        match *value {
            Value::Real(x) => Some(x),
            Value::Int(i) => Some(i as f64),
            _ => None,
        }
    }
}

impl Element for i64 {
    const SCALAR: Shape = Shape::Int;
    fn dense(slot: &Slot) -> Option<&Dense<i64>> {
        match slot {
            Slot::Int(d) => Some(d),
            _ => None,
        }
    }
    fn dense_mut(slot: &mut Slot) -> Option<&mut Dense<i64>> {
        match slot {
            Slot::Int(d) => Some(d),
            _ => None,
        }
    }
    fn slot(dense: Dense<i64>) -> Slot {
        Slot::Int(dense)
    }
    fn take(slot: Slot) -> Option<Dense<i64>> {
        match slot {
            Slot::Int(d) => Some(d),
            _ => None,
        }
    }
    fn scalar(value: &Value) -> Option<i64> {
        match *value {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }
}

/// [`write_positions`] for a variable of `T`s: positions `pos` (of shape
/// `sub`) take `value`, one shared number or a dense slot of that shape.
fn write_dense<T: Element>(
    lhs: &LValue,
    current: Arc<Slot>,
    pos: &[usize],
    sub: &Shape,
    value: &Slot,
    st: &mut State,
    active: &Lanes,
) -> std::result::Result<(), Arc<Slot>> {
    let shared = match value {
        Slot::Shared(v) if *sub == T::SCALAR => T::scalar(v),
        _ => None,
    };
    let lanes = T::dense(value).filter(|d| &d.shape == sub);
    if shared.is_none() && lanes.is_none() {
        return Err(current);
    }
    let z = st.z;
    let mut spread = match T::dense(&current) {
        Some(_) => None,
        None => match T::take(current.broadcast(z)) {
            Some(d) => Some(d),
            None => return Err(current),
        },
    };
    drop(current);
    let slot = st.vars[lhs.var.0 as usize].as_mut().expect("checked above");
    let target = match &mut spread {
        Some(d) => d,
        None => T::dense_mut(Arc::make_mut(slot)).expect("a dense slot of T (checked above)"),
    };
    for (k, &p) in pos.iter().enumerate() {
        for l in active.iter() {
            target.data[p * z + l] = match (lanes, shared) {
                (Some(d), _) => d.data[k * z + l],
                (None, Some(x)) => x,
                (None, None) => unreachable!("checked above"),
            };
        }
    }
    if let Some(d) = spread {
        *slot = Arc::new(T::slot(d));
    }
    Ok(())
}

/// `(a, b, ...) = rhs`.
pub(crate) fn unpack(
    s: &Stmt,
    lhs: &[LValue],
    rhs: &Expr,
    st: &mut State,
    active: &Lanes,
) -> Result<()> {
    let value = eval(rhs, st, active)?;
    // A dense tuple: each component is assigned like `lhs_k = rhs.k`.
    if let Slot::Tuple(items) = &*value
        && items.len() == lhs.len()
    {
        for (lv, item) in lhs.iter().zip(items) {
            let active = &st.running(active);
            if active.is_empty() {
                break;
            }
            assign(s, lv, item, st, active)?;
        }
        return Ok(());
    }
    for l in st.running(active).iter() {
        match value.lane_value(l) {
            Value::Tuple(items) if items.len() == lhs.len() => {}
            other => st.fail(
                l,
                RuntimeError::fatal(format!(
                    "tuple unpacking: unexpected operand {}",
                    lane::describe(&other)
                ))
                .at(s.span),
            ),
        }
    }
    for (k, lv) in lhs.iter().enumerate() {
        let active = &st.running(active);
        let path = eval_path(lv, st, active)?;
        let active = &st.running(active);
        let Some(current) = get_var(st, lv.var, active, "assigned before declared") else {
            return Ok(());
        };
        let name = st.name(lv.var).to_string();
        assign_per_lane(s, lv, &name, &current, &path, st, active, |l| {
            match value.lane_value(l) {
                Value::Tuple(mut items) => items.swap_remove(k),
                other => other,
            }
        });
    }
    Ok(())
}

/// `lhs += rhs` (the reverse sweep's accumulation).
pub(crate) fn add_assign(
    s: &Stmt,
    lhs: &LValue,
    rhs: &Expr,
    st: &mut State,
    active: &Lanes,
) -> Result<()> {
    let r = eval(rhs, st, active)?;
    let idx = match lhs.path.as_slice() {
        [] => None,
        [LValueStep::Index(idx)] => Some(eval_indexes(idx, st, active)?),
        _ => return add_assign_path(s, lhs, &r, st, active),
    };
    let active = &st.running(active);
    let Some(current) = get_var(st, lhs.var, active, "assigned before declared") else {
        return Ok(());
    };
    // Shared += shared on every lane: once.
    if idx.is_none() && current.is_shared() && r.is_shared() && active.is_full() {
        let mut v = current.lane_value(0);
        match lane::add_assign(&mut v, None, &r.lane_value(0)) {
            Ok(()) => st.vars[lhs.var.0 as usize] = Some(Arc::new(Slot::shared(v))),
            Err(err) => fail_all(st, active, err.at(s.span)),
        }
        return Ok(());
    }
    // Shared (e.g. zero) += a temporary of the same shape on every lane:
    // add into the temporary's buffer (x + y is commutative, bit for bit).
    let mut r = r;
    if idx.is_none()
        && active.is_full()
        && let Slot::Shared(cur) = &*current
        && let Some((shape, false)) = dense_shape(cur)
        && let Some(Slot::Real(d)) = Arc::get_mut(&mut r)
        && d.shape == shape
    {
        let z = d.z;
        let cur = lane::flat_reals(cur);
        for (e, c) in cur.iter().enumerate() {
            d.element_mut(e).iter_mut().for_each(|y| *y += c);
        }
        debug_assert_eq!(z, st.z);
        st.vars[lhs.var.0 as usize] = Some(r);
        return Ok(());
    }
    let positions = match &idx {
        None => slot_shape(&current)
            .filter(|(_, is_int)| !is_int)
            .map(|(shape, _)| (0..shape.num_reals()).collect::<Vec<_>>()),
        Some(idx) => match shared_ixs(idx, active) {
            Some(Ok(ixs)) if !ixs.iter().any(|i| matches!(i, Ix::Multi(_))) => {
                match slot_shape(&current) {
                    Some((shape, false)) => positions(&shape, &ixs, false)
                        .ok()
                        .flatten()
                        .map(|(pos, _)| pos),
                    _ => None,
                }
            }
            _ => None,
        },
    };
    let current = match positions {
        Some(pos) => match add_at_positions(lhs, current, &pos, &r, st, active) {
            Ok(()) => return Ok(()),
            Err(current) => current,
        },
        None => current,
    };
    // Lane by lane through the interpreter's accumulation.
    let mut out: Vec<Option<Value>> = vec![None; st.z];
    for l in active.iter() {
        let mut v = current.lane_value(l);
        let ixs = match &idx {
            None => None,
            Some(idx) => {
                let vals: Vec<Value> = index_slots(idx).iter().map(|s| s.lane_value(l)).collect();
                match ixs_from_values(idx, &vals) {
                    Ok(ixs) => Some(ixs),
                    Err(err) => {
                        st.fail(l, err.at(s.span));
                        continue;
                    }
                }
            }
        };
        match lane::add_assign(&mut v, ixs.as_deref(), &r.lane_value(l)) {
            Ok(()) => out[l] = Some(v),
            Err(err) => st.fail(l, err.at(s.span)),
        }
    }
    let written = st.running(active);
    set_var(
        st,
        lhs.var,
        Arc::new(crate::eval::from_partial(out)),
        &written,
    );
    Ok(())
}

/// `lhs += r` along a path through tuple components (`x.2 += r`,
/// `x[i].1 += r`), lane by lane through the interpreter's accumulation.
fn add_assign_path(s: &Stmt, lhs: &LValue, r: &Slot, st: &mut State, active: &Lanes) -> Result<()> {
    let path = eval_path(lhs, st, active)?;
    let active = &st.running(active);
    let Some(current) = get_var(st, lhs.var, active, "assigned before declared") else {
        return Ok(());
    };
    let mut out: Vec<Option<Value>> = vec![None; st.z];
    for l in active.iter() {
        let mut v = current.lane_value(l);
        let result = lane_steps(&path, l)
            .and_then(|steps| lane::add_at_path(&mut v, &steps, &r.lane_value(l)));
        match result {
            Ok(()) => out[l] = Some(v),
            Err(err) => st.fail(l, err.at(s.span)),
        }
    }
    let written = st.running(active);
    set_var(
        st,
        lhs.var,
        Arc::new(crate::eval::from_partial(out)),
        &written,
    );
    Ok(())
}

/// `x[pos] += r` in place on a real dense (or dense-able shared) variable,
/// `r` a real scalar (added to every position, or the one) or holding one
/// element per position. `current` (the variable's slot) is handed back
/// when not of that form (nothing done); otherwise it is dropped before
/// the write, so that a variable nobody else holds is updated in place
/// instead of copied whole.
fn add_at_positions(
    lhs: &LValue,
    current: Arc<Slot>,
    pos: &[usize],
    r: &Slot,
    st: &mut State,
    active: &Lanes,
) -> std::result::Result<(), Arc<Slot>> {
    let z = st.z;
    // The addend of position k for lane l.
    enum Addend<'a> {
        Scalar(f64),
        Elems(Vec<f64>),
        Lanes(&'a [f64], usize),
    }
    let addend = match r {
        Slot::Shared(v) => match &**v {
            Value::Real(x) => Addend::Scalar(*x),
            Value::Int(i) => Addend::Scalar(*i as f64),
            other if dense_shape(other).is_some() => Addend::Elems(lane::flat_reals(other)),
            _ => return Err(current),
        },
        Slot::Real(d) => Addend::Lanes(&d.data, d.elements()),
        _ => return Err(current),
    };
    let count = match &addend {
        Addend::Scalar(_) => 1,
        Addend::Elems(v) => v.len(),
        Addend::Lanes(_, n) => *n,
    };
    // The interpreter: one element broadcasts unless the target is one
    // element too; otherwise the counts must agree.
    if !(count == pos.len() || count == 1) {
        return Err(current);
    }
    let broadcast = count == 1;
    let mut fresh = match &*current {
        Slot::Real(_) => None,
        other => match other.broadcast(z) {
            Slot::Real(d) => Some(d),
            _ => return Err(current),
        },
    };
    drop(current);
    let slot = st.vars[lhs.var.0 as usize].as_mut().expect("checked above");
    let target: &mut Dense<f64> = match &mut fresh {
        Some(d) => d,
        None => match Arc::make_mut(slot) {
            Slot::Real(d) => d,
            _ => unreachable!("a real dense slot (checked above)"),
        },
    };
    let full = active.is_full();
    for (k, &p) in pos.iter().enumerate() {
        let k = if broadcast { 0 } else { k };
        let row = &mut target.data[p * z..(p + 1) * z];
        match &addend {
            Addend::Scalar(x) => add_row(row, active, full, |_| *x),
            Addend::Elems(v) => add_row(row, active, full, |_| v[k]),
            Addend::Lanes(d, n) => {
                let src = if *n == 1 {
                    &d[..z]
                } else {
                    &d[k * z..(k + 1) * z]
                };
                if full {
                    row.iter_mut().zip(src).for_each(|(a, b)| *a += b);
                } else {
                    add_row(row, active, false, |l| src[l]);
                }
            }
        }
    }
    if let Some(d) = fresh {
        *slot = Arc::new(Slot::Real(d));
    }
    Ok(())
}

fn add_row(row: &mut [f64], active: &Lanes, full: bool, x: impl Fn(usize) -> f64) {
    if full {
        row.iter_mut().enumerate().for_each(|(l, a)| *a += x(l));
    } else {
        for l in active.iter() {
            row[l] += x(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::exec_op;
    use language::mir::StmtKind;

    /// `v[2] = 5` from a compiled program, with the program.
    fn indexed_write() -> (language::mir::Program, Stmt) {
        let src = "parameters { real mu; } model { vector[3] v = rep_vector(mu, 3); v[2] = 5; }";
        let (mir, diags) = language::compile_model(src, "write");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        fn find(stmts: &[Stmt]) -> Option<Stmt> {
            stmts.iter().find_map(|s| match &s.kind {
                StmtKind::Assign { lhs, .. } if !lhs.path.is_empty() => Some(s.clone()),
                StmtKind::Block(inner) => find(inner),
                _ => None,
            })
        }
        let s = find(&mir.model).expect("an indexed assignment");
        (mir, s)
    }

    fn lhs_var(s: &Stmt) -> usize {
        match &s.kind {
            StmtKind::Assign { lhs, .. } | StmtKind::AddAssign { lhs, .. } => lhs.var.0 as usize,
            _ => unreachable!(),
        }
    }

    /// `v` over 4 lanes: element e of lane l is 10 e + l.
    fn dense_v() -> Arc<Slot> {
        let data = (0..3)
            .flat_map(|e| (0..4).map(move |l| (10 * e + l) as f64))
            .collect();
        Arc::new(Slot::Real(Dense::new(Shape::Vector(3), 4, data)))
    }

    fn data_of(slot: &Slot) -> &[f64] {
        match slot {
            Slot::Real(d) => &d.data,
            other => panic!("not dense: {other:?}"),
        }
    }

    /// Run `s` on `lanes` of `v` = [`dense_v`]; (v's buffer before, v after).
    fn run(
        s: &Stmt,
        mir: &language::mir::Program,
        lanes: &[usize],
        alias: bool,
    ) -> (bool, Vec<f64>, Option<Vec<f64>>) {
        let mut st = State::new(mir, &[], 4);
        let v = lhs_var(s);
        st.vars[v] = Some(dense_v());
        let before = data_of(st.vars[v].as_ref().unwrap()).as_ptr();
        let held = alias.then(|| st.vars[v].clone().unwrap());
        exec_op(s, &mut st, &Lanes::from_indices(4, lanes.to_vec())).unwrap();
        let after = st.vars[v].as_ref().unwrap();
        let in_place = data_of(after).as_ptr() == before;
        (
            in_place,
            data_of(after).to_vec(),
            held.map(|h| data_of(&h).to_vec()),
        )
    }

    /// Element 1 (`v[2]`) of the written lanes is `x(old)`; everything
    /// else is as in [`dense_v`].
    fn expected(lanes: &[usize], x: impl Fn(f64) -> f64) -> Vec<f64> {
        let mut want: Vec<f64> = data_of(&dense_v()).to_vec();
        for &l in lanes {
            want[4 + l] = x(want[4 + l]);
        }
        want
    }

    #[test]
    fn indexed_write_into_an_unshared_variable_is_in_place() {
        let (mir, s) = indexed_write();
        for lanes in [vec![0, 1, 2, 3], vec![1, 3]] {
            let (in_place, got, _) = run(&s, &mir, &lanes, false);
            assert!(in_place, "lanes {lanes:?}: `v[2] = 5` copied v");
            assert_eq!(got, expected(&lanes, |_| 5.0), "lanes {lanes:?}");
        }
    }

    #[test]
    fn indexed_write_into_a_shared_variable_leaves_the_other_holder_alone() {
        let (mir, s) = indexed_write();
        let (in_place, got, held) = run(&s, &mir, &[0, 2], true);
        assert!(!in_place);
        assert_eq!(got, expected(&[0, 2], |_| 5.0));
        assert_eq!(held.unwrap(), data_of(&dense_v()));
    }

    #[test]
    fn indexed_accumulation_into_an_unshared_variable_is_in_place() {
        let (mir, s) = indexed_write();
        let StmtKind::Assign { lhs, rhs } = s.kind.clone() else {
            unreachable!()
        };
        let acc = Stmt {
            kind: StmtKind::AddAssign { lhs, rhs },
            span: s.span,
        };
        for lanes in [vec![0, 1, 2, 3], vec![2]] {
            let (in_place, got, _) = run(&acc, &mir, &lanes, false);
            assert!(in_place, "lanes {lanes:?}: `v[2] += 5` copied v");
            assert_eq!(got, expected(&lanes, |x| x + 5.0), "lanes {lanes:?}");
        }
        let (in_place, got, held) = run(&acc, &mir, &[1, 2], true);
        assert!(!in_place);
        assert_eq!(got, expected(&[1, 2], |x| x + 5.0));
        assert_eq!(held.unwrap(), data_of(&dense_v()));
    }

    /// `t = u` of two `tuple(real, vector[3])` variables, dense over 4
    /// lanes, for lanes 1 and 3: merged component by component into t's
    /// own buffers (not lane by lane through the interpreter's values).
    #[test]
    fn a_tuple_value_is_merged_into_a_tuple_variable_in_place() {
        let src = "parameters { real mu; } model {
            tuple(real, vector[3]) t = (mu, rep_vector(mu, 3));
            tuple(real, vector[3]) u = (2 * mu, rep_vector(1, 3));
            t = u;
        }";
        let (mir, diags) = language::compile_model(src, "tuples");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        fn find(stmts: &[Stmt]) -> Option<Stmt> {
            stmts.iter().find_map(|s| match &s.kind {
                StmtKind::Assign { lhs, .. } if lhs.path.is_empty() => Some(s.clone()),
                StmtKind::Block(inner) => find(inner),
                _ => None,
            })
        }
        let s = find(&mir.model).expect("`t = u`");
        let StmtKind::Assign { rhs, .. } = &s.kind else {
            unreachable!()
        };
        let language::mir::ExprKind::Var(u) = rhs.kind else {
            panic!("{rhs:?}")
        };
        let tuple = |offset: f64| {
            let scalar = Dense::new(Shape::Real, 4, (0..4).map(|l| offset + l as f64).collect());
            let vector = Dense::new(
                Shape::Vector(3),
                4,
                (0..12).map(|i| offset + 10.0 + i as f64).collect(),
            );
            Arc::new(Slot::Tuple(vec![
                Arc::new(Slot::Real(scalar)),
                Arc::new(Slot::Real(vector)),
            ]))
        };
        let mut st = State::new(&mir, &[], 4);
        let t = lhs_var(&s);
        st.vars[t] = Some(tuple(0.0));
        st.vars[u.0 as usize] = Some(tuple(100.0));
        let buffers = |st: &State| -> Vec<*const f64> {
            match &**st.vars[t].as_ref().unwrap() {
                Slot::Tuple(items) => items.iter().map(|i| data_of(i).as_ptr()).collect(),
                other => panic!("not a dense tuple: {other:?}"),
            }
        };
        let before = buffers(&st);
        exec_op(&s, &mut st, &Lanes::from_indices(4, vec![1, 3])).unwrap();
        assert_eq!(buffers(&st), before, "`t = u` copied t");
        let Slot::Tuple(items) = &**st.vars[t].as_ref().unwrap() else {
            unreachable!()
        };
        assert_eq!(data_of(&items[0]), &[0.0, 101.0, 2.0, 103.0]);
        let v = data_of(&items[1]);
        for e in 0..3 {
            for l in 0..4 {
                let old = 10.0 + (4 * e + l) as f64;
                let want = if l % 2 == 1 { 100.0 + old } else { old };
                assert_eq!(v[4 * e + l], want, "element {e} lane {l}");
            }
        }
    }
}
