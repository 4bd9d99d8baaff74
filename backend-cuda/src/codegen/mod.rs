//! CUDA C for gradient programs: one fused kernel per straight-line run of
//! statements, one thread per lane.
//!
//! # Kernel ABI
//! Every kernel is
//! `extern "C" __global__ void NAME(double* state, const double* data,
//! const int* active, int n_active, int n_lanes)`; thread `t < n_active`
//! runs lane `active[t]` (see [`crate::device`]). The lane state and data
//! layout is [`Layout`]'s.
//!
//! # What is generated
//! Statements are grouped into maximal runs of supported statements
//! (`let`, declarations, whole-variable assignment and `+=`, `target +=`)
//! over real scalars and containers with elementwise primitives and their
//! derivatives, scalar broadcast, `sum`/`dot_self`/`dot_product`, and the
//! distributions' argument checks (a failed check sets the lane's status
//! slot and stops the lane). Every other statement — control flow, the
//! parameter transform and its reverse, indexing, linear algebra, stacks —
//! is listed in [`Generated::not_generated`] with the reason and gets a
//! comment in the source, never code that computes something else.
//!
//! Until the batching CFG IR is wired in, the blocks are the top-level
//! statements of the gradient body; statements nested in loops and
//! branches are not generated.

mod emit;
pub mod frames;
pub mod layout;
mod scalar;

use std::ops::Range;

use language::ad::GradProgram;
use language::mir::print::print_stmt;
use language::mir::{Program, Stmt};

use emit::Emitter;
pub use emit::real_literal;
pub use layout::{Layout, Place, STATUS_SLOT, TARGET_SLOT};

/// A generated kernel and the statements of the body it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub stmts: Range<usize>,
}

/// A statement of the body that no kernel runs, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotGenerated {
    pub stmt: usize,
    pub reason: String,
}

#[derive(Clone, Debug)]
pub struct Generated {
    /// One CUDA C translation unit: the prelude, then the kernels (and
    /// comments for the statements not generated) in body order.
    pub source: String,
    /// The same without the prelude (to put several programs' kernels in
    /// one translation unit after one [`prelude`]).
    pub kernels_source: String,
    pub kernels: Vec<Kernel>,
    pub not_generated: Vec<NotGenerated>,
}

impl Generated {
    pub fn kernel_names(&self) -> Vec<&str> {
        self.kernels.iter().map(|k| k.name.as_str()).collect()
    }
}

/// The helpers and primitive functions every kernel file starts with.
pub fn prelude() -> String {
    scalar::prelude()
}

/// Generate the kernels of `g`'s body for the sizes in `layout`, named
/// `bat_block_K`.
pub fn generate(g: &GradProgram, layout: &Layout) -> Generated {
    generate_named(g, layout, "bat")
}

/// [`generate`] with kernels named `PREFIX_block_K`.
pub fn generate_named(g: &GradProgram, layout: &Layout, prefix: &str) -> Generated {
    let mut source = String::new();
    let mut kernels = Vec::new();
    let mut not_generated = Vec::new();
    let mut run: Option<(usize, Emitter)> = None;
    let finish = |run: Option<(usize, Emitter)>,
                  end: usize,
                  source: &mut String,
                  kernels: &mut Vec<Kernel>| {
        if let Some((start, emitter)) = run {
            let name = format!("{prefix}_block_{}", kernels.len());
            source.push_str(&kernel_text(&name, &emitter.lines));
            kernels.push(Kernel {
                name,
                stmts: start..end,
            });
        }
    };
    for (i, stmt) in g.body.iter().enumerate() {
        let mut trial = Emitter::new(&g.program, layout);
        match trial.statement(stmt) {
            Ok(()) => {
                let (_, emitter) = run.get_or_insert_with(|| (i, Emitter::new(&g.program, layout)));
                emitter
                    .lines
                    .push(format!("// {}", first_line(&g.program, stmt)));
                emitter
                    .statement(stmt)
                    .expect("emitting a statement depends only on the statement and layout");
            }
            Err(reason) => {
                finish(run.take(), i, &mut source, &mut kernels);
                source.push_str(&format!(
                    "\n// not generated: {} ({reason})\n",
                    first_line(&g.program, stmt)
                ));
                not_generated.push(NotGenerated { stmt: i, reason });
            }
        }
    }
    finish(run.take(), g.body.len(), &mut source, &mut kernels);
    Generated {
        source: format!("{}{source}", scalar::prelude()),
        kernels_source: source,
        kernels,
        not_generated,
    }
}

fn first_line(program: &Program, stmt: &Stmt) -> String {
    let text = print_stmt(program, stmt);
    let first = text.lines().next().unwrap_or("").trim();
    if text.lines().count() > 1 {
        format!("{first} ...")
    } else {
        first.to_string()
    }
}

fn kernel_text(name: &str, lines: &[String]) -> String {
    let mut out = format!(
        "\nextern \"C\" __global__ void {name}(double* __restrict__ state, const double* __restrict__ data,\n    const int* __restrict__ active, int n_active, int n_lanes) {{\n"
    );
    out.push_str("    const int t = blockIdx.x * blockDim.x + threadIdx.x;\n");
    out.push_str("    if (t >= n_active) return;\n");
    out.push_str("    const int lane = active[t];\n");
    out.push_str(&format!("    if (S({STATUS_SLOT}) != 0.0) return;\n"));
    for line in lines.iter().flat_map(|l| l.lines()) {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n");
    out
}
