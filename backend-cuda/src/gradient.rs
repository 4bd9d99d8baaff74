//! The device executor of gradient programs: [`GradientDevice`] keeps a
//! batch of lanes' state resident in device memory and evaluates the log
//! density and gradient of any subset of them by program-counter
//! autobatching on the device.
//!
//! One evaluation: copy the lanes' points in, start them at the entry
//! block (a kernel), then repeat — a kernel lists the running lanes by the
//! block each waits at (counting them per block), the host reads back only
//! those counts, picks the lowest-numbered block with waiting lanes and
//! launches its kernels over exactly those lanes; each block's last kernel
//! writes every lane's next block — until no lane is waiting. A gather
//! kernel then collects each lane's status, log density and gradient for
//! one copy back.
//!
//! A program with an op the code generator lacks is refused at
//! construction (`GeneratedCodeError::Refused` from [`codegen::gradient`], naming the ops and
//! their source positions), never run. A lane whose AD stacks overflow
//! the capacity sized from the interpreter is re-run with larger stacks.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use codegen::gradient::{GeneratedCodeError, LaneGradient, device_program, regenerate, site_error};
use codegen::program::{
    DeviceProgram, GATHER_KERNEL, GATHERED_HEADER, GEMM_ROWS_PER_THREAD, Launch, SCHEDULE_KERNEL,
    START_KERNEL,
};
use codegen::{FailKind, PC_SLOT, shim};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use language::batch::{cfg, pc};
use runtime::{Model, RuntimeError};

use crate::device::{Device, DeviceError, Module, THREADS_PER_BLOCK, driver};
use crate::nvrtc::{self, Compiled};
use crate::probe::DeviceInfo;
use crate::stub::{STUB_DEVICE_NAME, module_image};

impl From<DeviceError> for GeneratedCodeError {
    fn from(e: DeviceError) -> GeneratedCodeError {
        GeneratedCodeError::Device(Box::new(e))
    }
}

/// How kernels become a module the driver loads.
pub(crate) enum Compiler {
    /// NVRTC, PTX for the device's architecture.
    Nvrtc { arch: String },
    /// The stub driver (no GPU): g++ against the CUDA-on-CPU shim.
    Shim { dir: tempfile::TempDir },
}

static SHIM_MODULES: AtomicUsize = AtomicUsize::new(0);

impl Compiler {
    fn for_device(info: &DeviceInfo) -> Result<Compiler, GeneratedCodeError> {
        if info.name == STUB_DEVICE_NAME {
            let dir = tempfile::tempdir()
                .map_err(|e| GeneratedCodeError::Setup(format!("temporary directory: {e}")))?;
            return Ok(Compiler::Shim { dir });
        }
        let (major, minor) = info.compute_capability;
        Ok(Compiler::Nvrtc {
            arch: format!("compute_{major}{minor}"),
        })
    }

    fn compile(&self, program: &DeviceProgram) -> Result<Compiled, GeneratedCodeError> {
        self.compile_source(&program.source, &program.kernel_names())
    }

    /// Compile one translation unit exporting kernels `names`.
    pub(crate) fn compile_source(
        &self,
        source: &str,
        names: &[String],
    ) -> Result<Compiled, GeneratedCodeError> {
        let failed = |e: String| GeneratedCodeError::Compile(e);
        match self {
            Compiler::Nvrtc { arch } => {
                nvrtc::compile_for(source, arch, false).map_err(|e| failed(e.to_string()))
            }
            Compiler::Shim { dir } => {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let k = SHIM_MODULES.fetch_add(1, Ordering::Relaxed);
                let library: PathBuf =
                    shim::build_module_serial(source, &names, dir.path(), &format!("module{k}"))
                        .map_err(|e| failed(e.to_string()))?;
                Ok(module_image(&library))
            }
        }
    }
}

/// A compiled program loaded on the device with its buffers.
struct Loaded {
    program: DeviceProgram,
    module: Module,
    state: CudaSlice<f64>,
    data: CudaSlice<f64>,
    counts: CudaSlice<i32>,
    lists: CudaSlice<i32>,
    active: CudaSlice<i32>,
    theta: CudaSlice<f64>,
    gathered: CudaSlice<f64>,
}

/// A model's gradient program resident on the device for `lanes` lanes.
pub struct GradientDevice {
    pc: pc::Program,
    model: Model,
    n_lanes: usize,
    stack_capacities: Vec<usize>,
    device: Device,
    compiler: Compiler,
    loaded: Loaded,
    /// Blocks launched by the last evaluation (for tests and benchmarks).
    pub last_steps: usize,
}

fn launch_config(threads: usize, rows_blocks: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            (threads as u32).div_ceil(THREADS_PER_BLOCK).max(1),
            rows_blocks.max(1) as u32,
            1,
        ),
        block_dim: (THREADS_PER_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl GradientDevice {
    /// Generate, compile and load the gradient program of `model` (lowered
    /// to the CFG `grad_cfg`) for a batch of `lanes` lanes.
    pub fn new(
        grad_cfg: &cfg::Program,
        model: Model,
        lanes: usize,
    ) -> Result<GradientDevice, GeneratedCodeError> {
        let (pc, program, stack_capacities) = device_program(grad_cfg, &model)?;
        let device = Device::open()?;
        let info = crate::probe().map_err(DeviceError::from)?;
        let compiler = Compiler::for_device(&info)?;
        let n_lanes = lanes.max(1);
        let loaded = load(&device, &compiler, program, n_lanes)?;
        Ok(GradientDevice {
            pc,
            model,
            n_lanes,
            stack_capacities,
            device,
            compiler,
            loaded,
            last_steps: 0,
        })
    }

    pub fn lanes(&self) -> usize {
        self.n_lanes
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Room on each AD stack per lane (grown when a lane overflows it).
    pub fn stack_capacities(&self) -> &[usize] {
        &self.stack_capacities
    }

    /// The device code being run.
    pub fn program(&self) -> &DeviceProgram {
        &self.loaded.program
    }

    /// Log density (with log |J| when `jacobian`) and gradient of lanes
    /// `0..thetas.len()` at their unconstrained points.
    pub fn log_density_gradient(
        &mut self,
        thetas: &[Vec<f64>],
        jacobian: bool,
    ) -> Result<Vec<LaneGradient>, GeneratedCodeError> {
        let lanes: Vec<usize> = (0..thetas.len()).collect();
        let n = self.model.num_unconstrained();
        if let Some(bad) = thetas.iter().find(|t| t.len() != n) {
            return Err(GeneratedCodeError::Setup(format!(
                "expected {n} unconstrained parameters, found {}",
                bad.len()
            )));
        }
        let mut theta = vec![0.0; n * lanes.len()];
        for (i, t) in thetas.iter().enumerate() {
            for (k, &x) in t.iter().enumerate() {
                theta[k * lanes.len() + i] = x;
            }
        }
        self.evaluate(&lanes, &theta, jacobian)
    }

    /// Evaluate lanes `lanes` (distinct, each below [`Self::lanes`]) at
    /// `theta[k * lanes.len() + i]` (coordinate k of lane `lanes[i]`); the
    /// other lanes' state is left as it is.
    pub fn evaluate(
        &mut self,
        lanes: &[usize],
        theta: &[f64],
        jacobian: bool,
    ) -> Result<Vec<LaneGradient>, GeneratedCodeError> {
        let n = self.model.num_unconstrained();
        if theta.len() != n * lanes.len() {
            return Err(GeneratedCodeError::Setup(format!(
                "{} coordinates given for {} lanes of {n}",
                theta.len(),
                lanes.len()
            )));
        }
        if let Some(&bad) = lanes.iter().find(|&&l| l >= self.n_lanes) {
            return Err(GeneratedCodeError::Setup(format!(
                "lane {bad} is out of range for {} lanes",
                self.n_lanes
            )));
        }
        let mut results: Vec<Option<LaneGradient>> = vec![None; lanes.len()];
        let mut pending: Vec<usize> = (0..lanes.len()).collect();
        loop {
            let these: Vec<usize> = pending.iter().map(|&i| lanes[i]).collect();
            let mut x = vec![0.0; n * these.len()];
            for (j, &i) in pending.iter().enumerate() {
                for k in 0..n {
                    x[k * these.len() + j] = theta[k * lanes.len() + i];
                }
            }
            let outcome = self.run(&these, &x, jacobian)?;
            let mut overflowed = Vec::new();
            for (&i, lane) in pending.iter().zip(outcome) {
                match lane {
                    Outcome::Done(result) => results[i] = Some(result),
                    Outcome::StackOverflow => overflowed.push(i),
                }
            }
            if overflowed.is_empty() {
                break;
            }
            self.grow_stacks()?;
            pending = overflowed;
        }
        Ok(results
            .into_iter()
            .map(|r| r.expect("every lane ran"))
            .collect())
    }

    /// Twice the AD stack capacity, recompiled and reloaded.
    fn grow_stacks(&mut self) -> Result<(), GeneratedCodeError> {
        for c in &mut self.stack_capacities {
            *c *= 2;
        }
        let program = regenerate(&self.pc, &self.model, &self.stack_capacities)?;
        self.loaded = load(&self.device, &self.compiler, program, self.n_lanes)?;
        Ok(())
    }

    /// How this device's modules are compiled.
    pub(crate) fn compiler(&self) -> &Compiler {
        &self.compiler
    }

    /// The device this program runs on (to share its context and stream).
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Evaluate the `k` lanes listed in device memory at `active` at the
    /// points `theta` (device memory, coordinate `c` of the `t`-th lane
    /// at `c * k + t`), with the log Jacobian; the gathered results
    /// (the gather kernel's layout, [`GATHERED_HEADER`] rows then the
    /// gradient) stay in device memory, returned. Nothing but the lanes'
    /// statuses and failure sites is copied back (a lane that overflowed
    /// an AD stack is run again with larger stacks).
    pub fn evaluate_resident(
        &mut self,
        active: &cudarc::driver::CudaView<'_, i32>,
        k: usize,
        theta: &cudarc::driver::CudaView<'_, f64>,
    ) -> Result<&CudaSlice<f64>, GeneratedCodeError> {
        if k == 0 {
            return Ok(&self.loaded.gathered);
        }
        let stream = self.device.stream().clone();
        loop {
            let l = &mut self.loaded;
            let n = l.program.n_params;
            stream
                .memcpy_dtod(&active.slice(0..k), &mut l.active.slice_mut(0..k))
                .map_err(driver)?;
            if n > 0 {
                stream
                    .memcpy_dtod(&theta.slice(0..n * k), &mut l.theta.slice_mut(0..n * k))
                    .map_err(driver)?;
            }
            self.launch_evaluation(k, true)?;
            let l = &self.loaded;
            let mut head = vec![0.0; 2 * k];
            stream
                .memcpy_dtoh(&l.gathered.slice(0..2 * k), &mut head)
                .map_err(driver)?;
            stream.synchronize().map_err(driver)?;
            let overflowed = (0..k).any(|t| {
                head[t] != 0.0
                    && l.program
                        .sites
                        .get(head[k + t] as usize)
                        .is_some_and(|s| s.kind == FailKind::StackOverflow)
            });
            if !overflowed {
                return Ok(&self.loaded.gathered);
            }
            self.grow_stacks()?;
        }
    }

    /// [`Self::site_error`] of lane `lane`, its message written with the
    /// values the lane stored (`reject` / `fatal_error`; reads them back).
    pub fn lane_site_error(&self, site: usize, lane: usize) -> Option<RuntimeError> {
        let mut error = self.site_error(site)?;
        let s = &self.loaded.program.sites[site];
        if !s.parts.is_empty() {
            let stream = self.device.stream().clone();
            let n = self.n_lanes;
            let read = |slot: usize| {
                let at = slot * n + lane;
                let mut v = [0.0];
                let ok = stream
                    .memcpy_dtoh(&self.loaded.state.slice(at..at + 1), &mut v)
                    .and_then(|()| stream.synchronize());
                if ok.is_ok() { v[0] } else { f64::NAN }
            };
            error.message = s.lane_message(read);
        }
        Some(error)
    }

    /// The failure site `site` of the gradient program as the error the
    /// interpreter would give (None for an unknown site).
    pub fn site_error(&self, site: usize) -> Option<RuntimeError> {
        site_error(&self.loaded.program, site)
    }

    /// One evaluation of `lanes` (compact θ `[k][i]`) on the device.
    fn run(
        &mut self,
        lanes: &[usize],
        theta: &[f64],
        jacobian: bool,
    ) -> Result<Vec<Outcome>, GeneratedCodeError> {
        let stream = self.device.stream().clone();
        let k = lanes.len();
        if k == 0 {
            return Ok(Vec::new());
        }
        {
            let l = &mut self.loaded;
            let n = l.program.n_params;
            let active: Vec<i32> = lanes.iter().map(|&x| x as i32).collect();
            stream
                .memcpy_htod(&active, &mut l.active.slice_mut(0..k))
                .map_err(driver)?;
            if n > 0 {
                stream
                    .memcpy_htod(theta, &mut l.theta.slice_mut(0..n * k))
                    .map_err(driver)?;
            }
        }
        self.launch_evaluation(k, jacobian)?;
        let l = &self.loaded;
        let n = l.program.n_params;
        let rows = GATHERED_HEADER + n;
        let mut out = vec![0.0; rows * k];
        stream
            .memcpy_dtoh(&l.gathered.slice(0..rows * k), &mut out)
            .map_err(driver)?;
        stream.synchronize().map_err(driver)?;
        Ok((0..k)
            .map(|i| {
                let status = out[i];
                let site = out[k + i];
                let target = out[2 * k + i];
                if status == 0.0 {
                    let grad = (0..n).map(|c| out[(GATHERED_HEADER + c) * k + i]).collect();
                    return Outcome::Done(Ok((target, grad)));
                }
                match l.program.sites.get(site as usize) {
                    Some(s) if s.kind == FailKind::StackOverflow => Outcome::StackOverflow,
                    // With the values the lane stored for its message
                    // (`reject`, ODE failures), read back for failed lanes only.
                    Some(_) => Outcome::Done(Err(self
                        .lane_site_error(site as usize, lanes[i])
                        .expect("the site exists"))),
                    None => Outcome::Done(Err(RuntimeError::fatal(format!(
                        "the device reported an unknown failure (status {status}, site {site:?})"
                    )))),
                }
            })
            .collect())
    }

    /// Start the `k` lanes in `active` at the points in `theta` (both
    /// already on the device), run them to the end and gather their
    /// results into `gathered`.
    fn launch_evaluation(&mut self, k: usize, jacobian: bool) -> Result<(), GeneratedCodeError> {
        let stream = self.device.stream().clone();
        let l = &mut self.loaded;
        let n_lanes = self.n_lanes as i32;
        let kernel = |name: &str| -> Result<&CudaFunction, GeneratedCodeError> {
            l.module.kernel(name).ok_or_else(|| {
                GeneratedCodeError::Setup(format!("kernel {name} missing from the module"))
            })
        };
        let (n_active, jac, entry) = (
            k as i32,
            if jacobian { 1.0f64 } else { 0.0 },
            l.program.entry as i32,
        );
        {
            let start = kernel(&l.program.helper(START_KERNEL))?;
            let mut launch = stream.launch_builder(start);
            launch
                .arg(&mut l.state)
                .arg(&l.theta)
                .arg(&l.active)
                .arg(&n_active)
                .arg(&n_lanes)
                .arg(&jac)
                .arg(&entry);
            // SAFETY: the arguments follow the start kernel's ABI (module
            // docs of `codegen::program`); every buffer has room for all
            // lanes, and `active` holds k lanes below n_lanes.
            unsafe { launch.launch(launch_config(k, 1)) }.map_err(driver)?;
        }
        let n_blocks = l.program.blocks.len();
        let mut counts = vec![0i32; n_blocks];
        let mut steps = 0;
        loop {
            stream.memset_zeros(&mut l.counts).map_err(driver)?;
            {
                let schedule = kernel(&l.program.helper(SCHEDULE_KERNEL))?;
                let mut launch = stream.launch_builder(schedule);
                launch
                    .arg(&l.state)
                    .arg(&mut l.counts)
                    .arg(&mut l.lists)
                    .arg(&n_lanes);
                // SAFETY: schedule kernel ABI; `counts` has a slot per
                // block and `lists` n_lanes per block.
                unsafe { launch.launch(launch_config(self.n_lanes, 1)) }.map_err(driver)?;
            }
            stream.memcpy_dtoh(&l.counts, &mut counts).map_err(driver)?;
            stream.synchronize().map_err(driver)?;
            let Some(b) = counts.iter().position(|&c| c > 0) else {
                break;
            };
            let waiting = counts[b];
            if l.program.blocks[b].is_empty() {
                return Err(GeneratedCodeError::Setup(format!(
                    "lanes wait at block {b}, which has no kernels"
                )));
            }
            let lists = l.lists.slice(b * self.n_lanes..(b + 1) * self.n_lanes);
            for step in &l.program.blocks[b] {
                let f = l.module.kernel(step.kernel()).ok_or_else(|| {
                    GeneratedCodeError::Setup(format!("kernel {} missing", step.kernel()))
                })?;
                let row_blocks = match step {
                    Launch::Lanes { .. } => 1,
                    Launch::Gemm { rows, .. } => rows.div_ceil(GEMM_ROWS_PER_THREAD),
                    Launch::External(e) => {
                        return Err(GeneratedCodeError::Setup(format!(
                            "the gradient program calls the external function {}",
                            e.function
                        )));
                    }
                };
                let mut launch = stream.launch_builder(f);
                launch
                    .arg(&mut l.state)
                    .arg(&l.data)
                    .arg(&lists)
                    .arg(&waiting)
                    .arg(&n_lanes);
                // SAFETY: lane/GEMM kernel ABI; `lists` holds `waiting`
                // lanes below n_lanes, written by the schedule kernel.
                unsafe { launch.launch(launch_config(waiting as usize, row_blocks)) }
                    .map_err(driver)?;
            }
            steps += 1;
        }
        self.last_steps = steps;
        {
            let gather = kernel(&l.program.helper(GATHER_KERNEL))?;
            let mut launch = stream.launch_builder(gather);
            launch
                .arg(&l.state)
                .arg(&mut l.gathered)
                .arg(&l.active)
                .arg(&n_active)
                .arg(&n_lanes);
            // SAFETY: gather kernel ABI; `gathered` has (3 + n) × n_lanes.
            unsafe { launch.launch(launch_config(k, 1)) }.map_err(driver)?;
        }
        Ok(())
    }
}

enum Outcome {
    Done(LaneGradient),
    StackOverflow,
}

/// Compile `program`, load it, and allocate its buffers for `n_lanes`.
fn load(
    device: &Device,
    compiler: &Compiler,
    program: DeviceProgram,
    n_lanes: usize,
) -> Result<Loaded, GeneratedCodeError> {
    let image = compiler.compile(&program)?;
    let names = program.kernel_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let module = device.load(image, &names)?;
    let stream = device.stream();
    let n_slots = program.layout.n_slots();
    // Every lane starts finished (program counter −1, status 0).
    let mut state = vec![0.0; n_slots * n_lanes];
    state[PC_SLOT * n_lanes..(PC_SLOT + 1) * n_lanes].fill(-1.0);
    let data = if program.layout.data.is_empty() {
        vec![0.0]
    } else {
        program.layout.data.clone()
    };
    let n = program.n_params;
    let n_blocks = program.blocks.len().max(1);
    let alloc_f64 = |len: usize| stream.alloc_zeros::<f64>(len.max(1)).map_err(driver);
    let alloc_i32 = |len: usize| stream.alloc_zeros::<i32>(len.max(1)).map_err(driver);
    Ok(Loaded {
        state: stream.clone_htod(&state).map_err(driver)?,
        data: stream.clone_htod(&data).map_err(driver)?,
        counts: alloc_i32(n_blocks)?,
        lists: alloc_i32(n_blocks * n_lanes)?,
        active: alloc_i32(n_lanes)?,
        theta: alloc_f64(n * n_lanes)?,
        gathered: alloc_f64((GATHERED_HEADER + n) * n_lanes)?,
        module,
        program,
    })
}
