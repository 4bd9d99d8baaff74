//! A whole program run for every lane from one entry function — bat's
//! sampler program (`nuts.stan`) for every chain — and what its executors
//! share: its generated code ([`generate`], [`runnable_program`]), the
//! entry's arguments packed for the lanes ([`pack_entry_args`]), the
//! records of external calls without a result handed to a [`RecordHost`],
//! and each lane's outcome read back from its slots ([`lane_outcomes`]).
//! The CUDA device (`backend_cuda::sampler`) and the native executor
//! (`backend_native::sampler`) both run it.

use language::batch::{cfg, pc};
use language::value::Value;
use runtime::{ErrorKind, RuntimeError};

use crate::entry::{self, EntryProgram};
use crate::gradient::{GeneratedCodeError, RefusedOp, refuse_missing};
use crate::program::{
    GRADIENT_EVALUATIONS, GRADIENT_FAILED_SITE, LAST_GRADIENT_SITE, RECORD_OVERFLOW_SITE,
};
use crate::shape::{Inner, Shape};
use crate::{FailKind, SITE_SLOT, STATUS_SLOT};

/// The external function answered by the model's gradient program.
pub const GRADIENT_FUNCTION: &str = "model_log_density_gradient";

/// Receives the records of external calls without a result.
///
/// One of three ways an executor hands the host an external call, each
/// for its own representation of the arguments (`Host`: the interpreter's
/// values; `BatchHost`: a batch's slots; `RecordHost`: compiled code's
/// record numbers); the `bat` crate's `sampler::host` says why they are
/// not one trait.
pub trait RecordHost {
    /// Lane `lane` called `function` with `args`; an error stops the lane.
    fn record(&mut self, lane: usize, function: &str, args: Vec<Value>)
    -> Result<(), RuntimeError>;

    /// [`RecordHost::record`] of a call whose arguments come as numbers
    /// laid out by `shapes` (a compiled sampler's record buffer: each
    /// argument's elements in turn, ints as reals). By default they become
    /// values ([`values`]); a host can read the numbers directly instead.
    fn record_numbers(
        &mut self,
        lane: usize,
        function: &str,
        shapes: &[Shape],
        numbers: &[f64],
    ) -> Result<(), RuntimeError> {
        self.record(lane, function, values(shapes, numbers))
    }

    /// Finish records the host kept for later (all of them when `all`,
    /// else as many as it likes): the lanes whose kept records failed,
    /// with their errors (they stop). The native executor calls it
    /// between gradient evaluations; hosts that finish every record at
    /// once keep nothing.
    fn flush(&mut self, all: bool) -> Vec<(usize, RuntimeError)> {
        let _ = all;
        Vec::new()
    }
}

/// How one lane ended: its gradient evaluations, or its error with the
/// last failed gradient evaluation (which explains a failed
/// initialization).
pub type LaneOutcome = Result<u64, (RuntimeError, Option<RuntimeError>)>;

/// [`generate`], refusing a program with an op the generator lacks or an
/// external call other than the gradient that returns a value.
pub fn runnable_program(
    program_cfg: &cfg::Program,
    entry: &str,
    params: &[Shape],
) -> Result<EntryProgram, GeneratedCodeError> {
    let program = generate(program_cfg, entry, params)?;
    refuse_missing(&program.not_generated)?;
    if let Some(e) = program
        .externals
        .iter()
        .find(|e| e.answer.is_some() && e.function != GRADIENT_FUNCTION)
    {
        return Err(GeneratedCodeError::Setup(format!(
            "the program's external function {} returns a value (only {GRADIENT_FUNCTION} may)",
            e.function
        )));
    }
    Ok(program)
}

/// The entry's arguments of every lane as `[value][lane]` (checked
/// against the program's parameters).
pub fn pack_entry_args(
    program: &EntryProgram,
    args: &[Vec<Value>],
    chains: &[u32],
    n_lanes: usize,
) -> Result<Vec<f64>, GeneratedCodeError> {
    if args.len() != n_lanes || chains.len() != n_lanes {
        return Err(GeneratedCodeError::Setup(format!(
            "{} argument lists and {} chains for {n_lanes} lanes",
            args.len(),
            chains.len()
        )));
    }
    let width = program.args_width();
    let mut packed_args = vec![0.0; (width * n_lanes).max(1)];
    for (lane, lane_args) in args.iter().enumerate() {
        let mut flat = Vec::new();
        for a in lane_args {
            a.flatten_reals(&mut flat);
        }
        if flat.len() != width {
            return Err(GeneratedCodeError::Setup(format!(
                "lane {lane}: {} argument values, expected {width}",
                flat.len()
            )));
        }
        for (k, x) in flat.into_iter().enumerate() {
            packed_args[k * n_lanes + lane] = x;
        }
    }
    Ok(packed_args)
}

/// Every lane's outcome after a run of `program`: `failed[lane]` the error
/// of a record the host refused, `slot(lane, k)` the lane's slot `k`,
/// `gradient_error(lane, site)` the error of its last failed gradient
/// evaluation (at failure site `site` of the gradient program).
pub fn lane_outcomes(
    program: &EntryProgram,
    failed: Vec<Option<RuntimeError>>,
    slot: impl Fn(usize, usize) -> f64,
    gradient_error: impl Fn(usize, usize) -> Option<RuntimeError>,
) -> Vec<LaneOutcome> {
    let reserved = program.layout.reserved;
    failed
        .into_iter()
        .enumerate()
        .map(|(lane, host_error)| {
            let last_error = match slot(lane, reserved + LAST_GRADIENT_SITE) {
                -2.0 => Some(RuntimeError::rejection(
                    "the log density is not finite".to_string(),
                )),
                x if x >= 0.0 => gradient_error(lane, x as usize),
                _ => None,
            };
            if let Some(e) = host_error {
                return Err((e, last_error));
            }
            let status = slot(lane, STATUS_SLOT);
            if status == 0.0 {
                return Ok(slot(lane, reserved + GRADIENT_EVALUATIONS) as u64);
            }
            let site = slot(lane, SITE_SLOT);
            let error = if site == GRADIENT_FAILED_SITE {
                last_error.clone().unwrap_or_else(|| {
                    RuntimeError::fatal("the model's log density failed".to_string())
                })
            } else if site == RECORD_OVERFLOW_SITE {
                RuntimeError::fatal("internal error: a record buffer overflowed".to_string())
            } else {
                match program.sites.get(site as usize) {
                    Some(s) => RuntimeError {
                        message: s.lane_message(|k| slot(lane, k)),
                        kind: match s.kind {
                            FailKind::Rejection => ErrorKind::Rejection,
                            FailKind::Constraint => ErrorKind::Constraint,
                            FailKind::IndexOutOfRange => ErrorKind::IndexOutOfRange,
                            FailKind::Fatal | FailKind::StackOverflow => ErrorKind::Fatal,
                        },
                        span: Some(s.span),
                    },
                    None => RuntimeError::fatal(format!(
                        "the program reported an unknown failure (status {status}, site {site})"
                    )),
                }
            };
            Err((error, last_error))
        })
        .collect()
}

/// The values of arguments of `shapes` packed in `flat` (a record's: each
/// shape's numbers in turn, ints as reals).
pub fn values(shapes: &[Shape], flat: &[f64]) -> Vec<Value> {
    let mut out = Vec::with_capacity(shapes.len());
    let mut at = 0;
    for shape in shapes {
        let n = shape.len();
        let xs = &flat[at..at + n];
        at += n;
        out.push(match (shape.arrays.as_slice(), shape.inner) {
            ([], Inner::Scalar) if shape.int => Value::Int(xs[0] as i64),
            ([], Inner::Scalar) => Value::Real(xs[0]),
            ([], Inner::Vector(_)) => Value::Vector(xs.to_vec()),
            ([], Inner::RowVector(_)) => Value::RowVector(xs.to_vec()),
            _ => Value::Array(xs.iter().map(|&x| Value::Real(x)).collect()),
        });
    }
    out
}

/// The device code of `program_cfg` run from `entry` (ops it lacks are
/// listed in `not_generated`).
pub fn generate(
    program_cfg: &cfg::Program,
    entry: &str,
    params: &[Shape],
) -> Result<EntryProgram, GeneratedCodeError> {
    let pc = pc::build(program_cfg).map_err(|e| GeneratedCodeError::Setup(e.to_string()))?;
    let globals = vec![None; pc.mir.vars.len()];
    entry::generate(&pc, &globals, entry, params, "smp").map_err(|reason| {
        GeneratedCodeError::Refused(vec![RefusedOp {
            at: "layout".to_string(),
            reason,
            span: None,
        }])
    })
}
