//! bat's code generator: C/CUDA text for programs in the PC IR
//! ([`language::batch::pc`]), one source for both compiled executors — the
//! CUDA device (`backend-cuda`, one thread per lane) and the host CPU
//! (`backend-native`, g++ against the CUDA-on-CPU shim, one loop
//! iteration per lane). For each block of the gradient entry, the kernels
//! that run its ops for the block's active lanes and write each lane's
//! next block ([`program`]); for a whole program run from one entry (the
//! sampler program), the same with call frames, stacks and records
//! ([`entry`]).
//!
//! - [`shape`], [`typing`]: every value's size is fixed by the data set the
//!   kernels are made for, and inferred statically.
//! - [`layout`]: where each value lives (structure-of-arrays lane state,
//!   shared data).
//! - `emit`: CUDA C for straight-line statements, element by element.
//! - [`scalar`]: the elementwise primitives and their derivatives, as
//!   bat-math computes them.
//! - [`rng`]: per-lane Philox-4x32-10 streams, the CPU's bit for bit.
//! - [`ode`]: ODE solves, each lane integrating its own system with the
//!   CPU's Dormand–Prince, Cash–Karp or BDF integrator, operation for
//!   operation (`ode_integrators`, `ode_bdf`).
//! - [`gradient`], [`sampler`]: what every executor of a generated
//!   gradient or sampler program shares — generation sized for a model's
//!   data, refusal of programs with ops the generator lacks
//!   ([`gradient::GeneratedCodeError`]), failures and outcomes read back
//!   as the interpreter's errors, the [`sampler::RecordHost`] that
//!   receives a run's records.
//! - [`shim`]: the CUDA-on-CPU header and the g++ builds of generated code
//!   for the host (the native executors' libraries, the stub driver's
//!   modules).
//!
//! Every op the generator cannot translate is listed in
//! [`program::DeviceProgram::not_generated`] with the reason and gets a
//! `// not generated` comment in the source, never code that computes
//! something else; a program with such an op is not run.

mod emit;
pub mod entry;
pub mod frames;
pub mod gradient;
pub mod layout;
mod linalg;
pub mod ode;
mod ode_bdf;
mod ode_integrators;
pub mod program;
pub mod rng;
pub mod sampler;
pub mod save_stack;
mod scalar;
pub mod shape;
pub mod shim;
pub mod specialise;
pub mod typing;

use language::mir::print::print_stmt;
use language::mir::{Program, Stmt};
use language::span::Span;

pub use emit::{FailKind, LOCAL_LIMIT, MessagePart, Site, real_literal};
pub use layout::{
    ERROR_STATUS, FATAL_STATUS, JACOBIAN_SLOT, Layout, PC_SLOT, Place, REJECTED_STATUS, SITE_SLOT,
    STATUS_SLOT, TARGET_SLOT,
};
pub use program::{DeviceProgram, Launch};

/// An op (or a whole function) no kernel runs, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotGenerated {
    /// `function/bK/opN`, `function/bK/terminator` or `function`.
    pub at: String,
    pub reason: String,
    /// The op's statement in the source, when it has one.
    pub span: Option<Span>,
}

/// The helpers, primitive functions and random streams every kernel file
/// starts with.
pub fn prelude() -> String {
    format!(
        "{}{}{}{}{}",
        scalar::prelude(),
        linalg::LINALG_SOURCE,
        rng::rng_source(),
        ode::ODE_SOURCE,
        ode_bdf::BDF_SOURCE
    )
}

pub(crate) fn first_line(program: &Program, stmt: &Stmt) -> String {
    let text = print_stmt(program, stmt);
    let first = text.lines().next().unwrap_or("").trim();
    if text.lines().count() > 1 {
        format!("{first} ...")
    } else {
        first.to_string()
    }
}

/// A lane kernel around `lines`: thread `t` runs lane `active[t]` unless
/// the lane has stopped.
pub(crate) fn kernel_text(name: &str, lines: &[String]) -> String {
    kernel_text_with(name, lines, "")
}

/// [`kernel_text`] with more parameters after the lane kernel's (`more`:
/// `", type name"` items). The body is also a device function of its own,
/// `{name}_at(state, data, active, n_active, n_lanes, t, lane, more...)`
/// ([`lane_body_call`]), which the native backend's one-lane dispatchers
/// call directly: the kernel's thread index (three thread-local loads on
/// the host) and `active` lookup cost about 6% of eight schools' sampler
/// instructions at ~12 blocks per gradient.
pub(crate) fn kernel_text_with(name: &str, lines: &[String], more: &str) -> String {
    let mut out = format!(
        "static __device__ inline void {name}_at(double* __restrict__ state, const double* __restrict__ data,\n    const int* __restrict__ active, int n_active, int n_lanes, const int t, const int lane{more}) {{\n"
    );
    out.push_str("    (void)active; (void)n_active; (void)t;\n");
    push_body(&mut out, lines);
    // The extra parameters' names, passed on.
    let names: String = more
        .split(',')
        .filter_map(|p| p.split_whitespace().last())
        .map(|n| format!(", {n}"))
        .collect();
    out.push_str(&format!(
        "extern \"C\" __global__ void {name}(double* __restrict__ state, const double* __restrict__ data,\n    const int* __restrict__ active, int n_active, int n_lanes{more}) {{\n"
    ));
    out.push_str("    const int t = blockIdx.x * blockDim.x + threadIdx.x;\n");
    out.push_str("    if (t >= n_active) return;\n");
    out.push_str(&format!(
        "    {name}_at(state, data, active, n_active, n_lanes, t, active[t]{names});\n}}\n"
    ));
    out
}

/// The C statement running lane kernel `kernel`'s body
/// ([`kernel_text_with`]) for lane `lane` alone, as thread 0 of a launch
/// over `active` = {lane}; `more`: the extra arguments (`", a, b"`).
pub fn lane_body_call(kernel: &str, n_lanes: &str, more: &str) -> String {
    format!("{kernel}_at(state, data, active, 1, {n_lanes}, 0, lane{more});")
}

/// A kernel body: the lane's status check, then `lines`, then the
/// closing brace.
fn push_body(out: &mut String, lines: &[String]) {
    out.push_str(&format!("    if (S({STATUS_SLOT}) != 0.0) return;\n"));
    out.push_str("    int bat_err = 0;\n    (void)bat_err;\n    (void)data;\n");
    for line in lines.iter().flat_map(|l| l.lines()) {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n");
}
