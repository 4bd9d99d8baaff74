//! `--backend native`: the sampler program and the model's gradient
//! program compiled to machine code (the CUDA backend's generated code
//! built with g++ for the host: [`backend_cuda::native_sampler`]), each
//! chain one lane of host-resident state. The chains are split over
//! `--threads` workers (one per core by default), each running its lanes
//! with its own executor of the one compiled program; chains meet at every
//! gradient evaluation within a worker. Chain `i`'s draws are the CPU
//! backend's (the same IEEE arithmetic in the same order, the same
//! counter-based streams).

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use backend_cuda::gradient::GradientDeviceError;
use backend_cuda::native::NativeGradient;
use backend_cuda::native_sampler::NativeSampler;
use backend_cuda::sampler::RecordHost;
use language::interp::{Rng, RuntimeError};
use language::value::Value;

use super::cuda::{device_sampler_program, finish_chains, gradient_cfg};
use super::executor::chain_start;
use super::host::{DrawCall, Emitter};
use super::program::CHAIN_FUNCTION;
use super::{BatchTotals, ChainJob, Event, SamplerExecutor};

/// The compiled sampler (one executor per worker thread).
pub struct NativeExecutor {
    /// An executor for one lane: the others are its siblings (sized per run).
    template: Mutex<NativeSampler>,
    threads: usize,
}

impl NativeExecutor {
    /// Generate and compile the sampler program and `job`'s gradient
    /// program (refused, naming the ops, when the generator lacks one).
    pub fn new(job: &ChainJob<'_>, threads: usize) -> Result<NativeExecutor, GradientDeviceError> {
        let grad_cfg = gradient_cfg(job)?;
        let gradient = NativeGradient::new(&grad_cfg, job.model.clone(), 1)?;
        let (cfg, params) = device_sampler_program(gradient.model().num_unconstrained())
            .map_err(GradientDeviceError::Setup)?;
        let sampler = NativeSampler::new(&cfg, CHAIN_FUNCTION, &params, gradient)?;
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            t => t,
        };
        Ok(NativeExecutor {
            template: Mutex::new(sampler),
            threads,
        })
    }
}

impl SamplerExecutor for NativeExecutor {
    fn run(&self, job: &ChainJob<'_>, chains: &[usize], events: &Sender<Event>, stop: &AtomicBool) {
        if chains.is_empty() {
            return;
        }
        let share = chains.len().div_ceil(self.threads);
        let template = self
            .template
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut samplers: Vec<NativeSampler> = chains
            .chunks(share)
            .map(|c| template.sibling(c.len()))
            .collect();
        drop(template);
        std::thread::scope(|scope| {
            for (sampler, chains) in samplers.iter_mut().zip(chains.chunks(share)) {
                scope.spawn(move || run_share(sampler, job, chains, events, stop));
            }
        });
    }
}

/// One worker's chains, one lane each.
fn run_share(
    sampler: &mut NativeSampler,
    job: &ChainJob<'_>,
    chains: &[usize],
    events: &Sender<Event>,
    stop: &AtomicBool,
) {
    let mut emitter = None;
    let mut args = Vec::with_capacity(chains.len());
    for &chain in chains {
        let (host, a, _) = chain_start(job, chain, events.clone(), stop);
        emitter = Some(host.emitter);
        args.push(a);
    }
    let Some(emitter) = emitter else { return };
    let mut hosts = Records {
        emitter,
        chains,
        events,
        draws: draws_model(job),
        pending: Vec::new(),
        kept: Vec::new(),
    };
    let ids: Vec<u32> = chains.iter().map(|&c| c as u32).collect();
    let outcome = sampler.run(&args, &ids, job.settings.seed, &mut hosts);
    let _ = events.send(Event::Batches(BatchTotals {
        calls: sampler.gradient_calls,
        lanes: sampler.gradient_lanes,
        slots: sampler.gradient_slots,
        // Each block of the compiled gradient runs exactly the lanes
        // waiting at it.
        gradient_blocks: super::LaneWork {
            slots: sampler.gradient().block_lanes,
            useful: sampler.gradient().block_lanes,
        },
    }));
    finish_chains(&outcome, chains, events);
}

/// Transformed parameters and generated quantities as a batched program
/// (one thread), run for many kept draws at once; None when they do not
/// lower to the batching IR (each draw then runs on the interpreter, with
/// the same values).
fn draws_model(job: &ChainJob<'_>) -> Option<BatchedModel> {
    let cfg = language::batch::lower_generated_quantities(job.model.program()).ok()?;
    let config = ExecConfig {
        batching: Batching::ProgramCounter,
        threads: 1,
        ..ExecConfig::default()
    };
    BatchedModel::new(cfg, job.model.clone(), config).ok()
}

/// Draws kept for a batch before their generated quantities are computed
/// and their events sent (one message): per-draw work (a batched program
/// run, a wake-up of the driver) was a third of a 1,000-chain run.
const RECORDS_PER_FLUSH: usize = 256;

/// The records of one worker's lanes (lane `i` runs chain `chains[i]`):
/// events in call order, kept draws' values computed together at a flush.
struct Records<'a> {
    emitter: Emitter<'a>,
    chains: &'a [usize],
    events: &'a Sender<Event>,
    draws: Option<BatchedModel>,
    /// (lane, its event or the draw waiting for its values).
    pending: Vec<(usize, Pending)>,
    /// Indices into `pending` of kept draws.
    kept: Vec<usize>,
}

enum Pending {
    Event(Event),
    Draw(DrawCall),
}

impl RecordHost for Records<'_> {
    fn record(
        &mut self,
        lane: usize,
        function: &str,
        args: Vec<Value>,
    ) -> Result<(), RuntimeError> {
        let chain = self.chains[lane];
        if function == "emit_draw" {
            let call = self.emitter.read_draw(args)?;
            if call.kept {
                self.kept.push(self.pending.len());
                self.pending.push((lane, Pending::Draw(call)));
            } else {
                self.pending
                    .push((lane, Pending::Event(call.event(chain, None))));
            }
        } else {
            let event = self.emitter.event(function, chain, args)?;
            self.pending.push((lane, Pending::Event(event)));
        }
        Ok(())
    }

    fn flush(&mut self, all: bool) -> Vec<(usize, RuntimeError)> {
        if self.pending.is_empty() || (!all && self.pending.len() < RECORDS_PER_FLUSH) {
            return Vec::new();
        }
        let mut values = self.draw_values().into_iter();
        let mut failed: Vec<(usize, RuntimeError)> = Vec::new();
        let mut batch = Vec::with_capacity(self.pending.len());
        for (lane, pending) in std::mem::take(&mut self.pending) {
            // Every kept draw takes its values, in order, even when dropped.
            let event = match pending {
                Pending::Event(event) => Ok(event),
                Pending::Draw(call) => values
                    .next()
                    .expect("a kept draw's values")
                    .map(|v| call.event(self.chains[lane], Some(v))),
            };
            // A chain's records after its failed draw are dropped: it stops there.
            if failed.iter().any(|(l, _)| *l == lane) {
                continue;
            }
            match event {
                Ok(event) => batch.push(event),
                Err(e) => failed.push((lane, e)),
            }
        }
        self.kept.clear();
        let _ = match batch.len() {
            0 => Ok(()),
            1 => self.events.send(batch.pop().expect("one event")),
            _ => self.events.send(Event::Many(batch)),
        };
        failed
    }
}

impl Records<'_> {
    /// The values of every kept draw pending, in order.
    fn draw_values(&self) -> Vec<Result<Vec<(String, Value)>, RuntimeError>> {
        let mut thetas = Vec::with_capacity(self.kept.len());
        let mut rngs: Vec<Rng> = Vec::with_capacity(self.kept.len());
        for &i in &self.kept {
            let (lane, Pending::Draw(call)) = &self.pending[i] else {
                unreachable!("kept holds draws")
            };
            thetas.push(call.theta.clone());
            rngs.push(self.emitter.draw_rng(self.chains[*lane], call));
        }
        match &self.draws {
            Some(model) if !thetas.is_empty() => match model.generated_quantities(&thetas, &rngs) {
                Ok(draws) => draws.into_iter().map(|d| d.map(|d| d.values)).collect(),
                Err(e) => {
                    let error = RuntimeError::fatal(format!(
                        "internal error: the batched generated quantities: {e}"
                    ));
                    vec![Err(error); thetas.len()]
                }
            },
            _ => thetas
                .iter()
                .zip(rngs)
                .map(|(theta, rng)| {
                    self.emitter
                        .model
                        .generated_quantities(theta, rng)
                        .map(|d| d.values)
                })
                .collect(),
        }
    }
}
