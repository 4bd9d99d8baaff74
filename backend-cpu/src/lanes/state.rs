//! The state of one batch: variables, per-lane target, AD stacks, random
//! streams, gradient input/output, status and printed output.

use super::{Lanes, Slot};
use language::batch::pc::liveness::VarSet;
use language::mir::{Program, VarId};
use language::value::Value;
use runtime::gradient::LaneWork;
use runtime::{ParamLayout, Rng, RuntimeError};
use std::sync::Arc;

/// The variables a run of straight-line ops reads or writes (sorted), the
/// ones it writes, and whether it uses the AD stacks: what running it on
/// a gathered sub-batch must carry there and back.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    pub vars: Vec<VarId>,
    pub written: Vec<VarId>,
    pub ad_stacks: bool,
}

/// How a lane's evaluation stands.
#[derive(Clone, Debug, PartialEq)]
pub enum LaneStatus {
    Running,
    /// Failed with the interpreter's error (a rejection when
    /// [`RuntimeError::is_rejection`], otherwise fatal). Boxed: a status is
    /// then one word, and a batch's `vec![Running; z]` is set up at every
    /// evaluation.
    Failed(Box<RuntimeError>),
}

/// A batch of `z` lanes running one program.
///
/// Gradient input θ and output are `[coordinate][lane]` like a dense
/// vector slot; stacks hold one stack of values per lane.
#[derive(Clone)]
pub struct State<'p> {
    pub program: &'p Program,
    pub z: usize,
    /// By [`VarId`]; `None` until the variable is set. Shared by `Arc` so
    /// reading a variable never copies it (written in place when unique).
    pub vars: Vec<Option<Arc<Slot>>>,
    pub target: Vec<f64>,
    /// Add log |J| of the parameter transforms (the same for all lanes).
    pub jacobian: bool,
    /// `stacks[stack][lane]`.
    pub stacks: Vec<Vec<Vec<Value>>>,
    /// Per-lane random streams (`None`: drawing is an error, as in the
    /// interpreter's log density). Empty until a lane gets a stream: a
    /// gradient program has none, and setting up a thousand `None`s (and
    /// [`State::output`]'s empty lists) for every batch was ~7% of eight
    /// schools' batched gradient.
    rng: Vec<Option<Rng>>,
    /// Parameter layout of the unconstrained vector (gradient programs).
    pub layout: Vec<ParamLayout>,
    /// Unconstrained input, `[coordinate][lane]`.
    pub theta: Vec<f64>,
    /// Gradient output, `[coordinate][lane]`.
    pub gradient: Vec<f64>,
    pub status: Vec<LaneStatus>,
    /// Lines printed, per lane (empty until a lane prints).
    output: Vec<Vec<String>>,
    /// Run shared-matrix × per-lane-vector products as one lane-parallel
    /// matrix product (bit-identical to the lane-by-lane loop; off: lane
    /// by lane).
    pub gemm: bool,
    /// Variables that lanes other than the ones running now may still
    /// read (`None`: any variable). A whole-variable write of a variable
    /// outside this set takes the new slot as it is instead of merging
    /// the running lanes into the old one: no other lane needs the old
    /// values (the program-counter executor sets it from liveness).
    pub read_elsewhere: Option<VarSet>,
    /// The program's variables whose `log_inv_logit` and `inv_logit` of
    /// the negation are computed in one pass, and the second kept
    /// (default: none).
    pub logistic: crate::eval::logistic_pair::LogisticPairs,
    /// Which statements' reads take the variable's value instead of
    /// sharing it ([`crate::exec::last_reads`]; default: none).
    pub last_reads: Option<Arc<crate::exec::last_reads::LastReads>>,
    /// The variables the statement running now moves (set by the block
    /// executor from `last_reads`; a buffer of the state's own, not the
    /// table's shared slices, whose reference counts both threads of a
    /// batch would write).
    pub moving: Vec<VarId>,
    /// Number of failed lanes (0: every lane is running).
    failures: usize,
    /// Lane slots the statements ran over, and how many were running
    /// lanes.
    pub work: LaneWork,
}

impl<'p> State<'p> {
    /// A batch of `z` lanes whose data and transformed data are `globals`
    /// (indexed by [`VarId`], shared by every lane).
    pub fn new(program: &'p Program, globals: &[Option<Value>], z: usize) -> State<'p> {
        let mut vars = vec![None; program.vars.len()];
        for (i, g) in globals.iter().enumerate() {
            if let Some(v) = g {
                vars[i] = Some(Arc::new(Slot::Shared(Arc::new(v.clone()))));
            }
        }
        State::with_vars(program, vars, z)
    }

    /// As [`State::new`] with the variable slots given (e.g. shared
    /// globals kept between evaluations without copying).
    pub fn with_vars(program: &'p Program, vars: Vec<Option<Arc<Slot>>>, z: usize) -> State<'p> {
        State {
            program,
            z,
            vars,
            target: vec![0.0; z],
            jacobian: true,
            stacks: Vec::new(),
            rng: Vec::new(),
            layout: Vec::new(),
            theta: Vec::new(),
            gradient: Vec::new(),
            status: vec![LaneStatus::Running; z],
            output: Vec::new(),
            gemm: true,
            read_elsewhere: None,
            logistic: Default::default(),
            last_reads: None,
            moving: Vec::new(),
            failures: 0,
            work: LaneWork::default(),
        }
    }

    /// Prepare for a gradient program: parameter layout, `num_stacks`
    /// empty stacks, and θ given per lane (`thetas[lane]`).
    pub fn set_gradient_input(
        &mut self,
        layout: &[ParamLayout],
        num_stacks: usize,
        thetas: &[Vec<f64>],
    ) {
        let n: usize = layout.iter().map(|p| p.unconstrained_len).sum();
        let mut columns = vec![0.0; n * self.z];
        for (l, th) in thetas.iter().enumerate() {
            for (k, x) in th.iter().enumerate() {
                columns[k * self.z + l] = *x;
            }
        }
        self.set_gradient_columns(layout, num_stacks, columns);
    }

    /// As [`State::set_gradient_input`] with θ already `[coordinate][lane]`
    /// (`theta.len()` is the number of coordinates times Z).
    pub fn set_gradient_columns(
        &mut self,
        layout: &[ParamLayout],
        num_stacks: usize,
        theta: Vec<f64>,
    ) {
        let n: usize = layout.iter().map(|p| p.unconstrained_len).sum();
        assert_eq!(theta.len(), n * self.z, "θ columns of the wrong size");
        self.layout = layout.to_vec();
        // Not `vec![vec![…; z]; num_stacks]`: that builds (and drops) one
        // lane list even for no stacks, the common case (~3% of eight
        // schools' batched gradient).
        self.stacks = (0..num_stacks).map(|_| vec![Vec::new(); self.z]).collect();
        self.theta = theta;
        self.gradient = vec![0.0; n * self.z];
    }

    /// Every lane's random stream, in lane order.
    pub fn set_rngs(&mut self, rngs: impl IntoIterator<Item = Rng>) {
        self.rng = rngs.into_iter().map(Some).collect();
        self.rng.resize(self.z, None);
    }

    /// Lane `l`'s random stream (`None`: drawing is an error).
    pub fn set_rng(&mut self, l: usize, rng: Option<Rng>) {
        if rng.is_some() || !self.rng.is_empty() {
            *lazy_lane(&mut self.rng, self.z, l) = rng;
        }
    }

    /// Lane `l`'s random stream, to draw from.
    pub fn rng_mut(&mut self, l: usize) -> Option<&mut Rng> {
        self.rng.get_mut(l).and_then(Option::as_mut)
    }

    /// A line lane `l` printed.
    pub fn print(&mut self, l: usize, line: String) {
        lazy_lane(&mut self.output, self.z, l).push(line);
    }

    /// The lines lane `l` printed.
    pub fn lane_output(&self, l: usize) -> &[String] {
        self.output.get(l).map_or(&[], Vec::as_slice)
    }

    fn set_output(&mut self, l: usize, lines: Vec<String>) {
        if !lines.is_empty() || !self.output.is_empty() {
            *lazy_lane(&mut self.output, self.z, l) = lines;
        }
    }

    /// Number of unconstrained coordinates.
    pub fn num_unconstrained(&self) -> usize {
        self.layout.iter().map(|p| p.unconstrained_len).sum()
    }

    /// Lane `l`'s gradient output.
    pub fn lane_gradient(&self, l: usize) -> Vec<f64> {
        (0..self.num_unconstrained())
            .map(|k| self.gradient[k * self.z + l])
            .collect()
    }

    pub fn name(&self, var: VarId) -> &str {
        &self.program.vars[var.0 as usize].name
    }

    pub fn is_running(&self, l: usize) -> bool {
        matches!(self.status[l], LaneStatus::Running)
    }

    /// Record `err` as lane `l`'s failure unless it already failed (the
    /// first error wins, as the interpreter stops at the first).
    pub fn fail(&mut self, l: usize, err: RuntimeError) {
        if self.is_running(l) {
            self.status[l] = LaneStatus::Failed(Box::new(err));
            self.failures += 1;
        }
    }

    /// Make lane `l` ready for a new invocation: running again (a failure
    /// forgotten), its target zero, no printed output, empty AD stacks.
    /// Its variables keep whatever they hold (every variable is written
    /// before it is read).
    pub fn restart(&mut self, l: usize) {
        if !self.is_running(l) {
            self.status[l] = LaneStatus::Running;
            self.failures -= 1;
        }
        self.target[l] = 0.0;
        if let Some(lines) = self.output.get_mut(l) {
            lines.clear();
        }
        for stack in &mut self.stacks {
            stack[l].clear();
        }
    }

    /// Whether lanes other than the running ones may read `var` later.
    pub fn is_read_elsewhere(&self, var: VarId) -> bool {
        self.read_elsewhere
            .as_ref()
            .is_none_or(|vars| vars.contains(var))
    }

    /// `lanes` without those that have failed.
    pub fn running(&self, lanes: &Lanes) -> Lanes {
        if self.failures == 0 {
            return lanes.clone();
        }
        lanes.retain(|l| self.is_running(l))
    }

    /// A batch of lanes `lanes` of this one (to run a block on fewer lanes
    /// without masking); [`State::scatter`] writes it back.
    pub fn gather(&self, lanes: &Lanes) -> State<'p> {
        self.gather_part(lanes, None, true)
    }

    /// The batch shrunk to `lanes` for good: [`State::gather`] (lane
    /// `lanes[i]` becomes lane `i`, with every variable, stack, stream and
    /// status), keeping the work counted so far.
    pub fn compact(&self, lanes: &Lanes) -> State<'p> {
        let mut compacted = self.gather(lanes);
        compacted.work = self.work;
        compacted
    }

    /// As [`State::gather`] for a block that uses only the variables of
    /// `footprint`: the others are left unset (shared ones are kept, they
    /// cost nothing), and the AD stacks are gathered only if it uses them.
    pub fn gather_footprint(&self, lanes: &Lanes, footprint: &Footprint) -> State<'p> {
        self.gather_part(lanes, Some(&footprint.vars), footprint.ad_stacks)
    }

    fn gather_part(&self, lanes: &Lanes, only: Option<&[VarId]>, ad_stacks: bool) -> State<'p> {
        let ix = lanes.indices();
        let pick_cols = |v: &[f64]| -> Vec<f64> {
            if self.z == 0 {
                return Vec::new();
            }
            let n = v.len() / self.z;
            let mut out = Vec::with_capacity(n * ix.len());
            for k in 0..n {
                out.extend(ix.iter().map(|&l| v[k * self.z + l]));
            }
            out
        };
        State {
            program: self.program,
            z: ix.len(),
            vars: self
                .vars
                .iter()
                .enumerate()
                .map(|(v, s)| {
                    let s = s.as_ref()?;
                    let wanted =
                        only.is_none_or(|vars| vars.binary_search(&VarId(v as u32)).is_ok());
                    if s.is_shared() {
                        Some(s.clone())
                    } else if wanted {
                        Some(Arc::new(s.gather(ix)))
                    } else {
                        None
                    }
                })
                .collect(),
            target: ix.iter().map(|&l| self.target[l]).collect(),
            jacobian: self.jacobian,
            stacks: if ad_stacks {
                self.stacks
                    .iter()
                    .map(|st| ix.iter().map(|&l| st[l].clone()).collect())
                    .collect()
            } else {
                Vec::new()
            },
            rng: gather_lazy(&self.rng, ix),
            layout: self.layout.clone(),
            theta: pick_cols(&self.theta),
            gradient: pick_cols(&self.gradient),
            status: ix.iter().map(|&l| self.status[l].clone()).collect(),
            output: gather_lazy(&self.output, ix),
            gemm: self.gemm,
            read_elsewhere: None,
            logistic: self.logistic.fresh(),
            last_reads: self.last_reads.clone(),
            moving: Vec::new(),
            failures: ix
                .iter()
                .filter(|&&l| !matches!(self.status[l], LaneStatus::Running))
                .count(),
            // Counted by the batch that gathered (block::run_ops).
            work: LaneWork::default(),
        }
    }

    /// Write back a batch made by [`State::gather`] with the same `lanes`.
    pub fn scatter(&mut self, sub: State<'p>, lanes: &Lanes) {
        self.scatter_part(sub, lanes, None, true)
    }

    /// Write back a batch made by [`State::gather_footprint`] with the same
    /// `lanes` and `footprint`: only the variables it writes.
    pub fn scatter_footprint(&mut self, sub: State<'p>, lanes: &Lanes, footprint: &Footprint) {
        self.scatter_part(sub, lanes, Some(&footprint.written), footprint.ad_stacks)
    }

    fn scatter_part(
        &mut self,
        mut sub: State<'p>,
        lanes: &Lanes,
        only: Option<&[VarId]>,
        ad_stacks: bool,
    ) {
        let ix = lanes.indices();
        let z = self.z;
        let write_back =
            |slot: &mut Option<Arc<Slot>>, new: Option<Arc<Slot>>| match (slot.as_mut(), new) {
                (_, None) => {}
                (None, Some(new)) => *slot = Some(Arc::new(new.gather_back(ix, z))),
                (Some(old), Some(new)) => Arc::make_mut(old).scatter(&new, ix, z),
            };
        match only {
            None => {
                for (slot, new) in self.vars.iter_mut().zip(sub.vars) {
                    write_back(slot, new);
                }
            }
            Some(written) => {
                for v in written {
                    let v = v.0 as usize;
                    write_back(&mut self.vars[v], sub.vars[v].take());
                }
            }
        }
        let z = self.z;
        let n = self.gradient.len() / z.max(1);
        for (i, &l) in ix.iter().enumerate() {
            self.target[l] = sub.target[i];
            for k in 0..n {
                self.gradient[k * z + l] = sub.gradient[k * sub.z + i];
            }
            self.set_rng(l, sub.rng.get(i).cloned().flatten());
            if self.is_running(l) && !matches!(sub.status[i], LaneStatus::Running) {
                self.failures += 1;
            }
            self.status[l] = sub.status[i].clone();
            let lines = sub.output.get_mut(i).map(std::mem::take);
            self.set_output(l, lines.unwrap_or_default());
        }
        if ad_stacks {
            for (st, sub_st) in self.stacks.iter_mut().zip(sub.stacks) {
                for (i, lane_stack) in sub_st.into_iter().enumerate() {
                    st[ix[i]] = lane_stack;
                }
            }
        }
    }
}

impl Slot {
    /// A slot of `z` lanes holding `self` (a gathered slot) at lanes `ix`
    /// and the same values elsewhere (a fresh variable set only there).
    fn gather_back(&self, ix: &[usize], z: usize) -> Slot {
        match self {
            Slot::Shared(v) => Slot::Shared(v.clone()),
            other => {
                let filler = other.lane_value(0);
                let mut values = vec![filler; z];
                for (i, &l) in ix.iter().enumerate() {
                    values[l] = other.lane_value(i);
                }
                Slot::from_lane_values(values)
            }
        }
    }
}

/// Lane `l`'s entry of a per-lane list that stays empty until some lane
/// needs one (the random streams, the printed lines): filled with
/// defaults for all `z` lanes on first use.
fn lazy_lane<T: Clone + Default>(lanes: &mut Vec<T>, z: usize, l: usize) -> &mut T {
    if lanes.is_empty() {
        lanes.resize(z, T::default());
    }
    &mut lanes[l]
}

/// Lanes `ix` of a per-lane list kept empty until used (see [`lazy_lane`]).
fn gather_lazy<T: Clone>(lanes: &[T], ix: &[usize]) -> Vec<T> {
    match lanes.is_empty() {
        true => Vec::new(),
        false => ix.iter().map(|&l| lanes[l].clone()).collect(),
    }
}
