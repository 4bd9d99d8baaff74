//! The native executor of gradient programs: the CUDA C that
//! [`codegen`] generates for a gradient program, compiled for the
//! host CPU with g++ (`-O3`, against the CUDA-on-CPU shim header) and run
//! in this process, lane after lane ([`NativeGradient`]).
//!
//! Why it exists: backend-cpu interprets the batching IR one op at a time
//! over all lanes, which amortizes its per-op cost (a few hundred ns:
//! operand lists, shapes, allocation) over a batch but pays all of it at
//! one chain; eight schools' gradient then costs ~15 µs where a
//! hand-written one costs ~0.1 µs. Compiled code pays no per-op cost, so
//! this executor reaches a hand-written gradient's speed at Z = 1
//! (`bat bench --backend native`). It shares the CUDA backend's code
//! generator ([`codegen`]; one thread per lane becomes one loop iteration
//! per lane), so it runs exactly the models `--backend cuda` runs and,
//! like the stub driver's kernels, equals backend-cpu bit for bit
//! (`-ffp-contract=off`: no fused multiply-adds).
//!
//! The host loop is the gradient device's (program-counter autobatching:
//! start the lanes, repeatedly list the running lanes by the block they
//! wait at and run the lowest-numbered such block over exactly those
//! lanes, gather), with plain memory instead of device buffers, direct
//! calls instead of launches, and the listing done by the host itself.
//! A lane whose AD stacks overflow is run again with larger stacks
//! (recompiled), as on the device.
//!
//! Lane state is lane-major here (slot `k` of lane `l` at
//! `state[l * n_slots + k]`, the generated code's `BAT_SLOT` macro): one
//! lane's slots are contiguous, as a lane runs alone on a core. The
//! device's structure-of-arrays layout would put each of a lane's slots
//! `n_lanes` doubles apart (a page apart at 1,024 lanes: one TLB miss per
//! slot read, 10× slower).
//!
//! Compiled libraries are cached by a hash of their source and flags
//! under `$BAT_NATIVE_CACHE` (default `$XDG_CACHE_HOME/bat/native` or
//! `~/.cache/bat/native`), so a model compiles once per data set.
//!
//! **A first run starts on a quick build.** g++ at `-O3` took 5–6 s of
//! CPU for the sampler program (333 kB of C, one per parameter count) and
//! 1–1.5 s for a gradient program: the first draw of a model never run
//! before came 4.9–7.3 s after starting `bat run` on an idle 2-core
//! machine, nearly all of it g++. So where a program's `-O3` build is not
//! in the cache, the run starts on a quick build ([`Optimization`]: the
//! sampler at `-O0`, ~1 s; the gradient at `-O1`, ~0.6 s; both at once)
//! while the `-O3` builds compile in the background, in compiler processes
//! that rename their library into the cache themselves (so a build still
//! running when a short run exits lands there for the next run). Between
//! turns of a group of chains, each group takes the `-O3` code as soon as
//! it is loaded (`sampler::NativeSampler::upgrade`): the builds
//! come from one source, so the lanes' state carries over, and every
//! level computes the same values (no reassociation, no contraction), so
//! the draws are those of an `-O3` run bit for bit (tested mid-run against
//! the interpreter; whole runs of eight schools and arK at `-O0` and `-O3`
//! wrote identical files). Why these levels (CPU seconds of g++, measured
//! on a loaded 2-core host, and run times of 4 chains): the sampler at
//! `-O0`/`-O1`/`-O3` compiles in 0.97/2.27/5.31 s, arK's gradient in
//! 0.38/0.59/1.43 s; arK (gradient-bound) ran 300 iterations in 2.43 s at
//! `-O3`, 2.79 s with the sampler at `-O0` and the gradient at `-O1`, 13.0 s
//! with both at `-O0`; eight schools (sampler-bound) 2,000 iterations in
//! 0.13 s at `-O3`, 0.49 s at `-O0`. Builds export serial kernels only,
//! so the shim leaves out `<thread>`, `<barrier>` and `<atomic>`
//! (`BAT_SHIM_SERIAL_ONLY`): they were 0.6 of the 0.77 s an empty module
//! took to compile. The alternative of a sampler compiled once per
//! machine for every parameter count would need the code generator to
//! size the sampler's vectors at run time; a sample on the interpreter
//! while g++ runs would need a chain's state moved between executors
//! that lay it out differently.

use crate::lane_state::LaneState;
use std::ffi::c_void;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use language::batch::{cfg, pc};
use runtime::{Model, RuntimeError};

use codegen::gradient::{GeneratedCodeError, LaneGradient, device_program, regenerate, site_error};
use codegen::program::{
    DeviceProgram, GATHER_KERNEL, GATHERED_HEADER, GEMM_ROWS_PER_THREAD, Launch, START_KERNEL,
};
use codegen::shim::{self, LaunchFn, ShimModule};
use codegen::{FailKind, Layout, PC_SLOT, STATUS_SLOT};

/// A gradient program compiled for the host, shared by every
/// [`NativeGradient`] of a model (the library holds no state).
pub struct NativeProgram {
    program: DeviceProgram,
    /// Keeps the launchers below valid.
    _library: NativeLibrary,
    start: LaunchFn,
    gather: LaunchFn,
    /// Per block: its kernels with their grid rows (1 for a lane kernel).
    blocks: Vec<Vec<(LaunchFn, u32)>>,
    /// One lane's whole evaluation ([`lane_gradient_source`]).
    lane_gradient: LaneGradientFn,
    /// The model's data, read only: one copy for every executor of the
    /// program (a copy per group of chains held gigabytes for big data).
    data: Arc<[f64]>,
}

/// The name and signature of [`lane_gradient_source`]'s function:
/// `(state, data, theta, jacobian, gathered, blocks)` → 0 when the lane
/// finished (else its status, with the gather kernel's row in `gathered`
/// either way); `*blocks` counts the blocks it ran.
pub(crate) const LANE_GRADIENT: &str = "bat_native_lane_gradient";
pub(crate) type LaneGradientFn =
    unsafe extern "C" fn(*mut f64, *const f64, *const f64, f64, *mut f64, *mut i64) -> i32;

/// The shim's launch indices of a kernel called directly for one lane
/// (thread 0 of a one-thread block), set once before the calls.
pub(crate) const ONE_LANE_LAUNCH: &str = "    ::bat_shim::thread_idx = dim3(0, 0, 0);
    ::bat_shim::block_idx = dim3(0, 0, 0);
    ::bat_shim::block_dim = dim3(1, 1, 1);
    ::bat_shim::grid_dim = dim3(1, 1, 1);";

/// The C++ statement calling `launch`'s kernel directly for the one lane
/// in `active` of `n_lanes` (a GEMM kernel once per row block of its
/// grid); `None` for an external call, which is not a kernel.
pub(crate) fn one_lane_call(launch: &Launch, n_lanes: &str) -> Option<String> {
    match launch {
        Launch::Lanes { kernel } => Some(codegen::lane_body_call(kernel, n_lanes, "")),
        Launch::Gemm { kernel, rows } => {
            let grid = rows.div_ceil(GEMM_ROWS_PER_THREAD).max(1);
            Some(format!(
                "for (unsigned y = 0; y < {grid}u; ++y) {{ ::bat_shim::block_idx.y = y; {kernel}(state, data, active, 1, {n_lanes}); }} ::bat_shim::block_idx.y = 0;"
            ))
        }
        Launch::External(_) => None,
    }
}

/// The C++ of one lane's evaluation of the gradient program, in a
/// lane-major state of one lane: the start kernel, the lane's blocks in
/// program-counter order (the host loop's schedule for a single lane:
/// the lowest-numbered waiting block is the lane's own), the gather
/// kernel. The native sampler's dispatcher calls it directly for a lane
/// that asks for a gradient (`crate::sampler`), where the host
/// loop would return to Rust, pack the waiting lanes and launch each
/// kernel through the shim for them.
fn lane_gradient_source(program: &DeviceProgram) -> String {
    let mut cases = String::new();
    for (b, launches) in program.blocks.iter().enumerate() {
        if launches.is_empty() {
            continue;
        }
        cases += &format!("        case {b}:\n");
        // Externals are refused by `NativeProgram::compile`.
        for call in launches.iter().filter_map(|l| one_lane_call(l, "1")) {
            cases += &format!("            {call}\n            if (S(0) != 0.0) break;\n");
        }
        cases += "            continue;\n";
    }
    let start = program.helper(START_KERNEL);
    let gather = program.helper(GATHER_KERNEL);
    let entry = program.entry;
    format!(
        r#"
// ---- one lane's gradient (backend-native/src/gradient.rs)
extern "C" int {LANE_GRADIENT}(double* __restrict__ state, const double* __restrict__ data,
    const double* __restrict__ theta, double jacobian, double* __restrict__ gathered,
    long long* __restrict__ blocks) {{
{ONE_LANE_LAUNCH}
    const int active[1] = {{0}};
    const int lane = 0;
    (void)lane;
    {start}(state, theta, active, 1, 1, jacobian, {entry});
    while (S(0) == 0.0 && S(3) >= 0.0) {{
        *blocks += 1;
        switch ((long long)S(3)) {{
{cases}        default:
            S(0) = 3.0;
            break;
        }}
        break;
    }}
    {gather}(state, gathered, active, 1, 1);
    return gathered[0] == 0.0 ? 0 : 1;
}}
"#
    )
}

// SAFETY: the launchers are plain functions of a loaded library (kept
// alive by `_library`); kernels touch only the memory passed to them and
// thread-local launch indices, so any thread may call them.
unsafe impl Send for NativeProgram {}
unsafe impl Sync for NativeProgram {}

/// How hard g++ optimizes a native library (its `-O` level). Every level
/// computes the same values (none reassociates or contracts floating-point
/// operations: [`shim::NATIVE_FLAGS`]); only speed and compile time differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Optimization(&'static str);

impl Optimization {
    /// The build the executors are measured at.
    pub const FULL: Optimization = Optimization("-O3");
    /// A first build of the sampler program (see the module docs).
    pub const QUICK_SAMPLER: Optimization = Optimization("-O0");
    /// A first build of a gradient program (see the module docs).
    pub const QUICK_GRADIENT: Optimization = Optimization("-O1");
}

/// Generated C ready to compile: its source, lane-major state of
/// `n_slots` per lane, the kernels to export.
#[derive(Clone)]
pub struct LibrarySource {
    source: String,
    defines: String,
    kernels: Vec<String>,
}

impl LibrarySource {
    pub(crate) fn new(source: String, n_slots: usize, kernels: Vec<String>) -> LibrarySource {
        let defines = format!(
            "#define BAT_N_SLOTS {n_slots}LL\n\
             #define BAT_SLOT(k) ((long long)lane * BAT_N_SLOTS + (long long)(k))\n\
             #define BAT_SLOT_STRIDE 1LL\n"
        );
        LibrarySource {
            source,
            defines,
            kernels,
        }
    }

    /// Where the build at `level` is cached (None: no cache directory).
    fn cached(&self, level: Optimization) -> Option<PathBuf> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (
            env!("CARGO_PKG_VERSION"),
            shim::SHIM_HEADER,
            level.0,
            shim::NATIVE_FLAGS,
            host_cpu(),
            &self.defines,
            &self.source,
            &self.kernels,
        )
            .hash(&mut hasher);
        cache_dir().map(|d| d.join(format!("{:016x}.so", hasher.finish())))
    }

    /// Whether the build at `level` is in the cache.
    pub fn is_cached(&self, level: Optimization) -> bool {
        self.cached(level).is_some_and(|path| path.exists())
    }

    /// Compile at `level` (from the cache when it was compiled before) and
    /// load it.
    pub(crate) fn compile(&self, level: Optimization) -> Result<NativeLibrary, GeneratedCodeError> {
        let failed = |e: String| GeneratedCodeError::Compile(e);
        let library = self.cached_library(level).map_err(failed)?;
        NativeLibrary::load(&library)
    }

    /// Start compiling at `level` into the cache in a compiler process
    /// that finishes the build even if this process exits first (the next
    /// run then finds it); None without a writable cache directory.
    pub(crate) fn spawn(&self, level: Optimization) -> Option<PendingLibrary> {
        let target = self.cached(level)?;
        let dir = target.parent()?;
        std::fs::create_dir_all(dir).ok()?;
        // The child removes the directory once done.
        let build_dir = tempfile::tempdir_in(dir).ok()?.keep();
        let names: Vec<&str> = self.kernels.iter().map(String::as_str).collect();
        let spawned = shim::spawn_module_native(
            &self.source,
            &self.defines,
            &names,
            &build_dir,
            "model",
            level.0,
            &target,
        );
        match spawned {
            Ok(child) => Some(PendingLibrary { child, target }),
            Err(_) => {
                let _ = std::fs::remove_dir_all(&build_dir);
                None
            }
        }
    }

    /// The library at `level`: from the cache, or compiled into it (built
    /// in a temporary directory and renamed, so concurrent processes never
    /// load a half-written file). Without a cache directory, compiled into
    /// a temporary directory that lives as long as the process.
    fn cached_library(&self, level: Optimization) -> Result<PathBuf, String> {
        let cached = self.cached(level);
        if let Some(path) = &cached
            && path.exists()
        {
            return Ok(path.clone());
        }
        let names: Vec<&str> = self.kernels.iter().map(String::as_str).collect();
        // A cache directory that cannot be written: compile without caching.
        let in_cache = cached.as_ref().and_then(|path| {
            let dir = path.parent().expect("a file in the cache directory");
            std::fs::create_dir_all(dir).ok()?;
            tempfile::tempdir_in(dir).ok()
        });
        let cached = cached.filter(|_| in_cache.is_some());
        let build_dir = match in_cache {
            Some(dir) => dir,
            None => tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?,
        };
        let built = shim::build_module_native(
            &self.source,
            &self.defines,
            &names,
            build_dir.path(),
            "model",
            level.0,
        )
        .map_err(|e| e.to_string())?;
        match cached {
            Some(path) => {
                std::fs::rename(&built, &path).map_err(|e| {
                    format!(
                        "could not move {} to {}: {e}",
                        built.display(),
                        path.display()
                    )
                })?;
                Ok(path)
            }
            None => {
                // The library must outlive this function: keep its directory.
                let kept = build_dir.keep();
                Ok(kept.join(built.file_name().expect("a library file")))
            }
        }
    }
}

/// A library being compiled by a child process ([`LibrarySource::spawn`]).
pub(crate) struct PendingLibrary {
    child: std::process::Child,
    target: PathBuf,
}

impl PendingLibrary {
    /// Wait for the compiler and load the library.
    pub(crate) fn wait(self) -> Result<NativeLibrary, GeneratedCodeError> {
        let output = self
            .child
            .wait_with_output()
            .map_err(|e| GeneratedCodeError::Compile(format!("{}: {e}", shim::COMPILER)))?;
        if !output.status.success() {
            return Err(GeneratedCodeError::Compile(format!(
                "{} failed:\n{}",
                shim::COMPILER,
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        NativeLibrary::load(&self.target)
    }
}

/// Generated code compiled for the host and loaded: a shim library with
/// lane-major state.
pub(crate) struct NativeLibrary {
    module: ShimModule,
}

impl NativeLibrary {
    fn load(path: &std::path::Path) -> Result<NativeLibrary, GeneratedCodeError> {
        let module =
            ShimModule::load(path).map_err(|e| GeneratedCodeError::Compile(e.to_string()))?;
        Ok(NativeLibrary { module })
    }

    /// The address of the exported C function `name` (valid while the
    /// library is).
    pub(crate) fn function(&self, name: &str) -> Result<*const c_void, GeneratedCodeError> {
        self.module
            .function(name)
            .map_err(|e| GeneratedCodeError::Compile(e.to_string()))
    }

    /// The launcher of `kernel` (valid while the library is).
    pub(crate) fn launcher(&self, kernel: &str) -> Result<LaunchFn, GeneratedCodeError> {
        self.module
            .launcher(kernel)
            .map_err(|e| GeneratedCodeError::Compile(e.to_string()))
    }
}

impl NativeProgram {
    /// The C of `program` for the host: its kernels and one lane's whole
    /// evaluation.
    fn library_source(program: &DeviceProgram) -> LibrarySource {
        LibrarySource::new(
            format!("{}{}", program.source, lane_gradient_source(program)),
            program.layout.n_slots(),
            program.kernel_names(),
        )
    }

    /// Compile `program` at `level` (from the cache when it was compiled
    /// before).
    fn compile(
        program: DeviceProgram,
        level: Optimization,
    ) -> Result<NativeProgram, GeneratedCodeError> {
        let library = NativeProgram::library_source(&program).compile(level)?;
        NativeProgram::from_library(program, library)
    }

    /// `program` run by its compiled `library`.
    pub(crate) fn from_library(
        program: DeviceProgram,
        library: NativeLibrary,
    ) -> Result<NativeProgram, GeneratedCodeError> {
        // SAFETY: `lane_gradient_source` defines it with this signature.
        let lane_gradient: LaneGradientFn =
            unsafe { std::mem::transmute(library.function(LANE_GRADIENT)?) };
        let launcher = |name: &str| library.launcher(name);
        let mut blocks = Vec::with_capacity(program.blocks.len());
        for launches in &program.blocks {
            let mut steps = Vec::with_capacity(launches.len());
            for step in launches {
                let rows = match step {
                    Launch::Lanes { .. } => 1,
                    Launch::Gemm { rows, .. } => rows.div_ceil(GEMM_ROWS_PER_THREAD).max(1),
                    Launch::External(e) => {
                        return Err(GeneratedCodeError::Setup(format!(
                            "the gradient program calls the external function {}",
                            e.function
                        )));
                    }
                };
                steps.push((launcher(step.kernel())?, rows as u32));
            }
            blocks.push(steps);
        }
        Ok(NativeProgram {
            data: data_values(&program.layout),
            lane_gradient,
            start: launcher(&program.helper(START_KERNEL))?,
            gather: launcher(&program.helper(GATHER_KERNEL))?,
            blocks,
            _library: library,
            program,
        })
    }

    /// The generated code being run.
    pub fn program(&self) -> &DeviceProgram {
        &self.program
    }
}

/// The cache directory of compiled libraries (None: no home to put it in).
fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BAT_NATIVE_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("bat").join("native"))
}

/// This machine's CPU model and instruction-set flags (`/proc/cpuinfo`'s
/// first processor; empty where there is none): libraries are built with
/// `-march=native`, so a cache shared between machines (a home directory
/// on a cluster) must not hand one CPU's library to another.
fn host_cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let first = info.split("\n\n").next().unwrap_or_default();
    first
        .lines()
        .filter(|l| l.starts_with("model name") || l.starts_with("flags"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A model's gradient program generated as C, not yet compiled
/// ([`NativeGradient::generate`]).
pub struct GeneratedGradient {
    pc: pc::Program,
    pub(crate) program: DeviceProgram,
    stack_capacities: Vec<usize>,
    model: Model,
}

impl GeneratedGradient {
    /// Compile the program (from the cache when it was compiled before),
    /// with the state of `lanes` lanes.
    pub fn compile(self, lanes: usize) -> Result<NativeGradient, GeneratedCodeError> {
        let compiled = Arc::new(NativeProgram::compile(
            self.program.clone(),
            Optimization::FULL,
        )?);
        Ok(self.into_gradient(compiled, lanes))
    }

    /// The model's source spans of the statements whose code a compiler
    /// error in `log` names: each kernel is named `{prefix}_b{block}_{n}`
    /// after the PC block it runs. In the program's order, once each.
    pub fn spans_named_in(&self, log: &str) -> Vec<language::span::Span> {
        let marker = format!("{}_b", self.program.prefix);
        let mut blocks: Vec<usize> = log
            .match_indices(&marker)
            .filter_map(|(at, _)| {
                let rest = &log[at + marker.len()..];
                let digits =
                    rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                rest[digits..]
                    .starts_with('_')
                    .then(|| rest[..digits].parse().ok())?
            })
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        let mut spans = Vec::new();
        for block in blocks.into_iter().filter_map(|b| self.pc.blocks.get(b)) {
            for op in &block.ops {
                if let pc::Op::Stmt(s) = op
                    && s.span.end > s.span.start
                    && !spans.contains(&s.span)
                {
                    spans.push(s.span);
                }
            }
        }
        spans
    }

    /// The C to compile.
    pub fn library_source(&self) -> LibrarySource {
        NativeProgram::library_source(&self.program)
    }

    /// An executor of the program compiled as `compiled`, for `lanes` lanes.
    pub(crate) fn into_gradient(
        self,
        compiled: Arc<NativeProgram>,
        lanes: usize,
    ) -> NativeGradient {
        NativeGradient::with_program(
            self.pc,
            Arc::new(self.model),
            self.stack_capacities,
            compiled,
            lanes,
        )
    }
}

/// A model's gradient program compiled for the host, with the state of
/// `lanes` lanes.
pub struct NativeGradient {
    pc: pc::Program,
    /// Shared by the siblings (it holds the data's values).
    model: Arc<Model>,
    n_lanes: usize,
    stack_capacities: Vec<usize>,
    compiled: Arc<NativeProgram>,
    state: LaneState,
    data: Arc<[f64]>,
    counts: Vec<i32>,
    lists: Vec<i32>,
    active: Vec<i32>,
    gathered: Vec<f64>,
    /// Blocks run by the last evaluation (for tests and benchmarks).
    pub last_steps: usize,
    /// Lanes run in blocks over all evaluations: each block runs exactly
    /// the lanes waiting at it, so every one of these is useful work.
    pub block_lanes: u64,
}

impl NativeGradient {
    /// Generate and compile the gradient program of `model` (lowered to
    /// the CFG `grad_cfg`) for a batch of `lanes` lanes. A program with an
    /// op the code generator lacks is refused, naming the ops.
    pub fn new(
        grad_cfg: &cfg::Program,
        model: Model,
        lanes: usize,
    ) -> Result<NativeGradient, GeneratedCodeError> {
        NativeGradient::generate(grad_cfg, model)?.compile(lanes)
    }

    /// Generate the C of `model`'s gradient program (lowered to the CFG
    /// `grad_cfg`) without compiling it: refused here, naming the ops,
    /// when the generator lacks one — before any compiler runs.
    pub fn generate(
        grad_cfg: &cfg::Program,
        model: Model,
    ) -> Result<GeneratedGradient, GeneratedCodeError> {
        let (pc, program, stack_capacities) = device_program(grad_cfg, &model)?;
        Ok(GeneratedGradient {
            pc,
            program,
            stack_capacities,
            model,
        })
    }

    /// Another executor of the same compiled program (no compilation),
    /// with its own state for `lanes` lanes: one per thread.
    pub fn sibling(&self, lanes: usize) -> NativeGradient {
        NativeGradient::with_program(
            self.pc.clone(),
            self.model.clone(),
            self.stack_capacities.clone(),
            self.compiled.clone(),
            lanes,
        )
    }

    fn with_program(
        pc: pc::Program,
        model: Arc<Model>,
        stack_capacities: Vec<usize>,
        compiled: Arc<NativeProgram>,
        lanes: usize,
    ) -> NativeGradient {
        let n_lanes = lanes.max(1);
        let program = &compiled.program;
        let state = lane_major_state(&program.layout, n_lanes);
        let data = compiled.data.clone();
        let n_blocks = program.blocks.len().max(1);
        let gathered = vec![0.0; (GATHERED_HEADER + program.n_params) * n_lanes];
        NativeGradient {
            pc,
            model,
            n_lanes,
            stack_capacities,
            state,
            data,
            counts: vec![0; n_blocks],
            lists: vec![0; n_blocks * n_lanes],
            // Evaluations run lanes 0..k: the list of the first k.
            active: (0..n_lanes as i32).collect(),
            gathered,
            compiled,
            last_steps: 0,
            block_lanes: 0,
        }
    }

    pub fn lanes(&self) -> usize {
        self.n_lanes
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The compiled program.
    pub fn program(&self) -> &DeviceProgram {
        &self.compiled.program
    }

    /// Run `full` in place of `quick` if that is the program this
    /// executor runs (same source, so the same state layout and values).
    /// A program recompiled with larger stacks is neither.
    pub(crate) fn upgrade(&mut self, quick: &Arc<NativeProgram>, full: &Arc<NativeProgram>) {
        if Arc::ptr_eq(&self.compiled, quick) {
            self.compiled = full.clone();
        }
    }

    /// Whether this executor runs `program`.
    pub(crate) fn runs(&self, program: &Arc<NativeProgram>) -> bool {
        Arc::ptr_eq(&self.compiled, program)
    }

    /// Room on each AD stack per lane (grown when a lane overflows it).
    pub fn stack_capacities(&self) -> &[usize] {
        &self.stack_capacities
    }

    /// Log density (with log |J| when `jacobian`) and gradient of lanes
    /// `0..k` at `theta[c * k + i]` (coordinate `c` of lane `i`: the
    /// `[coordinate][lane]` columns of backend-cpu's batched gradient),
    /// as columns in this executor's memory (no allocation unless a lane
    /// fails).
    pub fn evaluate_columns(
        &mut self,
        theta: &[f64],
        k: usize,
        jacobian: bool,
    ) -> Result<Evaluated<'_>, GeneratedCodeError> {
        let n = self.compiled.program.n_params;
        if theta.len() != n * k {
            return Err(GeneratedCodeError::Setup(format!(
                "{} coordinates given for {k} lanes of {n}",
                theta.len()
            )));
        }
        if k > self.n_lanes {
            return Err(GeneratedCodeError::Setup(format!(
                "{k} lanes asked of an executor for {}",
                self.n_lanes
            )));
        }
        let mut failures = Vec::new();
        loop {
            self.run(theta, k, jacobian);
            // A lane that overflowed an AD stack: all run again with larger
            // stacks (rare: the stacks are sized from the interpreter).
            let mut overflowed = false;
            failures.clear();
            for i in 0..k {
                match self.lane_status(i, k) {
                    LaneStatus::Done => {}
                    LaneStatus::StackOverflow => overflowed = true,
                    LaneStatus::Failed(e) => failures.push((i, e)),
                }
            }
            if !overflowed {
                break;
            }
            self.grow_stacks()?;
        }
        Ok(Evaluated {
            k,
            gathered: &self.gathered[..(GATHERED_HEADER + n) * k],
            failures,
        })
    }

    /// [`Self::evaluate_columns`] lane by lane: each lane's log density
    /// and gradient, or its error.
    pub fn log_density_gradient_columns(
        &mut self,
        theta: &[f64],
        k: usize,
        jacobian: bool,
    ) -> Result<Vec<LaneGradient>, GeneratedCodeError> {
        let n = self.compiled.program.n_params;
        let evaluated = self.evaluate_columns(theta, k, jacobian)?;
        let mut lanes: Vec<LaneGradient> = (0..k)
            .map(|i| {
                let grad = (0..n).map(|c| evaluated.gradient(c)[i]).collect();
                Ok((evaluated.log_density()[i], grad))
            })
            .collect();
        for (i, e) in evaluated.failures {
            lanes[i] = Err(e);
        }
        Ok(lanes)
    }

    /// What a caller needs to evaluate one lane directly, in this
    /// executor's lane 0 ([`LANE_GRADIENT`]): the function, the state and
    /// the data. Valid until the next evaluation through `self` (which
    /// may regrow the stacks: a new library and state).
    pub(crate) fn lane_call(&mut self) -> (LaneGradientFn, *mut f64, *const f64) {
        (
            self.compiled.lane_gradient,
            self.state.as_mut_ptr(),
            self.data.as_ptr(),
        )
    }

    /// Count `blocks` more blocks run for one lane each (by
    /// [`NativeGradient::lane_call`]'s function).
    pub(crate) fn add_lane_blocks(&mut self, blocks: u64) {
        self.block_lanes += blocks;
    }

    /// Twice the AD stack capacity, recompiled.
    fn grow_stacks(&mut self) -> Result<(), GeneratedCodeError> {
        for c in &mut self.stack_capacities {
            *c *= 2;
        }
        let program = regenerate(&self.pc, &self.model, &self.stack_capacities)?;
        let compiled = Arc::new(NativeProgram::compile(program, Optimization::FULL)?);
        let block_lanes = self.block_lanes;
        *self = NativeGradient::with_program(
            self.pc.clone(),
            self.model.clone(),
            self.stack_capacities.clone(),
            compiled,
            self.n_lanes,
        );
        self.block_lanes = block_lanes;
        Ok(())
    }

    /// Evaluate lanes `0..k` at the compact points `theta` (`[c][i]`),
    /// their results gathered into `gathered`.
    fn run(&mut self, theta: &[f64], k: usize, jacobian: bool) {
        if k == 0 {
            return;
        }
        let c = &self.compiled;
        let n_lanes = self.n_lanes as i32;
        let n_active = k as i32;
        let state = self.state.as_mut_ptr();
        let active = self.active.as_ptr();
        {
            let (jac, entry) = (if jacobian { 1.0f64 } else { 0.0 }, c.program.entry as i32);
            let theta = theta.as_ptr();
            let mut args = [
                arg(&state),
                arg(&theta),
                arg(&active),
                arg(&n_active),
                arg(&n_lanes),
                arg(&jac),
                arg(&entry),
            ];
            // SAFETY: the start kernel's ABI (`codegen::program`): `state`
            // holds n_slots × n_lanes, `theta` n × k, `active` k lanes
            // below n_lanes.
            unsafe { call(c.start, k, 1, &mut args) };
        }
        let mut steps = 0;
        let n_slots = c.program.layout.n_slots();
        loop {
            // The schedule kernel's work, on the host (lane-major state:
            // two reads per lane, no launch): every running lane joins the
            // list of the block it waits at. Only lanes 0..k run (the
            // others finished earlier evaluations).
            self.counts.fill(0);
            for lane in 0..k {
                let slots = &self.state[lane * n_slots..];
                if slots[STATUS_SLOT] != 0.0 || slots[PC_SLOT] < 0.0 {
                    continue;
                }
                let b = slots[PC_SLOT] as usize;
                self.lists[b * self.n_lanes + self.counts[b] as usize] = lane as i32;
                self.counts[b] += 1;
            }
            let Some(b) = self.counts.iter().position(|&n| n > 0) else {
                break;
            };
            let waiting = self.counts[b];
            let list = self.lists[b * self.n_lanes..].as_ptr();
            let data = self.data.as_ptr();
            for &(kernel, rows) in &c.blocks[b] {
                let mut args = [
                    arg(&state),
                    arg(&data),
                    arg(&list),
                    arg(&waiting),
                    arg(&n_lanes),
                ];
                // SAFETY: lane/GEMM kernel ABI; `list` holds `waiting` lanes
                // below n_lanes, written by the schedule kernel.
                unsafe { call(kernel, waiting as usize, rows, &mut args) };
            }
            steps += 1;
            self.block_lanes += waiting as u64;
        }
        self.last_steps = steps;
        {
            let out = self.gathered.as_mut_ptr();
            let mut args = [
                arg(&state),
                arg(&out),
                arg(&active),
                arg(&n_active),
                arg(&n_lanes),
            ];
            // SAFETY: gather kernel ABI; `gathered` has (3 + n) × n_lanes.
            unsafe { call(c.gather, k, 1, &mut args) };
        }
    }

    /// How lane `i` of the last evaluation (of `k` lanes) ended.
    fn lane_status(&self, i: usize, k: usize) -> LaneStatus {
        let out = &self.gathered;
        let (status, site) = (out[i], out[k + i]);
        if status == 0.0 {
            return LaneStatus::Done;
        }
        let program = &self.compiled.program;
        match program.sites.get(site as usize) {
            Some(s) if s.kind == FailKind::StackOverflow => LaneStatus::StackOverflow,
            Some(s) => {
                let mut error = site_error(program, site as usize).expect("the site exists");
                if !s.parts.is_empty() {
                    // With the values the lane stored (`reject`, ODE failures).
                    let n_slots = program.layout.n_slots();
                    error.message = s.lane_message(|slot| self.state[i * n_slots + slot]);
                }
                LaneStatus::Failed(error)
            }
            None => LaneStatus::Failed(RuntimeError::fatal(format!(
                "the native gradient reported an unknown failure (status {status}, site {site:?})"
            ))),
        }
    }
}

enum LaneStatus {
    Done,
    StackOverflow,
    Failed(RuntimeError),
}

/// The results of one evaluation of `k` lanes, as columns over the lanes.
pub struct Evaluated<'a> {
    k: usize,
    /// The gather kernel's rows: status, site, log density, gradient.
    gathered: &'a [f64],
    /// The lanes that failed, with their errors (their columns' values
    /// mean nothing).
    pub failures: Vec<(usize, RuntimeError)>,
}

impl Evaluated<'_> {
    /// Every lane's log density.
    pub fn log_density(&self) -> &[f64] {
        &self.gathered[2 * self.k..3 * self.k]
    }

    /// The gather kernel's rows (status, site, log density, gradient),
    /// as the device sampler's answer kernels read them.
    pub fn gathered(&self) -> &[f64] {
        self.gathered
    }

    /// Coordinate `c` of every lane's gradient.
    pub fn gradient(&self, c: usize) -> &[f64] {
        let at = (GATHERED_HEADER + c) * self.k;
        &self.gathered[at..at + self.k]
    }
}

/// The state of `n_lanes` lanes of `layout`, lane-major, every lane
/// finished (program counter −1, status 0).
pub(crate) fn lane_major_state(layout: &Layout, n_lanes: usize) -> LaneState {
    let n_slots = layout.n_slots();
    let mut state = LaneState::zeroed(n_slots * n_lanes);
    for lane in 0..n_lanes {
        state[lane * n_slots + PC_SLOT] = -1.0;
    }
    state
}

/// The data values of `layout` (one unused number when there are none).
pub(crate) fn data_values(layout: &Layout) -> Arc<[f64]> {
    if layout.data.is_empty() {
        Arc::from([0.0])
    } else {
        Arc::from(layout.data.as_slice())
    }
}

/// A kernel argument: a pointer to its value.
pub(crate) fn arg<T>(value: &T) -> *mut c_void {
    value as *const T as *mut c_void
}

/// Run `kernel` for `threads` threads (`rows` grid rows), one after
/// another on this thread. One block of exactly `threads` threads: every
/// kernel finds its thread as `blockIdx.x * blockDim.x + threadIdx.x`, and
/// no thread past the last lane is run (the device's 128-thread blocks
/// would cost 127 idle calls per launch at one lane).
///
/// # Safety
/// `args` must match the kernel's parameters, and the memory they point
/// to must be as large as the kernel's ABI says.
pub(crate) unsafe fn call(kernel: LaunchFn, threads: usize, rows: u32, args: &mut [*mut c_void]) {
    let block = threads.max(1) as u32;
    // SAFETY: forwarded from the caller.
    unsafe { kernel(1, rows, 1, block, 1, 1, 0, args.as_mut_ptr()) };
}
