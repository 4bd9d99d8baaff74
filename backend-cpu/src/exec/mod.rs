//! The batched executors of the CFG IR ([`language::batch::cfg`]): a batch
//! of Z lanes (chains) runs one program, each lane its own control path,
//! every op applied to all lanes that are at it at once.
//!
//! Two ways to batch control flow (Radul et al. 2020):
//! - [`Batching::Local`] — local static autobatching (Alg. 1, TFP's
//!   stackless `execute`): within one invocation of a function, lanes wait
//!   at program points (blocks); the [`BlockChoice`] heuristic picks the
//!   next block among those with waiting lanes, which run it together with
//!   a mask. A call runs the callee by host recursion with the lanes that
//!   took it; each recursion level has its own frame (the callee's
//!   parameters and locals are saved before and restored after).
//! - [`Batching::ProgramCounter`] — program-counter autobatching (Alg. 2)
//!   over the PC IR: every lane has a program counter into the one merged
//!   block graph of all functions and its own return-address stack; calls
//!   and returns are ordinary steps, so lanes at different recursion depths
//!   run a block together. Saved values live on per-variable,
//!   per-lane stacks as the PC IR ([`language::batch::pc`]) says: only
//!   variables live across a recursive call have one; no host recursion.
//!
//! Both run each block's ops either masked (all lanes' storage, writes to
//! the active lanes only) or on a gathered sub-batch of the active lanes,
//! chosen per block by the share of active lanes
//! ([`ExecConfig::gather_below`]).
//!
//! # Contract
//! For every lane, the result (value or error, target, gradient, printed
//! output, random stream) is exactly the scalar CFG runner's
//! (`Model::*_cfg`; for program-counter batching the PC runner's,
//! `Model::*_pc`, which agrees with it) for that lane alone, whatever the other
//! lanes of its batch do; a lane that fails (reject, domain error, too deep
//! recursion) abandons the invocation and reports its error. The stack
//! depth limit is the interpreter's [`runtime::MAX_CALL_DEPTH`]
//! unless configured, with the interpreter's message (naming the function
//! and the depth).
//!
//! Known difference: reading a function-local variable before any
//! statement set it is an error in the interpreter; the executors reuse
//! the variable's storage, so such a read (which the CFG lowering never
//! produces: locals are declared before use) is not detected here.

mod block;
mod flow;
mod host;
mod iterations;
pub mod last_reads;
mod local;
mod model;
mod pc;
pub mod profile;
mod schedule;
mod split;

pub use host::{BatchAnswer, BatchHost, NoHost};
pub use model::{BatchedModel, KeptDraws, LaneResult, LogDensityGradient, StoredDraws, StoredVar};
pub use schedule::{
    BlockChoice, EarliestFirst, FurthestFromBarrier, MostWaiting, UpstreamFirst, Waiting,
};

use crate::eval::BatchError;
use language::batch::cfg::Program;
use language::mir::FunId;
use std::fmt;
use std::sync::Arc;

/// How control flow is batched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batching {
    /// Local static autobatching (host recursion for calls).
    Local,
    /// Program-counter autobatching (explicit stacks).
    ProgramCounter,
}

impl Batching {
    pub fn name(self) -> &'static str {
        match self {
            Batching::Local => "local",
            Batching::ProgramCounter => "pc",
        }
    }
}

/// Settings of an executor run.
#[derive(Clone, Debug)]
pub struct ExecConfig {
    pub batching: Batching,
    /// Which waiting block runs next.
    pub choice: Arc<dyn BlockChoice>,
    /// A block whose active lanes are fewer than this share of the batch
    /// runs on a gathered sub-batch; otherwise masked. 0 never gathers.
    pub gather_below: f64,
    /// Sub-batches run in parallel on this many threads (0: one per core).
    pub threads: usize,
    /// Lanes per sub-batch at most (0: the batch split evenly over the
    /// threads).
    pub max_sub_batch: usize,
    /// Nested user-function calls allowed per lane.
    pub max_depth: usize,
    /// Shared-matrix × per-lane-vector products as one lane-parallel
    /// matrix product (bit-identical to the lane-by-lane loop; off: lane
    /// by lane).
    pub gemm: bool,
    /// External functions the host synchronizes lanes at: a block that
    /// calls one runs only when no other block has waiting lanes, so one
    /// host call serves every lane headed there (a sampler's gradient).
    pub synchronize_at: Vec<String>,
}

impl Default for ExecConfig {
    fn default() -> ExecConfig {
        ExecConfig {
            batching: Batching::Local,
            choice: Arc::new(EarliestFirst),
            gather_below: 0.25,
            threads: 1,
            max_sub_batch: 0,
            max_depth: runtime::MAX_CALL_DEPTH,
            gemm: true,
            synchronize_at: Vec::new(),
        }
    }
}

/// A failure of the executor itself (not of a lane: lanes fail with
/// their own runtime errors).
#[derive(Clone, Debug, PartialEq)]
pub enum ExecError {
    /// The batched evaluator refused an op (a lowering bug).
    Batch(BatchError),
    /// The program has no such entry or function, or the call is malformed.
    Setup(String),
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Batch(e) => write!(f, "{e}"),
            ExecError::Setup(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ExecError {}

impl From<BatchError> for ExecError {
    fn from(e: BatchError) -> ExecError {
        ExecError::Batch(e)
    }
}

pub type Result<T> = std::result::Result<T, ExecError>;

/// Nested calls a run of `f` starts at: a user function run directly is
/// itself one call (as when an entry calls it).
pub(crate) fn base_depth(p: &Program, f: FunId) -> usize {
    usize::from(p.function(f).kind == language::batch::cfg::FunctionKind::User)
}
