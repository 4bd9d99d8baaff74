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
//! A block no lane can reach, every branch towards it decided the other
//! way by the data set's sizes, has no code and no such ops.
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
use language::mir::{Expr, ExprKind, FunId, Prim, Stmt, StmtKind, VarId};
use language::span::Span;
use runtime::Model;

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
    /// A call of an external function (answered by the host loop), see
    /// [`External`].
    External(External),
}

/// A call of an external function: the `pack` kernel (one thread per
/// active lane) writes the arguments, then the host answers. A call with a
/// result is the model's log density gradient: `pack` writes θ compactly
/// (`out[k * n_active + t]`, the gradient program's start ABI), the host
/// evaluates the gradient program on the device for the same lanes, and
/// the `answer` kernel turns its gathered results (`g`, the gather ABI)
/// into `(lp, gradient)` as the CPU's sampler host does. A call without a
/// result appends a record to the lane's record buffer:
/// `out[(lane * cap + c) * width + ..]` = the call's id, then the
/// arguments; `c` is the lane's record count (slot [`RECORD_COUNT`] after
/// [`Layout::reserved`]), which the host resets when it copies the
/// records back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    /// Id of the call (the first value of its records).
    pub id: usize,
    pub function: String,
    pub pack: String,
    pub answer: Option<String>,
    /// The arguments' shapes, in order (packed one after another).
    pub args: Vec<Shape>,
}

impl External {
    /// Values packed per lane.
    pub fn width(&self) -> usize {
        self.args.iter().map(Shape::len).sum()
    }
}

/// Reserved slots of programs with external calls (after
/// [`Layout::reserved`]): the lane's record count, its gradient
/// evaluations, and the site of its last failed gradient evaluation
/// (`-2` for a non-finite log density, `-3` for none).
pub const RECORD_COUNT: usize = 0;
pub const GRADIENT_EVALUATIONS: usize = 1;
pub const LAST_GRADIENT_SITE: usize = 2;
/// Slots to reserve for [`RECORD_COUNT`] and the others.
pub const EXTERNAL_SLOTS: usize = 3;
/// The site slot of a lane stopped by a fatal error of the gradient
/// program (whose site is then in [`LAST_GRADIENT_SITE`]).
pub const GRADIENT_FAILED_SITE: f64 = -1.0;
/// The site slot of a lane stopped because its record buffer was full
/// (the host loop copies records back before that can happen).
pub const RECORD_OVERFLOW_SITE: f64 = -4.0;

impl Launch {
    /// The first kernel of the launch.
    pub fn kernel(&self) -> &str {
        match self {
            Launch::Lanes { kernel } | Launch::Gemm { kernel, .. } => kernel,
            Launch::External(e) => &e.pack,
        }
    }

    /// Every kernel of the launch.
    pub fn kernels(&self) -> Vec<&str> {
        match self {
            Launch::External(e) => std::iter::once(e.pack.as_str())
                .chain(e.answer.as_deref())
                .collect(),
            other => vec![other.kernel()],
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
            names.extend(
                launches
                    .iter()
                    .flat_map(|l| l.kernels())
                    .map(str::to_string),
            );
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
    finish_layout(p, builder, stack_depths)
}

/// The layout of a program run from entry function `entry` (not a
/// gradient program) whose parameters hold values of `params`' shapes,
/// with `reserve` slots per lane for the host loop
/// ([`Layout::reserved`]) and a random stream if the program draws.
pub fn entry_layout(
    p: &pc::Program,
    globals: &[Option<language::value::Value>],
    entry: &str,
    params: &[Shape],
    reserve: usize,
) -> Result<Layout, Unsupported> {
    let f = function_named(p, entry)
        .map(|f| p.function(f))
        .ok_or_else(|| format!("the program has no function `{entry}`"))?;
    if f.params.len() != params.len() {
        return Err(format!(
            "`{entry}` takes {} arguments, {} given",
            f.params.len(),
            params.len()
        ));
    }
    let mut builder = LayoutBuilder::new(&p.mir, globals);
    for (var, shape) in f.params.iter().zip(params) {
        builder.define(*var, shape.clone())?;
    }
    builder.reserve(reserve);
    if draws_random_numbers(p) {
        builder.random_stream();
    }
    finish_layout(p, builder, &[])
}

/// The entry or user function called `name` (a program may be run from
/// a user function, as the sampler's chain function).
pub fn function_named(p: &pc::Program, name: &str) -> Option<language::mir::FunId> {
    p.entry(name).or_else(|| {
        p.functions
            .iter()
            .position(|f| f.kind == pc::FunctionKind::User && f.name == name)
            .map(|i| language::mir::FunId(i as u32))
    })
}

/// The functions `roots` call, directly or not, and the roots.
pub(crate) fn reachable_functions(p: &pc::Program, roots: &[FunId]) -> Vec<FunId> {
    let mut found = roots.to_vec();
    let mut k = 0;
    while k < found.len() {
        let f = p.function(found[k]);
        for b in f.first_block.0..f.first_block.0 + f.num_blocks {
            if let Terminator::PushJump { callee, .. } = p.blocks[b as usize].term
                && !found.contains(&callee)
            {
                found.push(callee);
            }
        }
        k += 1;
    }
    found
}

/// Whether any op of `p` draws a random number.
fn draws_random_numbers(p: &pc::Program) -> bool {
    let mut found = false;
    for block in &p.blocks {
        for op in &block.ops {
            let mut stmts = match op {
                Op::Stmt(s) => vec![s.clone()],
                Op::Arg { value, .. } | Op::SetResult { value, .. } => vec![Stmt {
                    kind: StmtKind::Effect(value.clone()),
                    span: value.span,
                }],
                _ => continue,
            };
            language::mir::visit::for_each_expr(&mut stmts, &mut |e| {
                if let ExprKind::Prim(p, _) = &e.kind {
                    found |= p.is_rng();
                }
            });
        }
    }
    found
}

/// Ints that every write of the program sets to one constant (such as
/// `int n = rows(q)` for a `q` of known size): a variable is known once
/// each of its writes is a constant and all are the same. Knowledge only
/// grows with the shapes (sound for the fixpoint in [`finish_layout`]).
fn known_ints(p: &pc::Program, env: &LayoutBuilder) -> std::collections::HashMap<VarId, i64> {
    use std::collections::HashMap;
    // Per variable: Some(c) while every write so far is the constant c.
    let mut writes: HashMap<VarId, Option<i64>> = HashMap::new();
    let mut note = |var: VarId, value: Option<&Expr>| {
        let c = value.and_then(|v| typing::const_int(env, v));
        let entry = writes.entry(var).or_insert(c);
        if *entry != c {
            *entry = None;
        }
    };
    for block in &p.blocks {
        for op in &block.ops {
            match op {
                Op::Arg { param, value } => note(*param, Some(value)),
                Op::SetResult { var, value } => note(*var, Some(value)),
                Op::Push(_) | Op::Pop(_) | Op::Peek(_) => {}
                Op::Stmt(s) => match &s.kind {
                    StmtKind::Let { var, value } => note(*var, Some(value)),
                    StmtKind::Decl { var, init, .. } => note(*var, init.as_ref()),
                    StmtKind::Assign { lhs, rhs } if lhs.path.is_empty() => {
                        note(lhs.var, Some(rhs))
                    }
                    StmtKind::Assign { lhs, .. } | StmtKind::AddAssign { lhs, .. } => {
                        note(lhs.var, None)
                    }
                    StmtKind::Unpack { lhs, .. } => {
                        for l in lhs {
                            note(l.var, None);
                        }
                    }
                    StmtKind::ReadParam { var, .. } => note(*var, None),
                    _ => {}
                },
            }
        }
    }
    writes
        .into_iter()
        .filter_map(|(v, c)| Some((v, c?)))
        .collect()
}

/// A function's result converted to its declared return type: int where
/// declared int (tuple components one by one), real elsewhere.
fn declared_ints(shape: Shape, ty: Option<&language::types::Type>) -> Shape {
    use language::types::Type;
    match ty {
        Some(Type::Tuple(types)) if types.len() == shape.tuple.len() => {
            let components = shape
                .tuple
                .into_iter()
                .zip(types)
                .map(|(s, t)| declared_ints(s, Some(t)))
                .collect();
            Shape::tuple_of(components)
        }
        Some(t) if t.array_dims().1 == &Type::Int => shape,
        _ => shape.real(),
    }
}

fn finish_layout(
    p: &pc::Program,
    mut builder: LayoutBuilder,
    stack_depths: &[usize],
) -> Result<Layout, Unsupported> {
    // The declared return type of each function's result variable.
    let return_type = |var: VarId| {
        p.functions
            .iter()
            .find(|f| f.result == Some(var))
            .and_then(|f| f.ret.as_ref())
    };
    loop {
        let known = known_ints(p, &builder);
        let mut changed = builder.known_ints(known);
        for block in &p.blocks {
            for op in &block.ops {
                if let Some((_, args, Some(var))) = pc::lower::external_call(p, op) {
                    // The one external function with a result is the
                    // model's log density gradient: (lp, gradient).
                    if let [theta] = args
                        && let Ok(shape) = typing::shape_of(&builder, theta)
                    {
                        let answer = Shape::tuple_of(vec![
                            Shape::REAL,
                            Shape::of(Inner::Vector(shape.len())),
                        ]);
                        changed |= builder.define(var, answer)?;
                    }
                    continue;
                }
                changed |= match op {
                    Op::Stmt(s) => define(&mut builder, s)?,
                    Op::Arg { param, value } => match typing::shape_of(&builder, value) {
                        Ok(shape) => builder.define(*param, shape)?,
                        Err(_) => false,
                    },
                    Op::SetResult { var, value } => match typing::shape_of(&builder, value) {
                        Ok(shape) => {
                            builder.define(*var, declared_ints(shape, return_type(*var)))?
                        }
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
    if super::save_stack::saves_nest_as_frames(p) {
        builder.save_in_frames();
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
        // A declared type the sizes do not fix (a tuple) takes its
        // initial value's shape.
        StmtKind::Decl { var, ty, init } => {
            match declared_shape(b, ty).or_else(|| init.as_ref().and_then(|v| shape(b, v))) {
                Some(shape) => b.define(*var, shape)?,
                None => false,
            }
        }
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
        StmtKind::Unpack { lhs, rhs } => {
            let Some(tuple) = shape(b, rhs) else {
                return Ok(false);
            };
            let mut changed = false;
            for (l, component) in lhs.iter().zip(tuple.tuple) {
                if l.path.is_empty() {
                    changed |= b.define(l.var, component)?;
                }
            }
            changed
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
    let blocks = generate_blocks(p, &layout, prefix, GRADIENT_ENTRY);
    let kernels_source = format!("{}{}", helper_kernels(&layout, prefix), blocks.kernels);
    DeviceProgram {
        source: format!("{}{kernels_source}", prelude()),
        kernels_source,
        prefix: prefix.to_string(),
        blocks: blocks.blocks,
        entry: blocks.entry,
        n_params: layout.params.as_ref().map_or(0, |s| s.n),
        layout,
        sites: blocks.sites,
        not_generated: blocks.not_generated,
    }
}

/// The kernels of the blocks of entry function `entry` and of every user
/// function it may call.
pub(crate) struct Blocks {
    pub kernels: String,
    pub blocks: Vec<Vec<Launch>>,
    pub entry: usize,
    pub sites: Vec<Site>,
    pub not_generated: Vec<NotGenerated>,
}

pub(crate) fn generate_blocks(
    p: &pc::Program,
    layout: &Layout,
    prefix: &str,
    entry_name: &str,
) -> Blocks {
    let mut blocks = vec![Vec::new(); p.blocks.len()];
    let mut sites: Vec<Site> = Vec::new();
    let mut not_generated = Vec::new();
    let mut kernels = String::new();
    let mut entry_block = 0;
    let mut externals = 0;
    match function_named(p, entry_name) {
        None => not_generated.push(NotGenerated {
            at: entry_name.to_string(),
            reason: format!("the program has no function `{entry_name}`"),
            span: None,
        }),
        Some(entry) => {
            entry_block = p.function(entry).first_block.0 as usize;
            // The entry and every user function it may call.
            for fi in reachable_functions(p, &[entry]) {
                let function = p.function(fi);
                let first = function.first_block.0 as usize;
                let n = function.num_blocks as usize;
                let dead = statically_dead_blocks(p, layout, first, n);
                for (b, launches) in blocks.iter_mut().enumerate().skip(first).take(n) {
                    if dead[b - first] {
                        continue;
                    }
                    let mut block = BlockCode {
                        p,
                        prefix,
                        layout,
                        b,
                        function: &function.name,
                        kernels: &mut kernels,
                        sites: &mut sites,
                        not_generated: &mut not_generated,
                        launches: Vec::new(),
                        externals: &mut externals,
                    };
                    block.generate();
                    *launches = block.launches;
                }
            }
        }
    }
    Blocks {
        kernels,
        blocks,
        entry: entry_block,
        sites,
        not_generated,
    }
}

/// Which of the `n` blocks of the function starting at block `first` no
/// lane can reach, because every branch towards them is decided the other
/// way by the data set's sizes (`if (rows(m) > 0)` with `m` of no rows):
/// they get no code, so an op there that has none for these sizes (a
/// product of `m` by a vector) is no refusal.
fn statically_dead_blocks(p: &pc::Program, layout: &Layout, first: usize, n: usize) -> Vec<bool> {
    let mut dead = vec![true; n];
    let mut work = vec![first];
    while let Some(b) = work.pop() {
        let Some(slot) = b.checked_sub(first).filter(|&k| k < n) else {
            continue;
        };
        if !std::mem::replace(&mut dead[slot], false) {
            continue;
        }
        match &p.blocks[b].term {
            Terminator::Jump(t) => work.push(t.0 as usize),
            Terminator::Return => {}
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => match typing::const_int(layout, cond) {
                Some(0) => work.push(otherwise.0 as usize),
                Some(_) => work.push(then.0 as usize),
                None => work.extend([then.0 as usize, otherwise.0 as usize]),
            },
            Terminator::PushJump { ret, .. } => work.push(ret.0 as usize),
        }
    }
    dead
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
    /// External calls generated so far (their ids).
    externals: &'a mut usize,
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
                // A run of saves (or of restores) is emitted at its first
                // op, as one frame when the layout has a save stack.
                Op::Push(_) => match save_run(&block.ops, i) {
                    Some(vars) => emitter.push_vars(&vars),
                    None => Ok(()),
                },
                Op::Pop(_) => match save_run(&block.ops, i) {
                    Some(vars) => emitter.restore_vars(&vars, Restore::Pop),
                    None => Ok(()),
                },
                Op::Peek(_) => match save_run(&block.ops, i) {
                    Some(vars) => emitter.restore_vars(&vars, Restore::Peek),
                    None => Ok(()),
                },
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
            if let Some((f, args, result)) = pc::lower::external_call(p, op) {
                self.finish_kernel(emitter, false);
                let name = p.function(f).name.clone();
                if let Err(reason) = self.external(&name, args, result) {
                    let span = match op {
                        Op::Stmt(s) => Some(s.span),
                        _ => None,
                    };
                    self.not_generated(at, format!("a call of {name}"), reason, span);
                }
                emitter = Emitter::new(&p.mir, layout, self.sites.len());
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

    /// The kernels of an external call (see [`External`]).
    fn external(
        &mut self,
        function: &str,
        args: &[Expr],
        result: Option<VarId>,
    ) -> Result<(), Unsupported> {
        let layout = self.layout;
        let id = *self.externals;
        let shapes = args
            .iter()
            .map(|a| typing::shape_of(layout, a))
            .collect::<Result<Vec<_>, _>>()?;
        let record = match result {
            None => Some(layout.reserved + RECORD_COUNT),
            Some(_) => None,
        };
        let mut emitter = Emitter::new(&self.p.mir, layout, self.sites.len());
        emitter.pack(args, record, id)?;
        let answer_lines = match result {
            None => None,
            Some(var) => Some(answer_lines(
                layout,
                var,
                shapes.iter().map(Shape::len).sum(),
            )?),
        };
        *self.externals += 1;
        self.sites.extend(emitter.sites);
        let pack = format!("{}_x{id}_pack", self.prefix);
        self.kernels.push_str(&format!("// call {function}\n"));
        self.kernels.push_str(&super::kernel_text_with(
            &pack,
            &emitter.lines,
            ", double* __restrict__ out, int width, int cap",
        ));
        let answer = answer_lines.map(|lines| {
            let name = format!("{}_x{id}_answer", self.prefix);
            self.kernels.push_str(&super::kernel_text_with(
                &name,
                &lines,
                ", const double* __restrict__ g",
            ));
            name
        });
        self.launches.push(Launch::External(External {
            id,
            function: function.to_string(),
            pack,
            answer,
            args: shapes,
        }));
        Ok(())
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

/// The answer of a gradient evaluation (gathered at `g`, the gather
/// kernel's layout) into `var` = (lp, gradient of `n`), as the CPU's
/// sampler host answers: lp −∞ after a rejection (gradient zeros) or a
/// non-finite lp (gradient kept); a fatal error stops the lane.
fn answer_lines(layout: &Layout, var: VarId, n: usize) -> Result<Vec<String>, Unsupported> {
    let Some(Place::State { base, len }) = layout.place(var) else {
        return Err("the gradient's result has no place".to_string());
    };
    if len != n + 1 {
        return Err(format!(
            "a gradient result of {len} values for {n} coordinates"
        ));
    }
    let r = layout.reserved;
    let (evals, last) = (r + GRADIENT_EVALUATIONS, r + LAST_GRADIENT_SITE);
    let fatal = super::FATAL_STATUS;
    Ok(vec![
        format!("S({evals}) += 1.0;"),
        "const double st = g[t];".to_string(),
        "const double site = g[(long long)n_active + t];".to_string(),
        "const double lp = g[2LL * n_active + t];".to_string(),
        format!(
            "if (st == {fatal:?}) {{ S({last}) = site; S({STATUS_SLOT}) = {fatal:?}; S({SITE_SLOT}) = {GRADIENT_FAILED_SITE:?}; return; }}"
        ),
        format!(
            "if (st != 0.0) {{ S({last}) = site; S({base}) = -BAT_INF; for (int k = 0; k < {n}; ++k) S({base} + 1 + k) = 0.0; return; }}"
        ),
        format!("if (!isfinite(lp)) S({last}) = -2.0;"),
        format!("S({base}) = isfinite(lp) ? lp : -BAT_INF;"),
        format!(
            "for (int k = 0; k < {n}; ++k) S({base} + 1 + k) = g[(long long)({GATHERED_HEADER} + k) * n_active + t];"
        ),
    ])
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
            // Decided by the data set's sizes: the other side has no code
            // ([`statically_dead_blocks`]).
            if let Some(known) = typing::const_int(em.layout, cond) {
                let next = if known != 0 { then } else { otherwise };
                em.lines.push(format!("S({PC_SLOT}) = {}.0;", next.0));
                return Ok(());
            }
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
    /// 0, one fused multiply-add per term, as the interpreter's matrix
    /// product.
    fn kernel(&self, name: &str) -> String {
        let rb = GEMM_ROWS_PER_THREAD;
        let op = if self.accumulate { "+=" } else { "=" };
        let Gemm {
            inner,
            rows,
            x_base,
            a_base,
            a_row_stride: rs,
            a_col_stride: cs,
            out_base,
            ..
        } = *self;
        // The tile's sums; with `tested`, only of the rows below `rows`.
        // A whole tile runs untested, so g++ vectorizes its rows; a last
        // tile that is not whole exists only when `rows` is no multiple of
        // the tile's height.
        let terms = |tested: bool| {
            let guard = if tested {
                format!("if (i < {rows}) ")
            } else {
                String::new()
            };
            format!(
                "#pragma unroll 1
        for (int k = 0; k < {inner}; ++k) {{
            const double x = S({x_base} + k);
            for (int r = 0; r < {rb}; ++r) {{
                const int i = i0 + r;
                {guard}acc[r] = fma(D({a_base} + (long long)i * {rs} + (long long)k * {cs}), x, acc[r]);
            }}
        }}"
            )
        };
        let sums = if rows % rb == 0 {
            format!("    {{\n        {}\n    }}", terms(false))
        } else {
            format!(
                "    if (i0 + {rb} <= {rows}) {{\n        {}\n    }} else {{\n        {}\n    }}",
                terms(false),
                terms(true)
            )
        };
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
{sums}
    for (int r = 0; r < {rb}; ++r) {{
        const int i = i0 + r;
        if (i < {rows}) S({out_base} + i) {op} acc[r];
    }}
}}
"
        )
    }
}

/// At the first op of a run of `Push` ops (or of `Pop`, or of `Peek`
/// ops) of `ops`, the run's variables in order; `None` at a later op of
/// the run.
fn save_run(ops: &[Op], i: usize) -> Option<Vec<VarId>> {
    let var = |op: &Op, like: &Op| match (op, like) {
        (Op::Push(v), Op::Push(_)) | (Op::Pop(v), Op::Pop(_)) | (Op::Peek(v), Op::Peek(_)) => {
            Some(*v)
        }
        _ => None,
    };
    let like = &ops[i];
    if i > 0 && var(&ops[i - 1], like).is_some() {
        return None;
    }
    Some(ops[i..].iter().map_while(|op| var(op, like)).collect())
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
    let schedule = schedule_kernel(prefix);
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
{schedule}extern \"C\" __global__ void {prefix}_{GATHER_KERNEL}(const double* __restrict__ state, double* __restrict__ out,
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

/// The schedule kernel of the host loop (see the module docs).
pub(crate) fn schedule_kernel(prefix: &str) -> String {
    format!(
        "extern \"C\" __global__ void {prefix}_{SCHEDULE_KERNEL}(const double* __restrict__ state, int* counts, int* lists,
    int n_lanes) {{
    const int lane = blockIdx.x * blockDim.x + threadIdx.x;
    if (lane >= n_lanes) return;
    if (S({STATUS_SLOT}) != 0.0) return;
    const int b = (int)S({PC_SLOT});
    if (b < 0) return;
    const int k = atomicAdd(&counts[b], 1);
    lists[(long long)b * n_lanes + k] = lane;
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
