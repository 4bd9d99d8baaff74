//! The executors' public face: a lowered program with its data, run for a
//! batch of lanes — log density and gradient, generated quantities, or any
//! function — split into sub-batches over threads.

use super::host::{BatchHost, NoHost};
use super::iterations::Plans;
use super::{ExecConfig, ExecError, Result};
use crate::lanes::{LaneStatus, Lanes, Slot, State};
use language::batch::cfg::{FunctionKind, Program};
use language::batch::pc;
use language::batch::pc::liveness::{self, CallEdges};
use language::mir::{FunId, Origin, StmtKind, VarId};
use language::value::Value;
use runtime::gradient::{GradientValues, LaneWork};
use runtime::{Draw, Model, Rng, RuntimeError};
use std::sync::Arc;

/// One lane's outcome: its value, or the runtime error that stopped it
/// (exactly the scalar interpreter's).
pub type LaneResult<T> = std::result::Result<T, RuntimeError>;

/// One variable of a draw as a draws file stores it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredVar {
    pub name: String,
    /// [`Value::stored_dims`]'s dimensions.
    pub dims: Vec<usize>,
    pub is_int: bool,
}

/// Kept draws as a draws file stores them ([`BatchedModel::stored_draws`]).
#[derive(Debug)]
pub struct StoredDraws {
    pub vars: Vec<StoredVar>,
    /// Per lane: every variable's elements in stored order
    /// ([`Value::flatten_row_major`]), one variable after another.
    pub lanes: Vec<LaneResult<Vec<f64>>>,
    /// Per lane: the lines it printed (none for a failed lane, as
    /// [`Draw::output`] comes only with a draw).
    pub printed: Vec<Vec<String>>,
}

/// Kept draws from one run of the draws program
/// ([`BatchedModel::kept_draws`]).
#[derive(Debug)]
pub enum KeptDraws {
    Stored(StoredDraws),
    /// Per lane, by name (some variable cannot be stored from its slot).
    Named(Vec<LaneResult<Draw>>),
}

/// A lane's log density and its gradient.
pub type LogDensityGradient = (f64, Vec<f64>);

/// A CFG program and the model (data, transformed data, parameter layout)
/// it was lowered from, ready to run batches of lanes.
pub struct BatchedModel {
    program: Program,
    /// The PC IR built from `program`, for program-counter batching.
    pc: Option<pc::Program>,
    /// Liveness of `pc`'s variables at its blocks (its executor's masked
    /// writes skip what no other lane reads).
    pc_live: Option<super::pc::LiveIn>,
    /// The PC program's loops whose iterations can run as lanes.
    loops: Plans,
    /// Variables whose `log_inv_logit` and `inv_logit` of the negation
    /// run as one pass ([`crate::eval::logistic_pair`]).
    logistic_pairs: Arc<[crate::eval::logistic_pair::Paired]>,
    /// Reads that move a block-local variable's value
    /// ([`super::last_reads`]), for the program the executor runs.
    last_reads: Arc<super::last_reads::LastReads>,
    model: Model,
    /// Data and transformed data as shared slots (never copied per batch).
    globals: Vec<Option<Arc<Slot>>>,
    config: ExecConfig,
    pool: Option<rayon::ThreadPool>,
    /// The program calls user functions: run on threads with a stack deep
    /// enough for host recursion (local batching) up to the depth limit.
    calls: bool,
}

/// Stack of the threads running batches that make calls.
const DEEP_STACK: usize = 512 << 20;

thread_local! {
    /// This thread is a batch thread with a [`DEEP_STACK`].
    static ON_DEEP_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn on_deep_stack() -> bool {
    ON_DEEP_STACK.with(|d| d.get())
}

impl BatchedModel {
    /// `program` must be lowered from `model`'s program (its gradient
    /// program, generated quantities or functions).
    pub fn new(program: Program, model: Model, config: ExecConfig) -> Result<BatchedModel> {
        program.validate().map_err(ExecError::Setup)?;
        let pc = match config.batching {
            super::Batching::Local => None,
            super::Batching::ProgramCounter => {
                Some(pc::build(&program).map_err(|e| ExecError::Setup(e.to_string()))?)
            }
        };
        // One interprocedural liveness feeds both the loop plans and the
        // masked-write check.
        let live = pc
            .as_ref()
            .map(|p| (p, liveness::analyse(p, CallEdges::Interprocedural)));
        let loops = live
            .as_ref()
            .map(|(p, live)| Plans::of(p, live))
            .unwrap_or_default();
        let pc_live = live.map(|(_, live)| super::pc::LiveIn::of(live));
        let num_vars = pc
            .as_ref()
            .map_or(program.mir.vars.len(), |p| p.mir.vars.len());
        let mut globals: Vec<Option<Arc<Slot>>> = vec![None; num_vars];
        // Data, transformed data and the program's hoisted values.
        for (i, g) in model.globals_for(&program.mir).iter().enumerate() {
            if let Some(v) = g {
                globals[i] = Some(Arc::new(Slot::shared(v.clone())));
            }
        }
        let calls = program.functions.iter().any(|f| {
            f.blocks
                .iter()
                .any(|b| matches!(b.term, language::batch::cfg::Terminator::Call { .. }))
        });
        // One thread and no calls: the caller's thread. A program with
        // calls runs on a deep-stack thread: the caller's when it is one,
        // else one kept for the model's lifetime (a thread spawned per
        // evaluation cost its start-up and left the per-thread buffer pool
        // and allocator caches cold every time).
        // Without calls the caller runs a sub-batch itself
        // ([`super::split::split_here`]): the pool has the other threads.
        let pool_threads = match (calls, config.threads) {
            (true, t) => t,
            (false, 0) => std::thread::available_parallelism().map_or(1, |n| n.get()) - 1,
            (false, t) => t - 1,
        };
        let pool = if pool_threads == 0 && !calls {
            None
        } else {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(pool_threads)
                .stack_size(DEEP_STACK)
                .start_handler(|_| ON_DEEP_STACK.with(|d| d.set(true)))
                .build()
                .map_err(|e| ExecError::Setup(format!("thread pool: {e}")))?;
            Some(pool)
        };
        // The statements the executor runs: the PC program's (its
        // variables are the CFG's and the lowering's own) or the CFG's.
        let logistic_pairs = match &pc {
            Some(p) => crate::eval::logistic_pair::paired_vars(p.blocks.iter().flat_map(|b| {
                b.ops.iter().filter_map(|op| match op {
                    pc::Op::Stmt(s) => Some(s),
                    _ => None,
                })
            })),
            None => crate::eval::logistic_pair::paired_vars(
                program
                    .functions
                    .iter()
                    .flat_map(|f| f.blocks.iter().flat_map(|b| &b.ops)),
            ),
        }
        .into();
        let last_reads = Arc::new(match &pc {
            Some(p) => super::last_reads::LastReads::of_pc(p),
            None => super::last_reads::LastReads::of_cfg(&program),
        });
        Ok(BatchedModel {
            loops,
            logistic_pairs,
            last_reads,
            calls,
            program,
            pc,
            pc_live,
            model,
            globals,
            config,
            pool,
        })
    }

    /// The CFG program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The PC IR run by program-counter batching.
    pub fn pc_program(&self) -> Option<&pc::Program> {
        self.pc.as_ref()
    }

    /// How many loops of the program the program-counter executor can run
    /// with their iterations as lanes (loops over data in small batches).
    pub fn loops_run_as_lanes(&self) -> usize {
        self.loops.len()
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn config(&self) -> &ExecConfig {
        &self.config
    }

    /// Log density (with log |J| when `jacobian`) and gradient at each
    /// lane's unconstrained point `thetas[lane]`, by the program's
    /// [`language::batch::GRADIENT_ENTRY`].
    pub fn log_density_gradient(
        &self,
        thetas: &[Vec<f64>],
        jacobian: bool,
    ) -> Result<Vec<LaneResult<LogDensityGradient>>> {
        let entry = self.entry(language::batch::GRADIENT_ENTRY)?;
        let n = self.model.num_unconstrained();
        self.split(thetas.len(), |range| {
            let chunk = &thetas[range];
            let z = chunk.len();
            let (columns, short) = theta_columns(chunk, n);
            let st = self.run_gradient(entry, columns, z, jacobian, short.into_iter())?;
            Ok((0..z)
                .map(|l| match &st.status[l] {
                    LaneStatus::Failed(e) => Err((**e).clone()),
                    LaneStatus::Running => Ok((st.target[l], st.lane_gradient(l))),
                })
                .collect())
        })
    }

    /// As [`BatchedModel::log_density_gradient`] with θ and the gradient
    /// as `[coordinate][lane]` columns (`theta.len()` is the number of
    /// unconstrained coordinates times `z`), the layout a batched sampler
    /// keeps them in: no vector per lane on the way in or out (for eight
    /// schools at Z = 1,024 those were ≈3 Z allocations per call). Each
    /// lane's lp, gradient and error are bit for bit those of
    /// [`BatchedModel::log_density_gradient`].
    pub fn log_density_gradient_columns(
        &self,
        theta: &[f64],
        z: usize,
        jacobian: bool,
    ) -> Result<GradientValues> {
        let entry = self.entry(language::batch::GRADIENT_ENTRY)?;
        let n = self.model.num_unconstrained();
        if theta.len() != n * z {
            return Err(ExecError::Setup(format!(
                "expected {n} unconstrained parameters for each of {z} lanes, found {} values",
                theta.len()
            )));
        }
        let chunks = self.split(z, |range| {
            let zc = range.len();
            // The whole batch: θ as it is (one copy, not one per
            // coordinate — at Z = 1 a hundred one-number copies).
            let columns = if zc == z {
                theta.to_vec()
            } else {
                let mut columns = Vec::with_capacity(n * zc);
                for k in 0..n {
                    columns.extend_from_slice(&theta[k * z + range.start..k * z + range.end]);
                }
                columns
            };
            let mut st = self.run_gradient(entry, columns, zc, jacobian, std::iter::empty())?;
            let errors: Vec<Option<RuntimeError>> = st
                .status
                .iter()
                .map(|s| match s {
                    LaneStatus::Failed(e) => Some((**e).clone()),
                    LaneStatus::Running => None,
                })
                .collect();
            Ok(vec![(
                range,
                std::mem::take(&mut st.target),
                std::mem::take(&mut st.gradient),
                errors,
                st.work,
            )])
        })?;
        let mut out = GradientValues {
            lp: vec![f64::NAN; z],
            // One sub-batch hands its own over.
            gradient: if chunks.len() == 1 {
                Vec::new()
            } else {
                vec![0.0; n * z]
            },
            errors: vec![None; z],
            work: LaneWork::default(),
        };
        for (range, lp, gradient, errors, work) in chunks {
            out.work.add(work);
            let zc = range.len();
            if zc == z {
                // The whole batch: already `[coordinate][lane]`.
                out.gradient = gradient;
            } else {
                for k in 0..n {
                    out.gradient[k * z + range.start..k * z + range.end]
                        .copy_from_slice(&gradient[k * zc..(k + 1) * zc]);
                }
            }
            for (i, (lp, e)) in lp.into_iter().zip(errors).enumerate() {
                let l = range.start + i;
                if e.is_none() {
                    out.lp[l] = lp;
                }
                out.errors[l] = e;
            }
        }
        Ok(out)
    }

    /// Parameters, transformed parameters and generated quantities of each
    /// lane's draw at `thetas[lane]`, lane `l` drawing from `rngs[l]` (as
    /// [`Model::generated_quantities`]; `program` lowered with
    /// [`language::batch::lower_generated_quantities`]).
    pub fn generated_quantities(
        &self,
        thetas: &[Vec<f64>],
        rngs: &[Rng],
    ) -> Result<Vec<LaneResult<Draw>>> {
        self.run_draws(thetas, rngs, |st, z| {
            let vars = self.output_vars();
            (0..z).map(|l| self.draw(st, l, &vars)).collect()
        })
    }

    /// [`BatchedModel::generated_quantities`] as the numbers a draws file
    /// stores, read straight from the lanes' columns (no value built per
    /// variable and draw). `None` when some variable's stored layout does
    /// not follow from its columns (a tuple, values held per lane, an empty
    /// array): the caller then takes the draws by name.
    pub fn stored_draws(&self, thetas: &[Vec<f64>], rngs: &[Rng]) -> Result<Option<StoredDraws>> {
        Ok(match self.kept_draws(thetas, rngs)? {
            KeptDraws::Stored(stored) => Some(stored),
            KeptDraws::Named(_) => None,
        })
    }

    /// The kept draws from one run of the draws program: as stored numbers
    /// ([`BatchedModel::stored_draws`]) where every sub-batch gives them
    /// with the same variables, else by name read from the same run (a
    /// model with a tuple or an empty array among its outputs would
    /// otherwise run its generated quantities twice per batch of draws).
    pub fn kept_draws(&self, thetas: &[Vec<f64>], rngs: &[Rng]) -> Result<KeptDraws> {
        // One item per sub-batch: its stored numbers, else its named draws.
        let parts = self.run_draws(thetas, rngs, |st, z| {
            vec![self.stored(st, z).ok_or_else(|| {
                let vars = self.output_vars();
                (0..z).map(|l| self.draw(st, l, &vars)).collect::<Vec<_>>()
            })]
        })?;
        if parts.iter().all(|p| p.is_err()) {
            return Ok(KeptDraws::Named(
                parts
                    .into_iter()
                    .filter_map(|p| p.err())
                    .flatten()
                    .collect(),
            ));
        }
        let mut stored: Option<StoredDraws> = None;
        for part in parts {
            match (part, &mut stored) {
                (Ok(part), None) => stored = Some(part),
                (Ok(part), Some(all)) if all.vars == part.vars => {
                    all.lanes.extend(part.lanes);
                    all.printed.extend(part.printed);
                }
                // Sub-batches that disagree (not seen in practice: the
                // layout follows from the program): all by name, from a
                // second run.
                _ => return Ok(KeptDraws::Named(self.generated_quantities(thetas, rngs)?)),
            }
        }
        // (`stored` is set: some sub-batch gave stored draws.)
        Ok(stored.map_or(KeptDraws::Named(Vec::new()), KeptDraws::Stored))
    }

    /// Run the draws' entries (constraining, transformed parameters,
    /// generated quantities) on sub-batches of lanes; `read(state, z)` takes
    /// what a sub-batch of `z` lanes gives.
    fn run_draws<T: Send>(
        &self,
        thetas: &[Vec<f64>],
        rngs: &[Rng],
        read: impl Fn(&State, usize) -> Vec<T> + Sync,
    ) -> Result<Vec<T>> {
        let tp = self.entry(language::batch::TRANSFORMED_PARAMETERS_ENTRY)?;
        let gq = self.entry(language::batch::GENERATED_QUANTITIES_ENTRY)?;
        if rngs.len() != thetas.len() {
            return Err(ExecError::Setup("one random stream per lane needed".into()));
        }
        let constrain = self
            .program
            .entry(language::batch::CONSTRAIN_PARAMETERS_ENTRY);
        let n = self.model.num_unconstrained();
        self.split(thetas.len(), |range| {
            let z = range.len();
            let mut st = self.state(z);
            st.jacobian = false;
            st.set_rngs(rngs[range.clone()].iter().cloned());
            if let Some(constrain) = constrain {
                // The parameters constrained for all lanes at once (the
                // same transforms as the interpreter's, batched): θ as
                // `[coordinate][lane]` columns.
                let (columns, short) = theta_columns(&thetas[range], n);
                st.set_gradient_columns(self.model.params(), 0, columns);
                for (l, e) in short {
                    st.fail(l, e);
                }
                for entry in [constrain, tp, gq] {
                    let running = st.running(&Lanes::all(z));
                    self.invoke(entry, &mut st, &running, &mut NoHost)?;
                }
                return Ok(read(&st, z));
            }
            let mut constrained: Vec<Option<Vec<(String, Value)>>> = Vec::with_capacity(z);
            for (l, theta) in thetas[range].iter().enumerate() {
                match self.model.constrain(theta) {
                    Ok(values) => constrained.push(Some(values)),
                    Err(e) => {
                        st.fail(l, e);
                        constrained.push(None);
                    }
                }
            }
            for (k, p) in self.model.params().iter().enumerate() {
                let values: Vec<Option<Value>> = constrained
                    .iter()
                    .map(|c| c.as_ref().map(|c| c[k].1.clone()))
                    .collect();
                if let Some(fill) = values.iter().flatten().next().cloned() {
                    let values = values
                        .into_iter()
                        .map(|v| v.unwrap_or_else(|| fill.clone()))
                        .collect();
                    st.vars[p.var.0 as usize] = Some(Arc::new(Slot::from_lane_values(values)));
                }
            }
            for entry in [tp, gq] {
                let running = st.running(&Lanes::all(z));
                self.invoke(entry, &mut st, &running, &mut NoHost)?;
            }
            Ok(read(&st, z))
        })
    }

    /// Call function `f` (by name: a user function or an entry) with
    /// `args[lane]` for each lane; lane `l` draws from `rngs[l]` if given.
    /// The returned value of each lane (`None` for `void`).
    pub fn run_function(
        &self,
        name: &str,
        args: &[Vec<Value>],
        rngs: Option<&[Rng]>,
    ) -> Result<Vec<LaneResult<Option<Value>>>> {
        self.run_function_with_host(name, args, rngs, |_| NoHost)
    }

    /// As [`BatchedModel::run_function`], external functions answered by
    /// a host per sub-batch: `make_host(range)` for the lanes `range` of
    /// `args` (lane `i` of the host's calls is lane `range.start + i`).
    pub fn run_function_with_host<H: BatchHost>(
        &self,
        name: &str,
        args: &[Vec<Value>],
        rngs: Option<&[Rng]>,
        make_host: impl Fn(std::ops::Range<usize>) -> H + Sync,
    ) -> Result<Vec<LaneResult<Option<Value>>>> {
        let f = self.function_id(name)?;
        let fun = self.program.function(f);
        if let Some(bad) = args.iter().find(|a| a.len() != fun.params.len()) {
            return Err(ExecError::Setup(format!(
                "`{name}` takes {} arguments, given {}",
                fun.params.len(),
                bad.len()
            )));
        }
        if rngs.is_some_and(|r| r.len() != args.len()) {
            return Err(ExecError::Setup("one random stream per lane needed".into()));
        }
        self.split(args.len(), |range| {
            let mut host = make_host(range.clone());
            let z = range.len();
            let mut st = self.state(z);
            if let Some(rngs) = rngs {
                st.set_rngs(rngs[range.clone()].iter().cloned());
            }
            let chunk = &args[range];
            for (k, param) in fun.params.iter().enumerate() {
                let values = chunk.iter().map(|a| a[k].clone()).collect();
                st.vars[param.0 as usize] = Some(Arc::new(Slot::from_lane_values(values)));
            }
            let value = self.invoke(f, &mut st, &Lanes::all(z), &mut host)?;
            Ok((0..z)
                .map(|l| super::block::lane_outcome(&st, l, value.as_ref(), fun.ret.as_ref()))
                .collect())
        })
    }

    /// Run function `name` (a user function or an entry) as a pool of
    /// invocations over a batch of `lanes` lanes, split into sub-batches
    /// as [`BatchedModel::run_function_with_host`]: `make_host(range)`
    /// answers the external calls of lanes `range` and hands out the work —
    /// each lane starts the invocation [`BatchHost::next_invocation`] gives
    /// it, reports its result with [`BatchHost::invocation_finished`] and,
    /// with program-counter batching, starts the next one the host gives at
    /// once, while the other lanes go on. So a batch of fewer lanes than
    /// invocations stays full until the work runs out, however different
    /// the invocations' lengths. Each invocation's result is exactly what it
    /// gives run alone (lanes never affect each other). Local static
    /// batching runs each lane's first invocation only (it has no way to
    /// start a lane while others are inside a call).
    pub fn run_invocations<H: BatchHost>(
        &self,
        name: &str,
        lanes: usize,
        make_host: impl Fn(std::ops::Range<usize>) -> H + Sync,
    ) -> Result<()> {
        let f = self.function_id(name)?;
        let fun = self.program.function(f);
        self.split(lanes, |range| {
            let mut host = make_host(range.clone());
            let z = range.len();
            let mut st = self.state(z);
            let mut args: Vec<(usize, Vec<Value>)> = Vec::with_capacity(z);
            for l in 0..z {
                if let Some((a, rng)) = host.next_invocation(l) {
                    if a.len() != fun.params.len() {
                        return Err(ExecError::Setup(format!(
                            "`{name}` takes {} arguments, given {}",
                            fun.params.len(),
                            a.len()
                        )));
                    }
                    st.set_rng(l, rng);
                    args.push((l, a));
                }
            }
            if args.is_empty() {
                return Ok(Vec::<()>::new());
            }
            super::block::set_args(&mut st, &fun.params, &args);
            let lanes = Lanes::from_indices(z, args.iter().map(|(l, _)| *l).collect());
            match &self.pc {
                Some(p) => super::pc::run_refilling(
                    p,
                    &self.loops,
                    self.pc_live.as_ref(),
                    f,
                    &mut st,
                    &lanes,
                    &self.config,
                    &mut host,
                    true,
                )?,
                None => {
                    let value = self.invoke(f, &mut st, &lanes, &mut host)?;
                    for l in lanes.iter() {
                        let result =
                            super::block::lane_outcome(&st, l, value.as_ref(), fun.ret.as_ref());
                        host.invocation_finished(l, result);
                    }
                }
            }
            Ok(Vec::new())
        })?;
        Ok(())
    }

    /// A user function or entry by name.
    fn function_id(&self, name: &str) -> Result<FunId> {
        self.program
            .functions
            .iter()
            .position(|f| f.name == name && f.kind != FunctionKind::External)
            .map(|i| FunId(i as u32))
            .ok_or_else(|| ExecError::Setup(format!("no function `{name}`")))
    }

    fn entry(&self, name: &str) -> Result<FunId> {
        self.program
            .entry(name)
            .ok_or_else(|| ExecError::Setup(format!("the program has no `{name}` entry")))
    }

    /// Run function `f` on `lanes` (parameters set) with the configured
    /// batching; the returned value's slot (for the lanes that returned).
    fn invoke(
        &self,
        f: FunId,
        st: &mut State,
        lanes: &Lanes,
        host: &mut dyn BatchHost,
    ) -> Result<Option<Slot>> {
        match &self.pc {
            Some(p) => {
                super::pc::run(p, &self.loops, f, st, lanes, &self.config, host)?;
                Ok(p.function(f)
                    .result
                    .and_then(|r| st.vars[r.0 as usize].clone())
                    .map(Arc::unwrap_or_clone))
            }
            None => super::local::run(&self.program, f, st, lanes, &self.config, host),
        }
    }

    /// Runs the gradient entry for `z` lanes at θ given as
    /// `[coordinate][lane]` `columns`, the lanes in `failed` failed before
    /// they start; the final state.
    fn run_gradient(
        &self,
        entry: FunId,
        columns: Vec<f64>,
        z: usize,
        jacobian: bool,
        failed: impl Iterator<Item = (usize, RuntimeError)>,
    ) -> Result<State<'_>> {
        let mut st = self.state(z);
        st.jacobian = jacobian;
        st.set_gradient_columns(
            self.model.params(),
            self.program.num_ad_stacks as usize,
            columns,
        );
        for (l, e) in failed {
            st.fail(l, e);
        }
        let all = st.running(&Lanes::all(z));
        self.invoke(entry, &mut st, &all, &mut NoHost)?;
        Ok(st)
    }

    fn state(&self, z: usize) -> State<'_> {
        let mir = self.pc.as_ref().map_or(&self.program.mir, |p| &p.mir);
        let mut st = State::with_vars(mir, self.globals.clone(), z);
        st.gemm = self.config.gemm;
        st.logistic = crate::eval::logistic_pair::LogisticPairs::new(self.logistic_pairs.clone());
        st.last_reads = Some(self.last_reads.clone());
        st
    }

    /// Lane `l`'s draw of `vars` ([`BatchedModel::output_vars`]) by name,
    /// collected as the interpreter does.
    fn draw(&self, st: &State, l: usize, vars: &[(&str, VarId)]) -> LaneResult<Draw> {
        if let LaneStatus::Failed(e) = &st.status[l] {
            return Err((**e).clone());
        }
        let mut values = Vec::with_capacity(vars.len());
        for &(name, var) in vars {
            match &st.vars[var.0 as usize] {
                Some(slot) => values.push((name.to_string(), slot.lane_value(l))),
                None => {
                    return Err(RuntimeError::fatal(format!(
                        "variable `{}` used before it has a value",
                        st.name(var)
                    )));
                }
            }
        }
        Ok(Draw {
            values,
            output: st.lane_output(l).to_vec(),
        })
    }

    /// The variables of a draw, in declaration order: parameters,
    /// transformed parameters, generated quantities.
    fn output_vars(&self) -> Vec<(&str, VarId)> {
        let mut vars: Vec<(&str, VarId)> = (self.model.params().iter())
            .map(|p| (p.name.as_str(), p.var))
            .collect();
        let program = self.model.program();
        for stmts in [
            &program.transformed_parameters,
            &program.generated_quantities,
        ] {
            for s in stmts {
                if let StmtKind::Decl { var, .. } = &s.kind {
                    let info = &program.vars[var.0 as usize];
                    if matches!(
                        info.origin,
                        Origin::TransformedParameter | Origin::GeneratedQuantity
                    ) {
                        vars.push((info.name.as_str(), *var));
                    }
                }
            }
        }
        vars
    }

    /// The `z` lanes' draws as stored numbers, or `None` when some
    /// variable's layout does not follow from its slot
    /// ([`BatchedModel::stored_draws`]).
    fn stored(&self, st: &State, z: usize) -> Option<StoredDraws> {
        let mut vars = Vec::new();
        let mut slots = Vec::new();
        for (name, var) in self.output_vars() {
            let slot = st.vars[var.0 as usize].as_deref()?;
            let (dims, is_int) = match slot {
                Slot::Real(d) => (d.shape.stored_dims()?, false),
                Slot::Int(d) => (d.shape.stored_dims()?, true),
                Slot::Shared(v) => v.stored_dims()?,
                Slot::Tuple(_) | Slot::PerLane(_) => return None,
            };
            vars.push(StoredVar {
                name: name.to_string(),
                dims,
                is_int,
            });
            slots.push(slot);
        }
        let total = vars.iter().map(|v| v.dims.iter().product::<usize>()).sum();
        let mut memory = Vec::new();
        let lanes = (0..z)
            .map(|l| {
                if let LaneStatus::Failed(e) = &st.status[l] {
                    return Err((**e).clone());
                }
                let mut numbers = Vec::with_capacity(total);
                for slot in &slots {
                    match slot {
                        Slot::Real(d) if d.shape.is_row_major() => numbers.extend(d.lane(l)),
                        Slot::Real(d) => {
                            memory.clear();
                            memory.extend(d.lane(l));
                            d.shape.push_row_major(&memory, &mut numbers);
                        }
                        // int slots hold ints and arrays of them: no matrix
                        Slot::Int(d) => numbers.extend(d.lane(l).map(|i| i as f64)),
                        Slot::Shared(v) => v.flatten_row_major(&mut numbers),
                        Slot::Tuple(_) | Slot::PerLane(_) => unreachable!("refused above"),
                    }
                }
                Ok(numbers)
            })
            .collect();
        let printed = (0..z)
            .map(|l| match &st.status[l] {
                LaneStatus::Failed(_) => Vec::new(),
                _ => st.lane_output(l).to_vec(),
            })
            .collect();
        Some(StoredDraws {
            vars,
            lanes,
            printed,
        })
    }

    /// Run `job` on sub-batches of `z` lanes (ranges of lane indices), in
    /// parallel when configured, and concatenate the lanes' results.
    fn split<T: Send>(
        &self,
        z: usize,
        job: impl Fn(std::ops::Range<usize>) -> Result<Vec<T>> + Sync,
    ) -> Result<Vec<T>> {
        let threads = match &self.pool {
            Some(pool) if self.calls => pool.current_num_threads(),
            // The caller is one of them.
            Some(pool) => pool.current_num_threads() + 1,
            None => 1,
        };
        let mut size = z.div_ceil(threads.max(1)).max(1);
        if self.config.max_sub_batch > 0 {
            size = size.min(self.config.max_sub_batch);
        }
        let ranges: Vec<_> = (0..z).step_by(size).map(|s| s..(s + size).min(z)).collect();
        let results: Vec<Result<Vec<T>>> = match &self.pool {
            // No host recursion: the calling thread shares the
            // sub-batches with the pool's threads.
            Some(pool) if ranges.len() > 1 && !self.calls => {
                super::split::split_here(pool, &ranges, &job)
            }
            Some(pool) if ranges.len() > 1 => {
                use rayon::prelude::*;
                pool.install(|| ranges.into_par_iter().map(&job).collect())
            }
            // Host recursion needs a deep stack: this thread's when it is
            // a batch thread (the sampler's, calling the model's gradient),
            // else the pool's (a hand-over to another thread per call).
            Some(pool) if self.calls && !on_deep_stack() => {
                pool.install(|| ranges.into_iter().map(&job).collect())
            }
            _ => ranges.into_iter().map(&job).collect(),
        };
        let mut out = Vec::with_capacity(z);
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

/// The points `thetas` (one per lane) as `[coordinate][lane]` columns of
/// `n` coordinates, straight (no padded copy per lane): a point of another
/// length is padded with zeros or cut, and its lane's error returned.
fn theta_columns(thetas: &[Vec<f64>], n: usize) -> (Vec<f64>, Vec<(usize, RuntimeError)>) {
    let z = thetas.len();
    let mut columns = vec![0.0; n * z];
    let mut short = Vec::new();
    for (l, t) in thetas.iter().enumerate() {
        for (k, &x) in t.iter().take(n).enumerate() {
            columns[k * z + l] = x;
        }
        if t.len() != n {
            let msg = format!("expected {n} unconstrained parameters, found {}", t.len());
            short.push((l, RuntimeError::fatal(msg)));
        }
    }
    (columns, short)
}
