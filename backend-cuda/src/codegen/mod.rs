//! CUDA C for gradient programs in the CFG IR ([`language::batch::cfg`]):
//! for each basic block of the gradient entry, one fused kernel per run of
//! supported ops, one thread per lane.
//!
//! # Kernel ABI
//! Every kernel is
//! `extern "C" __global__ void NAME(double* state, const double* data,
//! const int* active, int n_active, int n_lanes)`; thread `t < n_active`
//! runs lane `active[t]` (see [`crate::device`]). The lane state and data
//! layout is [`Layout`]'s.
//!
//! # What is generated
//! Ops are grouped into maximal runs of supported statements (`let`,
//! declarations, whole-variable assignment and `+=`, `target +=`) over real
//! scalars and containers with elementwise primitives and their
//! derivatives, scalar broadcast, `sum`/`dot_self`/`dot_product`, and the
//! distributions' argument checks (a failed check sets the lane's status
//! slot and stops the lane). Every other op — the parameter transform and
//! its reverse, indexing, linear algebra, stack pushes and pops — is listed
//! in [`Generated::not_generated`] with the reason and gets a comment in the
//! source, never code that computes something else. Terminators (jumps,
//! branches, calls, returns) are the host loop's business; user functions'
//! blocks are not generated yet (their frames are not laid out).

mod emit;
pub mod frames;
pub mod layout;
mod scalar;

use std::ops::Range;

use language::batch::GRADIENT_ENTRY;
use language::batch::cfg::{self, FunctionKind};
use language::mir::print::print_stmt;
use language::mir::{Program, Stmt};

use emit::Emitter;
pub use emit::real_literal;
pub use layout::{ERROR_STATUS, Layout, Place, REJECTED_STATUS, STATUS_SLOT, TARGET_SLOT};

/// A generated kernel and the ops of the basic block it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub block: usize,
    pub ops: Range<usize>,
}

/// An op (or a whole function) no kernel runs, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotGenerated {
    /// `function/bK/opN` or `function`.
    pub at: String,
    pub reason: String,
}

#[derive(Clone, Debug)]
pub struct Generated {
    /// One CUDA C translation unit: the prelude, then the kernels (and
    /// comments for what is not generated) in block order.
    pub source: String,
    /// The same without the prelude (to put several programs' kernels in
    /// one translation unit after one [`prelude`]).
    pub kernels_source: String,
    pub kernels: Vec<Kernel>,
    pub not_generated: Vec<NotGenerated>,
    /// Ops of the gradient entry, in all blocks.
    pub n_ops: usize,
}

impl Generated {
    pub fn kernel_names(&self) -> Vec<&str> {
        self.kernels.iter().map(|k| k.name.as_str()).collect()
    }

    pub fn ops_generated(&self) -> usize {
        self.kernels.iter().map(|k| k.ops.len()).sum()
    }
}

/// The helpers and primitive functions every kernel file starts with.
pub fn prelude() -> String {
    scalar::prelude()
}

/// Generate the kernels of `p`'s gradient entry for the sizes in `layout`,
/// named `bat_bK_N` (block K, N-th run of the block).
pub fn generate(p: &cfg::Program, layout: &Layout) -> Generated {
    generate_named(p, layout, "bat")
}

/// [`generate`] with kernels named `PREFIX_bK_N`.
pub fn generate_named(p: &cfg::Program, layout: &Layout, prefix: &str) -> Generated {
    let mut out = Generated {
        source: String::new(),
        kernels_source: String::new(),
        kernels: Vec::new(),
        not_generated: Vec::new(),
        n_ops: 0,
    };
    for f in &p.functions {
        if f.kind == FunctionKind::User {
            let reason = "user function frames are not laid out yet".to_string();
            out.kernels_source.push_str(&format!(
                "\n// not generated: function {} ({reason})\n",
                f.name
            ));
            out.not_generated.push(NotGenerated {
                at: f.name.clone(),
                reason,
            });
        }
    }
    let Some(entry) = p.entry(GRADIENT_ENTRY) else {
        out.source = prelude();
        return out;
    };
    let function = p.function(entry);
    for (b, block) in function.blocks.iter().enumerate() {
        out.n_ops += block.ops.len();
        out.kernels_source
            .push_str(&format!("\n// ---- block b{b}\n"));
        let mut runs = 0;
        let mut run: Option<(usize, Emitter)> = None;
        let mut finish = |run: Option<(usize, Emitter)>, end: usize, out: &mut Generated| {
            if let Some((start, emitter)) = run {
                let name = format!("{prefix}_b{b}_{runs}");
                runs += 1;
                out.kernels_source
                    .push_str(&kernel_text(&name, &emitter.lines));
                out.kernels.push(Kernel {
                    name,
                    block: b,
                    ops: start..end,
                });
            }
        };
        for (i, op) in block.ops.iter().enumerate() {
            let mut trial = Emitter::new(&p.mir, layout);
            match trial.statement(op) {
                Ok(()) => {
                    let (_, emitter) = run.get_or_insert_with(|| (i, Emitter::new(&p.mir, layout)));
                    emitter.lines.push(format!("// {}", first_line(&p.mir, op)));
                    emitter
                        .statement(op)
                        .expect("emitting an op depends only on the op and the layout");
                }
                Err(reason) => {
                    finish(run.take(), i, &mut out);
                    out.kernels_source.push_str(&format!(
                        "// not generated: {} ({reason})\n",
                        first_line(&p.mir, op)
                    ));
                    out.not_generated.push(NotGenerated {
                        at: format!("{}/b{b}/op{i}", function.name),
                        reason,
                    });
                }
            }
        }
        finish(run.take(), block.ops.len(), &mut out);
    }
    out.source = format!("{}{}", prelude(), out.kernels_source);
    out
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
        "extern \"C\" __global__ void {name}(double* __restrict__ state, const double* __restrict__ data,\n    const int* __restrict__ active, int n_active, int n_lanes) {{\n"
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
