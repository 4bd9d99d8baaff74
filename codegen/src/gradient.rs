//! A gradient program's generated code and what its executors share:
//! the PC program of a gradient CFG with its code sized for a model's
//! data ([`generate`], [`device_program`], [`regenerate`] after an AD stack
//! overflow), the refusal of a program with ops the generator lacks
//! ([`GeneratedCodeError::Refused`], naming the ops and their source
//! positions), and a failure site read back as the error the interpreter
//! would give ([`site_error`]). The CUDA device (`backend_cuda::gradient`)
//! and the native executor (`backend_native::gradient`) both run it.

use language::batch::{cfg, pc};
use language::span::Span;
use runtime::{ErrorKind, Model, RuntimeError};

use crate::program::{self, DeviceProgram};
use crate::{FailKind, NotGenerated, frames, specialise};

/// One lane's outcome: log density and gradient, or the error that stopped it.
pub type LaneGradient = Result<(f64, Vec<f64>), RuntimeError>;

/// An op the device cannot run yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedOp {
    /// Where in the PC program (`function/bK/opN`).
    pub at: String,
    pub reason: String,
    /// The op's statement in the model's source, when it has one.
    pub span: Option<Span>,
}

/// Why a generated program could not be built or run, on the CUDA device
/// or compiled for the host CPU.
#[derive(Debug, thiserror::Error)]
pub enum GeneratedCodeError {
    /// The CUDA device failed (the CUDA backend's `DeviceError`).
    #[error(transparent)]
    Device(Box<dyn std::error::Error + Send + Sync>),
    #[error("the CUDA backend cannot run this model yet: {}", describe(.0))]
    Refused(Vec<RefusedOp>),
    #[error("compiling the model's kernels failed: {0}")]
    Compile(String),
    #[error("{0}")]
    Setup(String),
}

fn describe(ops: &[RefusedOp]) -> String {
    let first = &ops[0];
    let more = if ops.len() > 1 {
        format!(" (and {} more)", ops.len() - 1)
    } else {
        String::new()
    };
    format!("{} at {}{more}", first.reason, first.at)
}

impl GeneratedCodeError {
    /// The refused ops as `line L, column C: `text`: reason` lines of
    /// `source` (the same op and reason once; at most `MAX_LINES`, then a
    /// count of the rest).
    pub fn refused_lines(&self, source: &str) -> Vec<String> {
        const MAX_LINES: usize = 12;
        let GeneratedCodeError::Refused(ops) = self else {
            return Vec::new();
        };
        let mut lines: Vec<String> = Vec::new();
        for op in ops {
            let line = match op.span.filter(|s| s.end > s.start) {
                Some(span) => {
                    let (line, column) = program::position(source, span);
                    let text = source
                        .get(span.start as usize..span.end as usize)
                        .unwrap_or("")
                        .lines()
                        .next()
                        .unwrap_or("");
                    format!("line {line}, column {column}: `{text}`: {}", op.reason)
                }
                None => format!("{}: {}", op.at, op.reason),
            };
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        if lines.len() > MAX_LINES {
            let more = lines.len() - MAX_LINES;
            lines.truncate(MAX_LINES);
            lines.push(format!("... and {more} more"));
        }
        lines
    }
}

/// The PC program of a gradient CFG and its device code for `model`'s
/// data (ops the generator lacks are listed in the program's
/// `not_generated`), with the AD stack capacities it was sized for.
pub fn generate(
    grad_cfg: &cfg::Program,
    model: &Model,
) -> Result<(pc::Program, DeviceProgram, Vec<usize>), GeneratedCodeError> {
    let pc = pc::build(grad_cfg).map_err(|e| GeneratedCodeError::Setup(e.to_string()))?;
    let pc = sized_program(pc, model);
    // AD stacks are sized from the interpreter at a few initial points.
    let capacities = match frames::lanes(model, &pc, 8, 0x5eed) {
        Ok(lanes) if !lanes.is_empty() => frames::stack_capacities(&pc, &lanes),
        _ => vec![64; pc.num_ad_stacks as usize],
    };
    let layout = program::layout(&pc, model, &capacities).map_err(|reason| {
        GeneratedCodeError::Refused(vec![RefusedOp {
            at: "layout".to_string(),
            reason,
            span: None,
        }])
    })?;
    let program = program::generate(&pc, layout);
    Ok((pc, program, capacities))
}

/// `pc`, or if a user function is called with arguments of different
/// sizes (so that its variables have no one size on the device), the
/// program with a copy of such functions per call site
/// ([`specialise::per_call_site`]) when that gives every variable a size.
fn sized_program(pc: pc::Program, model: &Model) -> pc::Program {
    let has_layout =
        |p: &pc::Program| program::layout(p, model, &vec![1; p.num_ad_stacks as usize]).is_ok();
    if has_layout(&pc) {
        return pc;
    }
    match specialise::per_call_site(&pc) {
        Some(copies) if has_layout(&copies) => copies,
        _ => pc,
    }
}

/// [`generate`], refusing a program with any op the generator lacks.
pub fn device_program(
    grad_cfg: &cfg::Program,
    model: &Model,
) -> Result<(pc::Program, DeviceProgram, Vec<usize>), GeneratedCodeError> {
    let (pc, program, capacities) = generate(grad_cfg, model)?;
    refuse_missing(&program.not_generated)?;
    Ok((pc, program, capacities))
}

/// Refuse a program with ops the generator has no device code for (each
/// named with its reason and span).
pub fn refuse_missing(not_generated: &[NotGenerated]) -> Result<(), GeneratedCodeError> {
    if not_generated.is_empty() {
        return Ok(());
    }
    Err(GeneratedCodeError::Refused(
        not_generated
            .iter()
            .map(|n| RefusedOp {
                at: n.at.clone(),
                reason: n.reason.clone(),
                span: n.span,
            })
            .collect(),
    ))
}

/// The device code for other AD stack capacities (after an overflow).
pub fn regenerate(
    pc: &pc::Program,
    model: &Model,
    capacities: &[usize],
) -> Result<DeviceProgram, GeneratedCodeError> {
    let layout = program::layout(pc, model, capacities).map_err(GeneratedCodeError::Setup)?;
    let program = program::generate(pc, layout);
    refuse_missing(&program.not_generated)?;
    Ok(program)
}

/// Failure site `site` of `program` as the error the interpreter would
/// give (None for an unknown site).
pub fn site_error(program: &DeviceProgram, site: usize) -> Option<RuntimeError> {
    let site = program.sites.get(site)?;
    Some(RuntimeError {
        kind: match site.kind {
            FailKind::Rejection => ErrorKind::Rejection,
            FailKind::Constraint => ErrorKind::Constraint,
            FailKind::IndexOutOfRange => ErrorKind::IndexOutOfRange,
            FailKind::Fatal | FailKind::StackOverflow => ErrorKind::Fatal,
        },
        message: site.message.clone(),
        span: Some(site.span),
    })
}
