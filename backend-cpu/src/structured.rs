//! A small driver running *structured* MIR (if / while / for / break /
//! continue, nested blocks) over the batched ops, with per-lane
//! conditions splitting the active lanes. It stands in for the CFG
//! executors in tests and benchmarks of the data layer; user-function
//! calls and `return` are the executors' job and are refused here.

use crate::eval::{BatchError, Result, eval};
use crate::lanes::{Lanes, Slot, State};
use crate::ops::exec_op;
use language::mir::{Expr, Stmt, StmtKind, VarId};
use language::value::Value;
use runtime::{Model, RuntimeError, lane};
use std::sync::Arc;

/// How a branch taken by only some lanes runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branching {
    /// On the whole batch, writes masked to the branch's lanes.
    Mask,
    /// On a gathered sub-batch of the branch's lanes, scattered back.
    Gather,
}

/// How [`log_density_gradient`] runs the batch.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub branching: Branching,
    /// See [`State::gemm`].
    pub gemm: bool,
}

/// Where a lane's execution of the current loop body stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Normal,
    Break,
    Continue,
}

struct Driver {
    flow: Vec<Flow>,
    /// False while no lane has ever been in a `break`/`continue`.
    jumped: bool,
    branching: Branching,
}

/// Run `stmts` for the active lanes of `st`.
pub fn run(stmts: &[Stmt], st: &mut State, active: &Lanes, branching: Branching) -> Result<()> {
    let mut d = Driver {
        flow: vec![Flow::Normal; st.z],
        jumped: false,
        branching,
    };
    d.block(stmts, st, active)
}

impl Driver {
    fn live(&self, st: &State, lanes: &Lanes) -> Lanes {
        if !self.jumped {
            return st.running(lanes);
        }
        lanes.retain(|l| st.is_running(l) && self.flow[l] == Flow::Normal)
    }

    fn block(&mut self, stmts: &[Stmt], st: &mut State, active: &Lanes) -> Result<()> {
        for s in stmts {
            let live = self.live(st, active);
            if live.is_empty() {
                break;
            }
            self.stmt(s, st, &live)?;
        }
        Ok(())
    }

    /// Per-lane truth of `cond` on `lanes` (errors fail the lane).
    fn truth(&self, cond: &Expr, st: &mut State, lanes: &Lanes) -> Result<(Lanes, Lanes)> {
        crate::eval::split_on(cond, st, lanes)
    }

    /// Per-lane int of `e` on `lanes`.
    fn ints(&self, e: &Expr, st: &mut State, lanes: &Lanes) -> Result<Vec<i64>> {
        let v = eval(e, st, lanes)?;
        let mut out = vec![0; st.z];
        for l in st.running(lanes).iter() {
            match lane::int_of(&v.lane_value(l)) {
                Ok(i) => out[l] = i,
                Err(err) => st.fail(l, err.at(e.span)),
            }
        }
        Ok(out)
    }

    /// Run `stmts` on `lanes`, a subset of the batch, masked or gathered.
    fn branch(&mut self, stmts: &[Stmt], st: &mut State, lanes: &Lanes) -> Result<()> {
        if lanes.is_empty() {
            return Ok(());
        }
        if self.branching == Branching::Mask || lanes.is_full() {
            return self.block(stmts, st, lanes);
        }
        let mut sub = st.gather(lanes);
        let mut inner = Driver {
            flow: lanes.iter().map(|l| self.flow[l]).collect(),
            jumped: self.jumped,
            branching: self.branching,
        };
        let all = Lanes::all(sub.z);
        let result = inner.block(stmts, &mut sub, &all);
        for (i, l) in lanes.iter().enumerate() {
            self.flow[l] = inner.flow[i];
        }
        self.jumped |= inner.jumped;
        st.scatter(sub, lanes);
        result
    }

    fn stmt(&mut self, s: &Stmt, st: &mut State, active: &Lanes) -> Result<()> {
        match &s.kind {
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let (yes, no) = self.truth(cond, st, active)?;
                self.branch(then, st, &yes)?;
                self.branch(otherwise, st, &no)?;
            }
            StmtKind::While { cond, body } => {
                let mut looping = active.clone();
                loop {
                    let live = self.live(st, &looping);
                    let (yes, _) = self.truth(cond, st, &live)?;
                    if yes.is_empty() {
                        break;
                    }
                    self.branch(body, st, &yes)?;
                    looping = self.end_iteration(&yes);
                }
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let lo = self.ints(lower, st, active)?;
                let hi = self.ints(upper, st, active)?;
                self.count(*var, lo, hi, 1, body, st, active)?;
            }
            StmtKind::ForDown {
                var,
                upper,
                lower,
                body,
            } => {
                let hi = self.ints(upper, st, active)?;
                let lo = self.ints(lower, st, active)?;
                self.count(*var, hi, lo, -1, body, st, active)?;
            }
            StmtKind::Block(stmts) => self.block(stmts, st, active)?,
            StmtKind::Break => {
                self.jumped = true;
                active.iter().for_each(|l| self.flow[l] = Flow::Break)
            }
            StmtKind::Continue => {
                self.jumped = true;
                active.iter().for_each(|l| self.flow[l] = Flow::Continue)
            }
            StmtKind::Return(_) => return Err(BatchError::NotStraightLine("`return`")),
            _ => exec_op(s, st, active)?,
        }
        Ok(())
    }

    /// After a loop body: `continue` lanes go on, `break` lanes leave.
    fn end_iteration(&mut self, lanes: &Lanes) -> Lanes {
        let mut next = Vec::new();
        for l in lanes.iter() {
            match self.flow[l] {
                Flow::Break => self.flow[l] = Flow::Normal,
                Flow::Continue => {
                    self.flow[l] = Flow::Normal;
                    next.push(l);
                }
                Flow::Normal => next.push(l),
            }
        }
        Lanes::from_indices(lanes.z(), next)
    }

    /// A counting loop from `start` to `stop` (inclusive) by `step`.
    #[allow(clippy::too_many_arguments)]
    fn count(
        &mut self,
        var: VarId,
        start: Vec<i64>,
        stop: Vec<i64>,
        step: i64,
        body: &[Stmt],
        st: &mut State,
        active: &Lanes,
    ) -> Result<()> {
        let mut cur = start;
        let mut looping = st.running(active);
        loop {
            let lanes = looping.retain(|l| {
                st.is_running(l)
                    && if step > 0 {
                        cur[l] <= stop[l]
                    } else {
                        cur[l] >= stop[l]
                    }
            });
            if lanes.is_empty() {
                return Ok(());
            }
            let first = cur[lanes.first().expect("nonempty")];
            let value = if lanes.iter().all(|l| cur[l] == first) {
                Slot::shared(Value::Int(first))
            } else {
                Slot::from_lane_values((0..st.z).map(|l| Value::Int(cur[l])).collect())
            };
            crate::ops::set_var(st, var, Arc::new(value), &lanes);
            self.branch(body, st, &lanes)?;
            looping = self.end_iteration(&lanes);
            for l in looping.iter() {
                cur[l] += step;
            }
        }
    }
}

/// Runs a model's gradient program on batches; the data and transformed
/// data are shared between runs without copying.
pub struct GradientRunner<'m> {
    model: &'m Model,
    g: &'m language::mir::GradProgram,
    globals: Vec<Option<Arc<Slot>>>,
}

impl<'m> GradientRunner<'m> {
    pub fn new(model: &'m Model, g: &'m language::mir::GradProgram) -> GradientRunner<'m> {
        let mut globals = vec![None; g.program.vars.len()];
        // Data, transformed data and the program's hoisted values.
        for (i, v) in model.globals_for(&g.program).iter().enumerate() {
            if let Some(v) = v {
                globals[i] = Some(Arc::new(Slot::shared(v.clone())));
            }
        }
        GradientRunner { model, g, globals }
    }

    /// Log density and gradient with one unconstrained θ per lane: per
    /// lane the interpreter's `Model::log_density_gradient` result.
    pub fn run(
        &self,
        thetas: &[Vec<f64>],
        jacobian: bool,
        options: Options,
    ) -> std::result::Result<Vec<LaneGradient>, BatchError> {
        let z = thetas.len();
        let mut st = State::with_vars(&self.g.program, self.globals.clone(), z);
        st.jacobian = jacobian;
        st.gemm = options.gemm;
        st.set_gradient_input(self.model.params(), self.g.num_stacks as usize, thetas);
        run(&self.g.body, &mut st, &Lanes::all(z), options.branching)?;
        Ok((0..z)
            .map(|l| match &st.status[l] {
                crate::lanes::LaneStatus::Running => Ok((st.target[l], st.lane_gradient(l))),
                crate::lanes::LaneStatus::Failed(err) => Err((**err).clone()),
            })
            .collect())
    }
}

/// One lane's log density and gradient, or its error.
pub type LaneGradient = std::result::Result<(f64, Vec<f64>), RuntimeError>;

/// [`GradientRunner::run`] once.
pub fn log_density_gradient(
    model: &Model,
    g: &language::mir::GradProgram,
    thetas: &[Vec<f64>],
    jacobian: bool,
    options: Options,
) -> std::result::Result<Vec<LaneGradient>, BatchError> {
    GradientRunner::new(model, g).run(thetas, jacobian, options)
}
