//! The device executor of a whole program run for every lane from one
//! entry function — bat's sampler program (`nuts.stan`) for every chain —
//! with the model's gradient program on the same device
//! ([`SamplerDevice`]).
//!
//! Lane state, variable and program-counter stacks and each lane's random
//! stream stay in device memory ([`crate::codegen::entry`]). The host loop
//! is the gradient device's: a kernel lists the running lanes by the
//! block each waits at, the host reads back only the counts, and launches
//! the lowest-numbered waiting block's kernels over exactly its lanes.
//! An external call inside a block is answered between two of its
//! kernels:
//! - `model_log_density_gradient`: a kernel packs the lanes' points on
//!   the device, the gradient device evaluates exactly those lanes from
//!   there (device to device; only statuses come back, for AD stack
//!   overflows), and a kernel writes each lane's `(lp, gradient)` as the
//!   CPU's sampler host answers (lp −∞ after a rejection);
//! - calls without a result (`emit_draw`, `emit_adaptation`): a kernel
//!   appends a record to the lane's record buffer; the host copies all
//!   records back only when a buffer could be full (every
//!   `record_capacity` such calls) and at the end, and hands them to a
//!   [`RecordHost`] in each lane's order.
//!
//! A lane that fails stops with its failure site; a record the host
//! refuses (an error, or Ctrl-C) stops that lane at the next copy.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use language::batch::{cfg, pc};
use language::value::Value;
use runtime::{ErrorKind, RuntimeError};

use crate::codegen::entry::{self, EntryProgram};
use crate::codegen::program::{
    GEMM_ROWS_PER_THREAD, GRADIENT_EVALUATIONS, GRADIENT_FAILED_SITE, LAST_GRADIENT_SITE, Launch,
    RECORD_COUNT, RECORD_OVERFLOW_SITE, SCHEDULE_KERNEL, START_KERNEL,
};
use crate::codegen::shape::{Inner, Shape};
use crate::codegen::{FATAL_STATUS, FailKind, PC_SLOT, SITE_SLOT, STATUS_SLOT};
use crate::device::{Module, THREADS_PER_BLOCK, driver};
use crate::gradient::{GradientDevice, GradientDeviceError, RefusedOp};

/// The external function answered by the gradient device.
pub const GRADIENT_FUNCTION: &str = "model_log_density_gradient";

/// Receives the records of external calls without a result.
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

/// A program resident on the device for `lanes` lanes, with the model's
/// gradient device.
pub struct SamplerDevice {
    gradient: GradientDevice,
    program: EntryProgram,
    module: Module,
    n_lanes: usize,
    record_capacity: usize,
    state: CudaSlice<f64>,
    data: CudaSlice<f64>,
    counts: CudaSlice<i32>,
    lists: CudaSlice<i32>,
    packed: CudaSlice<f64>,
    records: CudaSlice<f64>,
    /// Blocks launched by the last run.
    pub last_steps: usize,
    /// Gradient evaluations of the last run: calls of the gradient device
    /// and lanes evaluated over all calls.
    pub gradient_calls: u64,
    pub gradient_lanes: u64,
    /// Blocks that call the gradient (run only when no other block has
    /// waiting lanes, so that each evaluation serves as many lanes as
    /// possible).
    calls_gradient: Vec<bool>,
}

fn config(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(THREADS_PER_BLOCK).max(1), 1, 1),
        block_dim: (THREADS_PER_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl SamplerDevice {
    /// Generate, compile and load `program_cfg` run from `entry` with
    /// arguments of `params`' shapes, its external gradient answered by
    /// `gradient` (whose lanes are this program's lanes). Records are
    /// copied back at least every `record_capacity` calls without a
    /// result. A program with an op the generator lacks is refused.
    pub fn new(
        program_cfg: &cfg::Program,
        entry: &str,
        params: &[Shape],
        gradient: GradientDevice,
        record_capacity: usize,
    ) -> Result<SamplerDevice, GradientDeviceError> {
        let program = runnable_program(program_cfg, entry, params)?;
        let n_lanes = gradient.lanes();
        let names = program.kernel_names();
        let image = gradient
            .compiler()
            .compile_source(&program.source, &names)?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let module = gradient.device().load(image, &names)?;
        let stream = gradient.device().stream().clone();
        let record_capacity = record_capacity.max(1);
        let n_slots = program.layout.n_slots();
        let mut state = vec![0.0; n_slots * n_lanes];
        state[PC_SLOT * n_lanes..(PC_SLOT + 1) * n_lanes].fill(-1.0);
        let data = if program.layout.data.is_empty() {
            vec![0.0]
        } else {
            program.layout.data.clone()
        };
        let n_blocks = program.blocks.len().max(1);
        let packed_width = program
            .externals
            .iter()
            .map(|e| e.width())
            .max()
            .unwrap_or(0);
        let alloc_f64 = |len: usize| stream.alloc_zeros::<f64>(len.max(1)).map_err(driver);
        let alloc_i32 = |len: usize| stream.alloc_zeros::<i32>(len.max(1)).map_err(driver);
        let calls_gradient = program
            .blocks
            .iter()
            .map(|launches| {
                launches
                    .iter()
                    .any(|l| matches!(l, Launch::External(e) if e.answer.is_some()))
            })
            .collect();
        Ok(SamplerDevice {
            calls_gradient,
            gradient_calls: 0,
            gradient_lanes: 0,
            state: stream.clone_htod(&state).map_err(driver)?,
            data: stream.clone_htod(&data).map_err(driver)?,
            counts: alloc_i32(n_blocks)?,
            lists: alloc_i32(n_blocks * n_lanes)?,
            packed: alloc_f64(packed_width * n_lanes)?,
            records: alloc_f64(n_lanes * record_capacity * program.record_width())?,
            gradient,
            program,
            module,
            n_lanes,
            record_capacity,
            last_steps: 0,
        })
    }

    pub fn program(&self) -> &EntryProgram {
        &self.program
    }

    pub fn gradient(&self) -> &GradientDevice {
        &self.gradient
    }

    /// Run every lane from the entry with arguments `args[lane]`; lane
    /// `lane` draws from the CPU's stream 0 of chain `chains[lane]` under
    /// `seed`. Records go to `host` lane by lane in order.
    pub fn run(
        &mut self,
        args: &[Vec<Value>],
        chains: &[u32],
        seed: u64,
        host: &mut dyn RecordHost,
    ) -> Result<Vec<LaneOutcome>, GradientDeviceError> {
        let n_lanes = self.n_lanes;
        let packed_args = pack_entry_args(&self.program, args, chains, n_lanes)?;
        let stream = self.gradient.device().stream().clone();
        let args_dev = stream.clone_htod(&packed_args).map_err(driver)?;
        let chains_dev = stream
            .clone_htod(&chains.iter().map(|&c| c as i32).collect::<Vec<_>>())
            .map_err(driver)?;
        let missing = |name: &str| GradientDeviceError::Setup(format!("kernel {name} missing"));
        {
            let name = self.program.helper(START_KERNEL);
            let f = self.module.kernel(&name).ok_or_else(|| missing(&name))?;
            let (lanes, entry) = (n_lanes as i32, self.program.entry as i32);
            let mut launch = stream.launch_builder(f);
            launch
                .arg(&mut self.state)
                .arg(&args_dev)
                .arg(&chains_dev)
                .arg(&lanes)
                .arg(&seed)
                .arg(&entry);
            // SAFETY: start kernel ABI (codegen::entry); `args_dev` holds
            // every lane's arguments and `chains_dev` n_lanes chains.
            unsafe { launch.launch(config(n_lanes)) }.map_err(driver)?;
        }
        self.gradient_calls = 0;
        self.gradient_lanes = 0;
        let mut failed: Vec<Option<RuntimeError>> = vec![None; n_lanes];
        let n_blocks = self.program.blocks.len();
        let mut counts = vec![0i32; n_blocks];
        let mut since_copy = 0;
        let mut steps = 0;
        let lanes_i32 = n_lanes as i32;
        loop {
            stream.memset_zeros(&mut self.counts).map_err(driver)?;
            {
                let name = self.program.helper(SCHEDULE_KERNEL);
                let f = self.module.kernel(&name).ok_or_else(|| missing(&name))?;
                let mut launch = stream.launch_builder(f);
                launch
                    .arg(&self.state)
                    .arg(&mut self.counts)
                    .arg(&mut self.lists)
                    .arg(&lanes_i32);
                // SAFETY: schedule kernel ABI; `counts` has a slot per
                // block, `lists` n_lanes per block.
                unsafe { launch.launch(config(n_lanes)) }.map_err(driver)?;
            }
            stream
                .memcpy_dtoh(&self.counts, &mut counts)
                .map_err(driver)?;
            stream.synchronize().map_err(driver)?;
            // The lowest-numbered waiting block, gradient calls last: every
            // lane that will ask for a gradient next gets there first.
            let waiting_at = |b: &usize| counts[*b] > 0;
            let Some(b) = (0..n_blocks)
                .filter(|b| waiting_at(b) && !self.calls_gradient[*b])
                .chain((0..n_blocks).filter(waiting_at))
                .next()
            else {
                break;
            };
            let waiting = counts[b] as usize;
            if self.program.blocks[b].is_empty() {
                return Err(GradientDeviceError::Setup(format!(
                    "lanes wait at block {b}, which has no kernels"
                )));
            }
            let launches = self.program.blocks[b].clone();
            for step in &launches {
                let lists = self.lists.slice(b * n_lanes..(b + 1) * n_lanes);
                let n_active = waiting as i32;
                match step {
                    Launch::Lanes { kernel } | Launch::Gemm { kernel, .. } => {
                        let rows = match step {
                            Launch::Gemm { rows, .. } => rows.div_ceil(GEMM_ROWS_PER_THREAD),
                            _ => 1,
                        };
                        let f = self.module.kernel(kernel).ok_or_else(|| missing(kernel))?;
                        let mut launch = stream.launch_builder(f);
                        launch
                            .arg(&mut self.state)
                            .arg(&self.data)
                            .arg(&lists)
                            .arg(&n_active)
                            .arg(&lanes_i32);
                        let mut cfg = config(waiting);
                        cfg.grid_dim.1 = rows.max(1) as u32;
                        // SAFETY: lane/GEMM kernel ABI; `lists` holds
                        // `waiting` lanes below n_lanes.
                        unsafe { launch.launch(cfg) }.map_err(driver)?;
                    }
                    Launch::External(call) => {
                        let (width, cap) = (
                            self.program.record_width() as i32,
                            self.record_capacity as i32,
                        );
                        let f = self
                            .module
                            .kernel(&call.pack)
                            .ok_or_else(|| missing(&call.pack))?;
                        let record = call.answer.is_none();
                        {
                            let mut launch = stream.launch_builder(f);
                            launch
                                .arg(&mut self.state)
                                .arg(&self.data)
                                .arg(&lists)
                                .arg(&n_active);
                            launch.arg(&lanes_i32);
                            if record {
                                launch.arg(&mut self.records);
                            } else {
                                launch.arg(&mut self.packed);
                            }
                            launch.arg(&width).arg(&cap);
                            // SAFETY: pack kernel ABI; `records` holds
                            // `cap` records of `width` per lane, `packed`
                            // the widest call's values for every lane.
                            unsafe { launch.launch(config(waiting)) }.map_err(driver)?;
                        }
                        match &call.answer {
                            None => {
                                since_copy += 1;
                                if since_copy == self.record_capacity {
                                    self.copy_records(host, &mut failed)?;
                                    since_copy = 0;
                                }
                            }
                            Some(answer) => {
                                self.gradient_calls += 1;
                                self.gradient_lanes += waiting as u64;
                                let packed = self.packed.slice(0..call.width() * waiting);
                                let gathered =
                                    self.gradient.evaluate_resident(&lists, waiting, &packed)?;
                                let f =
                                    self.module.kernel(answer).ok_or_else(|| missing(answer))?;
                                let mut launch = stream.launch_builder(f);
                                launch
                                    .arg(&mut self.state)
                                    .arg(&self.data)
                                    .arg(&lists)
                                    .arg(&n_active)
                                    .arg(&lanes_i32)
                                    .arg(gathered);
                                // SAFETY: answer kernel ABI; `gathered`
                                // holds the gather kernel's rows for the
                                // same `waiting` lanes in the same order.
                                unsafe { launch.launch(config(waiting)) }.map_err(driver)?;
                            }
                        }
                    }
                }
            }
            steps += 1;
        }
        self.last_steps = steps;
        self.copy_records(host, &mut failed)?;
        self.outcomes(failed)
    }

    /// One column of lane state (slot `slot` of every lane).
    fn column(&self, slot: usize) -> Result<Vec<f64>, GradientDeviceError> {
        let stream = self.gradient.device().stream().clone();
        let n = self.n_lanes;
        let mut out = vec![0.0; n];
        stream
            .memcpy_dtoh(&self.state.slice(slot * n..(slot + 1) * n), &mut out)
            .map_err(driver)?;
        stream.synchronize().map_err(driver)?;
        Ok(out)
    }

    /// Copy every lane's records back, hand them to `host` in order, and
    /// empty the buffers; a lane whose record the host refuses stops.
    fn copy_records(
        &mut self,
        host: &mut dyn RecordHost,
        failed: &mut [Option<RuntimeError>],
    ) -> Result<(), GradientDeviceError> {
        let stream = self.gradient.device().stream().clone();
        let n = self.n_lanes;
        let count_slot = self.program.layout.reserved + RECORD_COUNT;
        let counts = self.column(count_slot)?;
        if counts.iter().all(|&c| c == 0.0) {
            return Ok(());
        }
        let width = self.program.record_width();
        let cap = self.record_capacity;
        let mut records = vec![0.0; n * cap * width];
        stream
            .memcpy_dtoh(&self.records.slice(0..n * cap * width), &mut records)
            .map_err(driver)?;
        stream.synchronize().map_err(driver)?;
        let mut stopped = Vec::new();
        for lane in 0..n {
            for c in 0..counts[lane] as usize {
                if failed[lane].is_some() {
                    break;
                }
                let rec = &records[(lane * cap + c) * width..(lane * cap + c + 1) * width];
                let Some(call) = self.program.externals.get(rec[0] as usize) else {
                    failed[lane] = Some(RuntimeError::fatal(format!(
                        "the device wrote a record of an unknown call {}",
                        rec[0]
                    )));
                    stopped.push(lane);
                    break;
                };
                if let Err(e) = host.record_numbers(lane, &call.function, &call.args, &rec[1..]) {
                    failed[lane] = Some(e);
                    stopped.push(lane);
                }
            }
        }
        // Every count back to 0; lanes the host stopped, stopped.
        stream
            .memset_zeros(&mut self.state.slice_mut(count_slot * n..(count_slot + 1) * n))
            .map_err(driver)?;
        for lane in stopped {
            let at = STATUS_SLOT * n + lane;
            stream
                .memcpy_htod(&[FATAL_STATUS], &mut self.state.slice_mut(at..at + 1))
                .map_err(driver)?;
        }
        stream.synchronize().map_err(driver)?;
        Ok(())
    }

    /// Every lane's outcome after the run.
    fn outcomes(
        &self,
        failed: Vec<Option<RuntimeError>>,
    ) -> Result<Vec<LaneOutcome>, GradientDeviceError> {
        let reserved = self.program.layout.reserved;
        let columns = [
            STATUS_SLOT,
            SITE_SLOT,
            reserved + GRADIENT_EVALUATIONS,
            reserved + LAST_GRADIENT_SITE,
        ]
        .map(|slot| self.column(slot));
        let [status, site, evaluations, last] = columns;
        let (status, site, evaluations, last) = (status?, site?, evaluations?, last?);
        Ok(lane_outcomes(
            &self.program,
            failed,
            |lane, slot| match slot {
                s if s == STATUS_SLOT => status[lane],
                s if s == SITE_SLOT => site[lane],
                s if s == reserved + GRADIENT_EVALUATIONS => evaluations[lane],
                s if s == reserved + LAST_GRADIENT_SITE => last[lane],
                s => self.column(s).map_or(f64::NAN, |c| c[lane]),
            },
            |lane, site| self.gradient.lane_site_error(site, lane),
        ))
    }
}

/// [`generate`], refusing a program with an op the generator lacks or an
/// external call other than the gradient that returns a value.
pub(crate) fn runnable_program(
    program_cfg: &cfg::Program,
    entry: &str,
    params: &[Shape],
) -> Result<EntryProgram, GradientDeviceError> {
    let program = generate(program_cfg, entry, params)?;
    crate::gradient::refuse_missing(&program.not_generated)?;
    if let Some(e) = program
        .externals
        .iter()
        .find(|e| e.answer.is_some() && e.function != GRADIENT_FUNCTION)
    {
        return Err(GradientDeviceError::Setup(format!(
            "the program's external function {} returns a value (only {GRADIENT_FUNCTION} may)",
            e.function
        )));
    }
    Ok(program)
}

/// The entry's arguments of every lane as `[value][lane]` (checked
/// against the program's parameters).
pub(crate) fn pack_entry_args(
    program: &EntryProgram,
    args: &[Vec<Value>],
    chains: &[u32],
    n_lanes: usize,
) -> Result<Vec<f64>, GradientDeviceError> {
    if args.len() != n_lanes || chains.len() != n_lanes {
        return Err(GradientDeviceError::Setup(format!(
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
            return Err(GradientDeviceError::Setup(format!(
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
pub(crate) fn lane_outcomes(
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
) -> Result<EntryProgram, GradientDeviceError> {
    let pc = pc::build(program_cfg).map_err(|e| GradientDeviceError::Setup(e.to_string()))?;
    let globals = vec![None; pc.mir.vars.len()];
    entry::generate(&pc, &globals, entry, params, "smp").map_err(|reason| {
        GradientDeviceError::Refused(vec![RefusedOp {
            at: "layout".to_string(),
            reason,
            span: None,
        }])
    })
}
