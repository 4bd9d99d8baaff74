//! The whole gradient program (PC IR, [`language::batch::pc`]) as device
//! code: for each block of the gradient entry, the kernels that run its ops
//! over the block's active lanes and then write each lane's next block
//! into its program-counter slot; plus the host loop's helpers (start an
//! evaluation, count and list the lanes waiting at each block, gather the
//! results).
//!
//! A block is a sequence of [`Launch`]es: lane kernels (one thread per
//! active lane) and, for a product of a large data matrix with a per-lane
//! vector written by a statement of its own, a GEMM kernel over (lanes ×
//! rows). The terminator is the last lane kernel's tail. If any op of any
//! block has no generated code, the program is not run on the device: the
//! ops are listed in [`DeviceProgram::not_generated`] (with their source
//! position) and the source shows a `// not generated` comment for each.
//!
//! # Kernel ABIs
//! - lane and GEMM kernels: `(double* state, const double* data,
//!   const int* active, int n_active, int n_lanes)`; lane kernels run
//!   thread `t < n_active` on lane `active[t]`; GEMM kernels also split
//!   rows over `blockIdx.y` ([`GEMM_ROWS_PER_THREAD`] rows per thread).
//! - [`START_KERNEL`]: `(double* state, const double* theta, const int*
//!   active, int n_active, int n_lanes, double jacobian, int entry)`:
//!   resets each active lane (status, target, gradient, stacks), copies its
//!   point from `theta[k * n_active + t]` and sets its program counter.
//! - [`SCHEDULE_KERNEL`]: `(const double* state, int* counts, int* lists,
//!   int n_lanes)`: every running lane adds itself to the list of its next
//!   block (`lists[b * n_lanes + ...]`, `counts[b]` lanes).
//! - [`GATHER_KERNEL`]: `(const double* state, double* out, const int*
//!   active, int n_active, int n_lanes)`: `out[k * n_active + t]` for
//!   k = status, site, target, then the gradient.

use language::batch::GRADIENT_ENTRY;
use language::batch::pc::{self, Op, Terminator};
use language::interp::Model;
use language::mir::{Expr, ExprKind, Prim, Stmt, StmtKind, VarId};
use language::span::Span;

use super::emit::{Emitter, Restore, Site};
use super::layout::{
    JACOBIAN_SLOT, Layout, LayoutBuilder, PC_SLOT, Place, SITE_SLOT, STATUS_SLOT, TARGET_SLOT,
};
use super::shape::{Inner, Shape};
use super::typing::{self, ShapeEnv, Unsupported};
use super::{NotGenerated, first_line, prelude};

/// Kernel names are `PREFIX_start` ([`START_KERNEL`]), `PREFIX_bK_N` (the
/// N-th launch of block K), ...; the prefix is `bat` unless several
/// programs share a translation unit.
pub const START_KERNEL: &str = "start";
pub const SCHEDULE_KERNEL: &str = "schedule";
pub const GATHER_KERNEL: &str = "gather";
/// Rows of a GEMM's output each thread computes.
pub const GEMM_ROWS_PER_THREAD: usize = 8;
/// Data matrices with at least this many elements are multiplied by a
/// GEMM kernel over all lanes; smaller ones by each lane's thread.
pub const GEMM_MIN_ELEMENTS: usize = 2048;
/// Values the gather kernel returns per lane before the gradient.
pub const GATHERED_HEADER: usize = 3;

/// One kernel launch of a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// One thread per active lane.
    Lanes { kernel: String },
    /// One thread per active lane and [`GEMM_ROWS_PER_THREAD`] of `rows`.
    Gemm { kernel: String, rows: usize },
}

impl Launch {
    pub fn kernel(&self) -> &str {
        match self {
            Launch::Lanes { kernel } | Launch::Gemm { kernel, .. } => kernel,
        }
    }
}

/// The device code of a gradient program for one data set.
#[derive(Clone, Debug)]
pub struct DeviceProgram {
    /// One CUDA C translation unit: prelude, host-loop helpers, kernels.
    pub source: String,
    /// The same without the prelude (to put several programs' kernels in
    /// one translation unit after one [`prelude`]).
    pub kernels_source: String,
    /// Of every kernel's name.
    pub prefix: String,
    /// Per PC block (global ids): its launches; empty for blocks of other
    /// functions.
    pub blocks: Vec<Vec<Launch>>,
    /// The gradient entry's first block.
    pub entry: usize,
    pub layout: Layout,
    /// Failure sites, by id (the site slot of a stopped lane).
    pub sites: Vec<Site>,
    /// Ops with no device code (the program cannot run if any).
    pub not_generated: Vec<NotGenerated>,
    /// Unconstrained parameters.
    pub n_params: usize,
}

impl DeviceProgram {
    /// The name of helper kernel `helper` ([`START_KERNEL`], ...).
    pub fn helper(&self, helper: &str) -> String {
        format!("{}_{helper}", self.prefix)
    }

    /// Every kernel name in the source.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names = vec![
            self.helper(START_KERNEL),
            self.helper(SCHEDULE_KERNEL),
            self.helper(GATHER_KERNEL),
        ];
        for launches in &self.blocks {
            names.extend(launches.iter().map(|l| l.kernel().to_string()));
        }
        names
    }

    /// Ops of the gradient entry's blocks, and how many have device code.
    pub fn op_counts(&self, p: &pc::Program) -> (usize, usize) {
        let total: usize = self.entry_blocks(p).map(|b| p.blocks[b].ops.len()).sum();
        let missing = self
            .not_generated
            .iter()
            .filter(|n| n.at.contains("/op"))
            .count();
        (total, total - missing.min(total))
    }

    fn entry_blocks<'p>(&self, p: &'p pc::Program) -> impl Iterator<Item = usize> + 'p {
        let f = p.entry(GRADIENT_ENTRY).map(|f| p.function(f));
        f.into_iter()
            .flat_map(|f| f.first_block.0 as usize..(f.first_block.0 + f.num_blocks) as usize)
    }
}

/// Shapes of every variable and AD stack of `p`, inferred from the data
/// and the statements (repeated until nothing new is learnt, so a value
/// defined in a later block is known where an earlier one reads it).
/// `stack_depths[s]` is the capacity of AD stack `s`.
pub fn layout(
    p: &pc::Program,
    model: &Model,
    stack_depths: &[usize],
) -> Result<Layout, Unsupported> {
    // Hoisted data-only values (`language::simplify`) are data too.
    let globals = model.globals_for(&p.mir);
    let mut builder = LayoutBuilder::new(&p.mir, &globals);
    builder.parameters(model.params())?;
    // The declared return type of each function's result variable.
    let returns_int = |var: VarId| {
        p.functions
            .iter()
            .find(|f| f.result == Some(var))
            .and_then(|f| f.ret.as_ref())
            .is_some_and(|t| t.array_dims().1 == &language::types::Type::Int)
    };
    loop {
        let mut changed = false;
        for block in &p.blocks {
            for op in &block.ops {
                changed |= match op {
                    Op::Stmt(s) => define(&mut builder, s)?,
                    Op::Arg { param, value } => match typing::shape_of(&builder, value) {
                        Ok(shape) => builder.define(*param, shape)?,
                        Err(_) => false,
                    },
                    Op::SetResult { var, value } => match typing::shape_of(&builder, value) {
                        Ok(shape) if returns_int(*var) => builder.define(*var, shape)?,
                        Ok(shape) => builder.define(*var, shape.real())?,
                        Err(_) => false,
                    },
                    Op::Push(_) | Op::Pop(_) | Op::Peek(_) => false,
                };
            }
        }
        if !changed {
            break;
        }
    }
    for block in &p.blocks {
        for op in &block.ops {
            if let Op::Push(v) | Op::Pop(v) | Op::Peek(v) = op {
                builder.saved(*v);
            }
        }
        if matches!(block.term, Terminator::PushJump { .. }) {
            builder.calls();
        }
    }
    for (s, &depth) in stack_depths.iter().enumerate() {
        builder.stack_capacity(language::mir::StackId(s as u32), depth);
    }
    Ok(builder.finish())
}

/// What statement `s` tells about shapes; whether it told something new.
fn define(b: &mut LayoutBuilder, s: &Stmt) -> Result<bool, Unsupported> {
    let shape = |b: &LayoutBuilder, e: &Expr| typing::shape_of(b, e).ok();
    Ok(match &s.kind {
        StmtKind::Decl { var, ty, .. } => match declared_shape(b, ty) {
            Some(shape) => b.define(*var, shape)?,
            None => false,
        },
        StmtKind::Let { var, value } => match shape(b, value) {
            Some(shape) => b.define(*var, shape)?,
            None => false,
        },
        StmtKind::Assign { lhs, rhs } if lhs.path.is_empty() => {
            match (b.var_shape(lhs.var), shape(b, rhs)) {
                (None, Some(shape)) => b.define(lhs.var, shape)?,
                _ => false,
            }
        }
        StmtKind::Push { stack, value } => match shape(b, value) {
            Some(shape) => b.stack(*stack, shape)?,
            None => false,
        },
        _ => false,
    })
}

fn declared_shape(b: &LayoutBuilder, ty: &language::mir::SizedType) -> Option<Shape> {
    use language::mir::SizedType as T;
    let size = |e: &Expr| usize::try_from(typing::const_int(b, e)?).ok();
    Some(match ty {
        T::Int => Shape::INT,
        T::Real => Shape::REAL,
        T::Vector(n) => Shape::of(Inner::Vector(size(n)?)),
        T::RowVector(n) => Shape::of(Inner::RowVector(size(n)?)),
        T::Matrix(r, c) => Shape::of(Inner::Matrix(size(r)?, size(c)?)),
        T::Array(n, elem) => {
            let inner = declared_shape(b, elem)?;
            let mut arrays = vec![size(n)?];
            arrays.extend(inner.arrays);
            Shape {
                arrays,
                inner: inner.inner,
                int: inner.int,
                tuple: Vec::new(),
            }
        }
        _ => return None,
    })
}

/// Generate the device code of `p`'s gradient entry with `layout`.
pub fn generate(p: &pc::Program, layout: Layout) -> DeviceProgram {
    generate_named(p, layout, "bat")
}

/// [`generate`] with kernel names starting `PREFIX_`.
pub fn generate_named(p: &pc::Program, layout: Layout, prefix: &str) -> DeviceProgram {
    let mut blocks = vec![Vec::new(); p.blocks.len()];
    let mut sites: Vec<Site> = Vec::new();
    let mut not_generated = Vec::new();
    let mut kernels = String::new();
    let mut entry_block = 0;
    match p.entry(GRADIENT_ENTRY) {
        None => not_generated.push(NotGenerated {
            at: GRADIENT_ENTRY.to_string(),
            reason: "the program has no gradient entry".to_string(),
            span: None,
        }),
        Some(entry) => {
            entry_block = p.function(entry).first_block.0 as usize;
            // The gradient entry and every user function it may call.
            for (fi, function) in p.functions.iter().enumerate() {
                if fi != entry.0 as usize && function.kind != pc::FunctionKind::User {
                    continue;
                }
                let first = function.first_block.0 as usize;
                let n = function.num_blocks as usize;
                for (b, launches) in blocks.iter_mut().enumerate().skip(first).take(n) {
                    let mut block = BlockCode {
                        p,
                        prefix,
                        layout: &layout,
                        b,
                        function: &function.name,
                        kernels: &mut kernels,
                        sites: &mut sites,
                        not_generated: &mut not_generated,
                        launches: Vec::new(),
                    };
                    block.generate();
                    *launches = block.launches;
                }
            }
        }
    }
    let kernels_source = format!("{}{kernels}", helper_kernels(&layout, prefix));
    DeviceProgram {
        source: format!("{}{kernels_source}", prelude()),
        kernels_source,
        prefix: prefix.to_string(),
        blocks,
        entry: entry_block,
        n_params: layout.params.as_ref().map_or(0, |s| s.n),
        layout,
        sites,
        not_generated,
    }
}

/// The code of one block being generated.
struct BlockCode<'a> {
    p: &'a pc::Program,
    prefix: &'a str,
    layout: &'a Layout,
    b: usize,
    function: &'a str,
    kernels: &'a mut String,
    sites: &'a mut Vec<Site>,
    not_generated: &'a mut Vec<NotGenerated>,
    launches: Vec<Launch>,
}

impl BlockCode<'_> {
    fn not_generated(&mut self, at: String, what: String, reason: String, span: Option<Span>) {
        self.kernels
            .push_str(&format!("// not generated: {what} ({reason})\n"));
        self.not_generated.push(NotGenerated { at, reason, span });
    }

    fn generate(&mut self) {
        let (p, layout, b) = (self.p, self.layout, self.b);
        let block = &p.blocks[b];
        self.kernels.push_str(&format!("\n// ---- block b{b}\n"));
        let mut emitter = Emitter::new(&p.mir, layout, self.sites.len());
        for (i, op) in block.ops.iter().enumerate() {
            let at = format!("{}/b{b}/op{i}", self.function);
            let name = |v: &VarId| p.var_name(*v).to_string();
            let outcome = match op {
                Op::Stmt(_) => Ok(()),
                Op::Arg { param, value } => {
                    emitter.write_var(*param, value, &format!("arg {}", name(param)))
                }
                Op::SetResult { var, value } => {
                    emitter.write_var(*var, value, &format!("result {}", name(var)))
                }
                Op::Push(v) => emitter.push_var(*v),
                Op::Pop(v) => emitter.restore_var(*v, Restore::Pop),
                Op::Peek(v) => emitter.restore_var(*v, Restore::Peek),
            };
            if let Err(reason) = outcome {
                self.not_generated(
                    at,
                    format!("a calling op of {}", self.function),
                    reason,
                    None,
                );
                continue;
            }
            let Op::Stmt(s) = op else { continue };
            if let Some(gemm) = gemm_statement(layout, s) {
                self.finish_kernel(emitter, false);
                let name = format!("{}_b{b}_{}", self.prefix, self.launches.len());
                self.kernels
                    .push_str(&format!("// {}\n", first_line(&p.mir, s)));
                self.kernels.push_str(&gemm.kernel(&name));
                self.launches.push(Launch::Gemm {
                    kernel: name,
                    rows: gemm.rows,
                });
                emitter = Emitter::new(&p.mir, layout, self.sites.len());
                continue;
            }
            if let Err(reason) = emitter.statement(s) {
                self.not_generated(at, first_line(&p.mir, s), reason, Some(s.span));
            }
        }
        if let Err(reason) = terminator_code(p, &mut emitter, &block.term) {
            let at = format!("{}/b{b}/terminator", self.function);
            self.not_generated(at, "the block's terminator".to_string(), reason, None);
        }
        self.finish_kernel(emitter, true);
    }

    /// Close the lane kernel being emitted (if it has code, or if it
    /// carries the terminator).
    fn finish_kernel(&mut self, emitter: Emitter, last: bool) {
        let has_code = emitter.lines.iter().any(|l| !l.starts_with("//"));
        self.sites.extend(emitter.sites);
        if !has_code && !last {
            return;
        }
        let name = format!("{}_b{}_{}", self.prefix, self.b, self.launches.len());
        self.kernels
            .push_str(&super::kernel_text(&name, &emitter.lines));
        self.launches.push(Launch::Lanes { kernel: name });
    }
}

/// The terminator: each lane's next block into its program-counter slot.
fn terminator_code(
    p: &pc::Program,
    em: &mut Emitter,
    term: &Terminator,
) -> Result<(), Unsupported> {
    match term {
        Terminator::Jump(t) => em.lines.push(format!("S({PC_SLOT}) = {}.0;", t.0)),
        Terminator::Return => em.return_code()?,
        Terminator::Branch {
            cond,
            then,
            otherwise,
        } => {
            if !em.shape(cond)?.is_scalar() {
                return Err("a branch on a container".to_string());
            }
            let c = em.branch_condition(cond)?;
            em.lines.push(format!(
                "S({PC_SLOT}) = ({c}) != 0.0 ? {}.0 : {}.0;",
                then.0, otherwise.0
            ));
        }
        Terminator::PushJump {
            ret,
            callee,
            target,
        } => em.call(*ret, *target, &p.function(*callee).name)?,
    }
    Ok(())
}

/// `v = A * x`, `v += A * x` or with `transpose(A)`: a data matrix `A`
/// of at least [`GEMM_MIN_ELEMENTS`] times a per-lane vector `x`.
struct Gemm {
    /// Output rows and the inner dimension.
    rows: usize,
    inner: usize,
    /// `A(i, k)` is `data[a_base + i * a_row_stride + k * a_col_stride]`.
    a_base: usize,
    a_row_stride: usize,
    a_col_stride: usize,
    x_base: usize,
    out_base: usize,
    accumulate: bool,
}

fn gemm_statement(layout: &Layout, s: &Stmt) -> Option<Gemm> {
    let (var, rhs, accumulate) = match &s.kind {
        StmtKind::Let { var, value } => (*var, value, false),
        StmtKind::Assign { lhs, rhs } if lhs.path.is_empty() => (lhs.var, rhs, false),
        StmtKind::AddAssign { lhs, rhs } if lhs.path.is_empty() => (lhs.var, rhs, true),
        _ => return None,
    };
    let ExprKind::Prim(Prim::Mul, args) = &rhs.kind else {
        return None;
    };
    let [a, x] = args.as_slice() else { return None };
    let (matrix, transposed) = match &a.kind {
        ExprKind::Var(m) => (*m, false),
        ExprKind::Prim(Prim::Transpose, inner) => match inner.as_slice() {
            [
                Expr {
                    kind: ExprKind::Var(m),
                    ..
                },
            ] => (*m, true),
            _ => return None,
        },
        _ => return None,
    };
    let ExprKind::Var(x_var) = x.kind else {
        return None;
    };
    let Some(Place::Data { base: a_base, .. }) = layout.place(matrix) else {
        return None;
    };
    let Some(Inner::Matrix(r, c)) = layout.var_shape(matrix).map(|s| s.inner) else {
        return None;
    };
    let Some(Place::State {
        base: x_base,
        len: x_len,
    }) = layout.place(x_var)
    else {
        return None;
    };
    let Some(Place::State {
        base: out_base,
        len: out_len,
    }) = layout.place(var)
    else {
        return None;
    };
    if x_var == var || r * c < GEMM_MIN_ELEMENTS {
        return None;
    }
    let is_vector = |v: VarId| {
        layout
            .var_shape(v)
            .is_some_and(|s| s.arrays.is_empty() && matches!(s.inner, Inner::Vector(_)))
    };
    if !is_vector(x_var) || !is_vector(var) {
        return None;
    }
    // Column-major A (r×c): A(i, k) at k * r + i; A^T(i, k) = A(k, i).
    let (rows, inner, a_row_stride, a_col_stride) = if transposed {
        (c, r, r, 1)
    } else {
        (r, c, 1, r)
    };
    if x_len != inner || out_len != rows {
        return None;
    }
    Some(Gemm {
        rows,
        inner,
        a_base,
        a_row_stride,
        a_col_stride,
        x_base,
        out_base,
        accumulate,
    })
}

impl Gemm {
    /// Each thread: one lane, [`GEMM_ROWS_PER_THREAD`] consecutive rows;
    /// consecutive threads read consecutive lanes' `x` (coalesced) and the
    /// same row of `A` (broadcast). Each output sums over k in order from
    /// 0, as the interpreter's matrix product.
    fn kernel(&self, name: &str) -> String {
        let rb = GEMM_ROWS_PER_THREAD;
        let op = if self.accumulate { "+=" } else { "=" };
        format!(
            "extern \"C\" __global__ void {name}(double* __restrict__ state, const double* __restrict__ data,
    const int* __restrict__ active, int n_active, int n_lanes) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_active) return;
    const int lane = active[t];
    if (S({STATUS_SLOT}) != 0.0) return;
    const int i0 = blockIdx.y * {rb};
    double acc[{rb}];
    for (int r = 0; r < {rb}; ++r) acc[r] = 0.0;
    #pragma unroll 1
    for (int k = 0; k < {inner}; ++k) {{
        const double x = S({x_base} + k);
        for (int r = 0; r < {rb}; ++r) {{
            const int i = i0 + r;
            if (i < {rows}) acc[r] += D({a_base} + (long long)i * {rs} + (long long)k * {cs}) * x;
        }}
    }}
    for (int r = 0; r < {rb}; ++r) {{
        const int i = i0 + r;
        if (i < {rows}) S({out_base} + i) {op} acc[r];
    }}
}}
",
            inner = self.inner,
            rows = self.rows,
            x_base = self.x_base,
            a_base = self.a_base,
            rs = self.a_row_stride,
            cs = self.a_col_stride,
            out_base = self.out_base,
        )
    }
}

/// The start, schedule and gather kernels of the host loop.
fn helper_kernels(layout: &Layout, prefix: &str) -> String {
    let (n, theta, gradient) = layout
        .params
        .as_ref()
        .map_or((0, 0, 0), |p| (p.n, p.theta, p.gradient));
    let mut resets = String::new();
    for stack in layout.all_stacks() {
        resets.push_str(&format!("    S({}) = 0.0;\n", stack.depth));
    }
    format!(
        "
// ---- host loop helpers
extern \"C\" __global__ void {prefix}_{START_KERNEL}(double* __restrict__ state, const double* __restrict__ theta,
    const int* __restrict__ active, int n_active, int n_lanes, double jacobian, int entry) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_active) return;
    const int lane = active[t];
    S({STATUS_SLOT}) = 0.0;
    S({TARGET_SLOT}) = 0.0;
    S({SITE_SLOT}) = 0.0;
    S({PC_SLOT}) = (double)entry;
    S({JACOBIAN_SLOT}) = jacobian;
    for (int k = 0; k < {n}; ++k) {{
        S({theta} + k) = theta[(long long)k * n_active + t];
        S({gradient} + k) = 0.0;
    }}
{resets}}}
extern \"C\" __global__ void {prefix}_{SCHEDULE_KERNEL}(const double* __restrict__ state, int* counts, int* lists,
    int n_lanes) {{
    const int lane = blockIdx.x * blockDim.x + threadIdx.x;
    if (lane >= n_lanes) return;
    if (S({STATUS_SLOT}) != 0.0) return;
    const int b = (int)S({PC_SLOT});
    if (b < 0) return;
    const int k = atomicAdd(&counts[b], 1);
    lists[(long long)b * n_lanes + k] = lane;
}}
extern \"C\" __global__ void {prefix}_{GATHER_KERNEL}(const double* __restrict__ state, double* __restrict__ out,
    const int* __restrict__ active, int n_active, int n_lanes) {{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_active) return;
    const int lane = active[t];
    out[t] = S({STATUS_SLOT});
    out[(long long)n_active + t] = S({SITE_SLOT});
    out[2LL * n_active + t] = S({TARGET_SLOT});
    for (int k = 0; k < {n}; ++k) out[(long long)({GATHERED_HEADER} + k) * n_active + t] = S({gradient} + k);
}}
"
    )
}

/// The source position of a not-generated op, as `line:column` of `source`.
pub fn position(source: &str, span: Span) -> (usize, usize) {
    let upto = &source[..(span.start as usize).min(source.len())];
    let line = upto.matches('\n').count() + 1;
    let column = upto.len() - upto.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}
