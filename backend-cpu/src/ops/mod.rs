//! Batched execution of straight-line MIR statements over the active
//! lanes of a [`State`].
//!
//! # Contract
//! [`exec_op`] runs one statement for the active lanes that are still
//! running; for each of them the effect (variables, target, gradient,
//! stacks, random stream, printed output, error) is what the scalar
//! interpreter's `Machine` has after running that statement for that lane
//! alone. Writes are masked: lanes outside `active` keep their values. A
//! lane that fails (a `reject`, a domain error, an index out of range, …)
//! is marked in [`State::status`] and must not run further statements;
//! [`State::running`] gives the lanes to go on with. Control flow and
//! user-function calls are not straight-line ops: they belong to the
//! executor (the CFG's terminators) and are refused here.
//!
//! Executors may instead run a block on a gathered sub-batch
//! ([`State::gather`] / [`State::scatter`]) and pass all its lanes.

mod assign;
mod params;
pub mod product_then_add;

use crate::eval::{BatchError, Result, eval, per_lane};
use crate::lanes::{Lanes, Slot, State};
use language::mir::{Expr, ExprKind, Printable, SizedType, Stmt, StmtKind, Transform, VarId};
use language::value::Value;
use runtime::{RuntimeError, lane};
use std::sync::Arc;

/// Run straight-line statement `s` for the running lanes of `active`.
pub fn exec_op(s: &Stmt, st: &mut State, active: &Lanes) -> Result<()> {
    let active = &st.running(active);
    if active.is_empty() {
        return Ok(());
    }
    match &s.kind {
        StmtKind::Decl { var, ty, init } => declare(s, *var, ty, init.as_ref(), st, active)?,
        StmtKind::Assign { lhs, rhs } => {
            let value = eval(rhs, st, active)?;
            assign::assign(s, lhs, &value, st, active)?;
        }
        StmtKind::Unpack { lhs, rhs } => assign::unpack(s, lhs, rhs, st, active)?,
        StmtKind::TargetAdd(e) => target_add(e, st, active, true)?,
        StmtKind::JacobianAdd(e) => {
            let jacobian = st.jacobian;
            target_add(e, st, active, jacobian)?
        }
        StmtKind::Let { var, value } => {
            let value = eval(value, st, active)?;
            set_var(st, *var, value, active);
        }
        StmtKind::CheckConstraint { var, transform } => {
            check_constraint(s, *var, transform, st, active)?
        }
        StmtKind::Effect(e) => {
            if matches!(e.kind, ExprKind::Call(..)) {
                return Err(BatchError::NotStraightLine("a user-function call"));
            }
            eval(e, st, active)?;
        }
        StmtKind::Print(items) => {
            let texts = printables(items, st, active)?;
            for (l, text) in texts {
                st.print(l, text);
            }
        }
        StmtKind::Reject(items) => {
            for (l, text) in printables(items, st, active)? {
                st.fail(l, RuntimeError::rejection(text).at(s.span));
            }
        }
        StmtKind::FatalError(items) => {
            for (l, text) in printables(items, st, active)? {
                st.fail(l, RuntimeError::fatal(text).at(s.span));
            }
        }
        StmtKind::AddAssign { lhs, rhs } => assign::add_assign(s, lhs, rhs, st, active)?,
        StmtKind::Push { stack, value } => {
            let value = eval(value, st, active)?;
            let k = stack.0 as usize;
            for l in st.running(active).iter() {
                let v = value.lane_value(l);
                match st.stacks.get_mut(k) {
                    Some(stack) => stack[l].push(v),
                    None => st.fail(
                        l,
                        RuntimeError::fatal(
                            "a gradient-program statement outside a gradient program",
                        )
                        .at(s.span),
                    ),
                }
            }
        }
        StmtKind::ReadParam {
            param,
            var,
            transform,
        } => params::read_param(s, *param, *var, transform, st, active)?,
        StmtKind::ParamAdjoint {
            param,
            var_adj,
            lp_adj,
            transform,
            arg_adjs,
            ..
        } => params::param_adjoint(
            s, *param, *var_adj, *lp_adj, transform, arg_adjs, st, active,
        )?,
        StmtKind::If { .. } => return Err(BatchError::NotStraightLine("`if`")),
        StmtKind::While { .. } => return Err(BatchError::NotStraightLine("`while`")),
        StmtKind::For { .. } | StmtKind::ForDown { .. } => {
            return Err(BatchError::NotStraightLine("`for`"));
        }
        StmtKind::Block(_) => return Err(BatchError::NotStraightLine("a block")),
        StmtKind::Break | StmtKind::Continue => {
            return Err(BatchError::NotStraightLine("`break`/`continue`"));
        }
        StmtKind::Return(_) => return Err(BatchError::NotStraightLine("`return`")),
    }
    Ok(())
}

/// Set `var` to `value` on the active lanes (the whole slot when every
/// lane is active, the variable is new or no other lane reads it). Executors use it to bind
/// call arguments, return values and loop variables.
pub fn set_var(st: &mut State, var: VarId, value: Arc<Slot>, active: &Lanes) {
    let keep_others = !active.is_full() && st.is_read_elsewhere(var);
    let slot = &mut st.vars[var.0 as usize];
    match slot {
        // `x = x` (e.g. an argument passed on unchanged): nothing to do.
        Some(old) if Arc::ptr_eq(old, &value) => {}
        // Only the active lanes are copied (or, into a fresh value, only
        // the others); neither value is cloned whole.
        Some(old) if keep_others => Slot::merge_lanes(old, value, active),
        _ => *slot = Some(value),
    }
}

/// The slot of `var`, or a fatal error for every active lane.
pub(crate) fn get_var(st: &mut State, var: VarId, active: &Lanes, what: &str) -> Option<Arc<Slot>> {
    match &st.vars[var.0 as usize] {
        Some(slot) => Some(slot.clone()),
        None => {
            let msg = format!("variable `{}` {what}", st.name(var));
            crate::eval::fail_all(st, active, RuntimeError::fatal(msg));
            None
        }
    }
}

fn declare(
    s: &Stmt,
    var: VarId,
    ty: &SizedType,
    init: Option<&Expr>,
    st: &mut State,
    active: &Lanes,
) -> Result<()> {
    let mut size_exprs = Vec::new();
    ty.for_each_size(&mut |n| size_exprs.push(n));
    let sizes = size_exprs
        .iter()
        .map(|e| eval(e, st, active))
        .collect::<Result<Vec<_>>>()?;
    let init = init.map(|e| eval(e, st, active)).transpose()?;
    let name = st.name(var).to_string();
    let lookup = |l: usize| {
        let sizes = &sizes;
        let size_exprs = &size_exprs;
        move |e: &Expr| -> std::result::Result<Value, RuntimeError> {
            match size_exprs.iter().position(|x| std::ptr::eq(*x, e)) {
                Some(k) => Ok(sizes[k].lane_value(l)),
                None => Err(RuntimeError::fatal("size expression not evaluated")),
            }
        }
    };
    let value = if sizes.iter().all(|s| s.is_shared()) {
        let shape = match lane::shape_of(&mut lookup(0), ty) {
            Ok(shape) => shape,
            Err(err) => {
                crate::eval::fail_all(st, active, err.at(s.span));
                return Ok(());
            }
        };
        match &init {
            // The same declared value for every lane, once.
            None => match lane::declared_value(&name, &shape, None) {
                Ok(v) => Arc::new(Slot::shared(v)),
                Err(err) => {
                    crate::eval::fail_all(st, active, err.at(s.span));
                    return Ok(());
                }
            },
            // Same shape and element kinds: the value as it is.
            Some(init) if conforms(init, &shape, &name) => init.clone(),
            Some(init) => Arc::new(per_lane(st, active, s.span, &[init], |v| {
                lane::declared_value(&name, &shape, Some(v[0].clone()))
            })),
        }
    } else {
        let mut out: Vec<Option<Value>> = vec![None; st.z];
        for l in active.iter() {
            if !st.is_running(l) {
                continue;
            }
            let result = lane::shape_of(&mut lookup(l), ty).and_then(|shape| {
                lane::declared_value(&name, &shape, init.as_ref().map(|i| i.lane_value(l)))
            });
            match result {
                Ok(v) => out[l] = Some(v),
                Err(err) => st.fail(l, err.at(s.span)),
            }
        }
        Arc::new(crate::eval::from_partial(out))
    };
    set_var(st, var, value, &st.running(active));
    Ok(())
}

/// Every lane's value of `slot` is already what declaring `name` of
/// `shape` with it gives (no size error, nothing to promote).
fn conforms(slot: &Slot, shape: &language::data::Shape, name: &str) -> bool {
    match slot {
        Slot::Real(d) => d.shape == *shape,
        Slot::Int(d) => d.shape == *shape,
        Slot::Tuple(items) => match shape {
            language::data::Shape::Tuple(shapes) => {
                shapes.len() == items.len()
                    && items.iter().zip(shapes).all(|(i, s)| conforms(i, s, name))
            }
            _ => false,
        },
        Slot::Shared(v) => {
            lane::declared_value(name, shape, Some((**v).clone())).is_ok_and(|d| d == **v)
        }
        Slot::PerLane(_) => false,
    }
}

/// `target += e` (when `add`; `e` is evaluated regardless).
fn target_add(e: &Expr, st: &mut State, active: &Lanes, add: bool) -> Result<()> {
    let value = eval(e, st, active)?;
    if !add {
        return Ok(());
    }
    let live = st.running(active);
    match &*value {
        Slot::Shared(v) => {
            let sum = lane::target_sum(v);
            for l in live.iter() {
                st.target[l] += sum;
            }
        }
        Slot::Real(d) => {
            let z = d.z;
            for l in live.iter() {
                // The interpreter sums the elements first (from −0.0, as
                // Rust's f64 sum), then adds the sum to the target.
                let mut sum = -0.0;
                for e in 0..d.elements() {
                    sum += d.data[e * z + l];
                }
                st.target[l] += sum;
            }
        }
        other => {
            for l in live.iter() {
                st.target[l] += lane::target_sum(&other.lane_value(l));
            }
        }
    }
    Ok(())
}

/// The expressions of a transform's arguments, in evaluation order.
pub(crate) fn transform_exprs<'a>(t: &'a Transform, out: &mut Vec<&'a Expr>) {
    match t {
        Transform::Lower(a)
        | Transform::Upper(a)
        | Transform::Offset(a)
        | Transform::Multiplier(a) => out.push(a),
        Transform::LowerUpper(a, b) | Transform::OffsetMultiplier(a, b) => out.extend([a, b]),
        Transform::Tuple(items) => items.iter().for_each(|t| transform_exprs(t, out)),
        _ => {}
    }
}

/// Evaluated expressions looked up by identity, for a lane.
pub(crate) struct Evaluated<'a> {
    pub exprs: Vec<&'a Expr>,
    pub slots: Vec<Arc<Slot>>,
}

impl<'a> Evaluated<'a> {
    pub fn new(exprs: Vec<&'a Expr>, st: &mut State, active: &Lanes) -> Result<Evaluated<'a>> {
        let slots = exprs
            .iter()
            .map(|e| eval(e, st, active))
            .collect::<Result<Vec<_>>>()?;
        Ok(Evaluated { exprs, slots })
    }

    pub fn all_shared(&self) -> bool {
        self.slots.iter().all(|s| s.is_shared())
    }

    /// The value of `e` (one of the evaluated expressions) for lane `l`.
    pub fn lookup(
        &self,
        l: usize,
    ) -> impl FnMut(&Expr) -> std::result::Result<Value, RuntimeError> + '_ {
        move |e: &Expr| match self.exprs.iter().position(|x| std::ptr::eq(*x, e)) {
            Some(k) => Ok(self.slots[k].lane_value(l)),
            None => Err(RuntimeError::fatal("transform argument not evaluated")),
        }
    }
}

fn check_constraint(
    s: &Stmt,
    var: VarId,
    transform: &Transform,
    st: &mut State,
    active: &Lanes,
) -> Result<()> {
    let Some(value) = get_var(st, var, active, "used before it has a value") else {
        return Ok(());
    };
    let mut exprs = Vec::new();
    transform_exprs(transform, &mut exprs);
    let args = Evaluated::new(exprs, st, active)?;
    let name = st.name(var).to_string();
    let lanes: Vec<usize> = if value.is_shared() && args.all_shared() {
        active.first().into_iter().collect()
    } else {
        st.running(active).indices().to_vec()
    };
    for l in lanes {
        let v = value.lane_value(l);
        if let Err(err) = lane::check_constraint(&mut args.lookup(l), &name, &v, transform) {
            if value.is_shared() && args.all_shared() {
                crate::eval::fail_all(st, active, err.at(s.span));
            } else {
                st.fail(l, err.at(s.span));
            }
        }
    }
    Ok(())
}

/// The text of `print`/`reject` items for each running lane.
fn printables(items: &[Printable], st: &mut State, active: &Lanes) -> Result<Vec<(usize, String)>> {
    let exprs: Vec<&Expr> = items
        .iter()
        .filter_map(|i| match i {
            Printable::Expr(e) => Some(e),
            Printable::Str(_) => None,
        })
        .collect();
    let values = exprs
        .iter()
        .map(|e| eval(e, st, active))
        .collect::<Result<Vec<_>>>()?;
    let mut out = Vec::new();
    for l in st.running(active).iter() {
        let mut text = String::new();
        let mut k = 0;
        for item in items {
            match item {
                Printable::Str(s) => text.push_str(s),
                Printable::Expr(_) => {
                    text.push_str(&lane::print_value(&values[k].lane_value(l)));
                    k += 1;
                }
            }
        }
        out.push((l, text));
    }
    Ok(out)
}
