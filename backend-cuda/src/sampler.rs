//! The device executor of a whole program run for every lane from one
//! entry function — bat's sampler program (`nuts.stan`) for every chain —
//! with the model's gradient program on the same device
//! ([`SamplerDevice`]).
//!
//! Lane state, variable and program-counter stacks and each lane's random
//! stream stay in device memory ([`codegen::entry`]). The host loop
//! is the gradient device's: a kernel lists the running lanes by the
//! block each waits at, the host reads back only the counts, and launches
//! the lowest-numbered waiting block's kernels over exactly its lanes,
//! blocks that call the gradient only when no other block has lanes
//! waiting. That is the rule of the CPU backend's program-counter
//! scheduler (the wait queue of backend-cpu's `exec/schedule.rs` with
//! `EarliestFirst`, gradient calls as barriers), written here over the
//! device's counts because the lane lists never leave the device.
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

use codegen::entry::EntryProgram;
use codegen::gradient::GeneratedCodeError;
use codegen::program::{
    GEMM_ROWS_PER_THREAD, GRADIENT_EVALUATIONS, LAST_GRADIENT_SITE, Launch, RECORD_COUNT,
    SCHEDULE_KERNEL, START_KERNEL,
};
use codegen::sampler::{LaneOutcome, RecordHost, lane_outcomes, pack_entry_args, runnable_program};
use codegen::shape::Shape;
use codegen::{FATAL_STATUS, PC_SLOT, SITE_SLOT, STATUS_SLOT};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use language::batch::cfg;
use language::value::Value;
use runtime::RuntimeError;

use crate::device::{Module, THREADS_PER_BLOCK, driver};
use crate::gradient::GradientDevice;

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
    ) -> Result<SamplerDevice, GeneratedCodeError> {
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
    ) -> Result<Vec<LaneOutcome>, GeneratedCodeError> {
        let n_lanes = self.n_lanes;
        let packed_args = pack_entry_args(&self.program, args, chains, n_lanes)?;
        let stream = self.gradient.device().stream().clone();
        let args_dev = stream.clone_htod(&packed_args).map_err(driver)?;
        let chains_dev = stream
            .clone_htod(&chains.iter().map(|&c| c as i32).collect::<Vec<_>>())
            .map_err(driver)?;
        let missing = |name: &str| GeneratedCodeError::Setup(format!("kernel {name} missing"));
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
                return Err(GeneratedCodeError::Setup(format!(
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
    fn column(&self, slot: usize) -> Result<Vec<f64>, GeneratedCodeError> {
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
    ) -> Result<(), GeneratedCodeError> {
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
    ) -> Result<Vec<LaneOutcome>, GeneratedCodeError> {
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
