//! The host side of one chain: the sampler program's external functions,
//! answered from the model (log density gradient, generated quantities)
//! and turned into [`Event`]s for the driver.
//!
//! What the answers mean lives here once, for every executor: the
//! `emit_*` calls become events through [`Emitter`], a gradient
//! evaluation's outcome becomes the sampler's lp through
//! [`ChainHost::gradient_outcome`], and a batch of gradients is asked of
//! the one gradient interface, [`runtime::gradient::GradientBatch`].
//!
//! How an executor hands a call over stays three traits, one per
//! representation of the call's arguments, because converting between
//! them is the cost each was made to avoid:
//! - [`runtime::Host`] (the interpreter, one chain): owned [`Value`]s,
//!   answered at once with a value or none; implemented by [`ChainHost`].
//! - `backend_cpu::exec::BatchHost` (the batched CPU executors): every
//!   lane of the batch waiting at the call in one call, each argument one
//!   structure-of-arrays slot over the batch, and the gradient answered
//!   as one slot (`call_external_batch`) without a [`Value`] per lane; it
//!   also feeds a lane its next invocation and renumbers lanes when the
//!   program-counter executor compacts the batch, which the other two
//!   have no notion of. Implemented by `super::batched`'s `SamplerHost`.
//! - `codegen::sampler::RecordHost` (compiled code: native, CUDA): only
//!   calls without a result, as numbers in a lane's record buffer laid
//!   out by shapes; the compiled code has moved on by the time the host
//!   reads them, so no value can be answered (gradients are answered by
//!   kernels from a [`runtime::gradient::GradientBatch`] instead), and
//!   records may be kept and finished later (`flush`). Implemented by
//!   `super::native`'s `Records` and `super::cuda`'s `Hosts`.
//!
//! One trait over all three would make every executor build the
//! interpreter's [`Value`]s per lane per call: building and taking apart
//! the nine values of `emit_draw` was 5% of the compiled sampler's
//! instructions on eight schools ([`Emitter::read_draw_numbers`] reads
//! the numbers instead), and a batch's gradient answer would again be one
//! [`Value`] per lane per evaluation, what `call_external_batch` exists
//! to avoid. The default methods are the
//! adapters where the cost does not matter (`RecordHost::record_numbers`
//! falls back to values; `BatchHost::call_external_batch` to
//! `call_external`).

use super::Control;
use super::{DrawRecord, DrawValues, Event, SampleStats, Trajectory};
use language::mir::GradProgram;
use language::value::Value;
use runtime::{ErrorKind, Host, Model, Rng, RuntimeError};
use std::sync::mpsc::Sender;

/// Message of the error the host raises to stop a chain on Ctrl-C.
pub const INTERRUPTED: &str = "interrupted";

/// Turns `emit_draw` and `emit_adaptation` calls into [`Event`]s. It
/// holds only the run's settings, no chain's mutable state, so a batched
/// host answers the calls of many chains at once without locking each
/// chain's [`ChainHost`].
#[derive(Clone, Copy)]
pub struct Emitter<'a> {
    pub model: &'a Model,
    pub seed: u64,
    pub num_warmup: usize,
    pub thin: usize,
    pub save_warmup: bool,
    /// Pooled warmup: events carry the point, no draw is kept.
    pub report_points: bool,
    pub control: &'a Control,
}

/// One `emit_draw` call: the iteration, its statistics and unconstrained
/// point, and whether its draw is kept.
pub struct DrawCall {
    pub iteration: usize,
    /// The unconstrained point of the draw.
    pub theta: Vec<f64>,
    pub warmup: bool,
    /// Whether the draw's values are written (thinning, `--save-warmup`).
    pub kept: bool,
    pub stats: SampleStats,
    /// The event carries `theta` ([`super::Settings::report_points`]).
    pub report_point: bool,
}

impl DrawCall {
    /// Chain `chain`'s event for this call, with the draw's `values` if
    /// it is kept and the lines printed computing them.
    pub fn event(self, chain: usize, values: Option<DrawValues>, printed: Vec<String>) -> Event {
        Event::Iteration {
            chain,
            record: DrawRecord {
                warmup: self.warmup,
                values,
                stats: self.stats,
                printed,
                point: self.report_point.then_some(self.theta),
            },
        }
    }
}

/// Answers one chain's external calls.
pub struct ChainHost<'a> {
    pub emitter: Emitter<'a>,
    pub grad: &'a GradProgram,
    pub chain: usize,
    pub events: Sender<Event>,
    /// The last failed log density evaluation (reported if initialization fails).
    pub last_error: Option<RuntimeError>,
    /// Log density gradient evaluations so far.
    pub gradient_evaluations: u64,
}

impl ChainHost<'_> {
    /// As Stan's Hamiltonian: a failed evaluation is log density −∞ (the
    /// step diverges and the chain goes on), except `fatal_error` and
    /// unsupported constructs, which stop the chain.
    fn log_density_gradient(&mut self, theta: Vec<f64>) -> Result<Value, RuntimeError> {
        let evaluated = self
            .emitter
            .model
            .log_density_gradient(self.grad, &theta, true);
        self.gradient_answer(evaluated, theta.len())
    }

    /// What the sampler program gets for one evaluation of the model's log
    /// density and gradient at a point of `n` coordinates (by whichever
    /// executor evaluated it): `(lp, gradient)`, lp −∞ after a rejection,
    /// a domain error or a non-finite lp; counts the evaluation.
    pub fn gradient_answer(
        &mut self,
        evaluated: Result<(f64, Vec<f64>), RuntimeError>,
        n: usize,
    ) -> Result<Value, RuntimeError> {
        let (lp, grad) = match evaluated {
            Ok((lp, grad)) => (self.gradient_outcome(Ok(lp))?, grad),
            Err(error) => (self.gradient_outcome(Err(error))?, vec![0.0; n]),
        };
        Ok(Value::Tuple(vec![Value::Real(lp), Value::Vector(grad)]))
    }

    /// [`ChainHost::gradient_answer`] without building values: the lp the
    /// sampler gets for an evaluation that gave `lp` (its gradient is
    /// used as it is) or failed (its gradient is then all zeros).
    pub fn gradient_outcome(
        &mut self,
        evaluated: Result<f64, RuntimeError>,
    ) -> Result<f64, RuntimeError> {
        self.gradient_evaluations += 1;
        match evaluated {
            Ok(lp) if lp.is_finite() => Ok(lp),
            Ok(lp) => {
                self.last_error = Some(RuntimeError::rejection(format!("the log density is {lp}")));
                Ok(f64::NEG_INFINITY)
            }
            Err(error) if matches!(error.kind, ErrorKind::Fatal | ErrorKind::Unsupported) => {
                Err(error)
            }
            Err(error) => {
                self.last_error = Some(error);
                Ok(f64::NEG_INFINITY)
            }
        }
    }
}

impl Emitter<'_> {
    /// Whether `name` is an external function the emitter answers.
    pub fn answers(name: &str) -> bool {
        matches!(name, "emit_draw" | "emit_adaptation" | "emit_trajectory")
    }

    /// Chain `chain`'s call of `name` (one [`Emitter::answers`]) as an event.
    pub fn event(&self, name: &str, chain: usize, args: Vec<Value>) -> Result<Event, RuntimeError> {
        match name {
            "emit_draw" => self.draw(chain, args),
            "emit_trajectory" => trajectory(chain, args),
            _ => self.adaptation(chain, args),
        }
    }

    /// Chain `chain`'s `emit_draw(args)`: the iteration's event, with the
    /// draw's values (by the interpreter) if the iteration is kept.
    pub fn draw(&self, chain: usize, args: Vec<Value>) -> Result<Event, RuntimeError> {
        let call = self.read_draw(args)?;
        if !call.kept {
            return Ok(call.event(chain, None, Vec::new()));
        }
        let draw = self
            .model
            .generated_quantities(&call.theta, self.draw_rng(chain, &call))?;
        Ok(call.event(chain, Some(DrawValues::Named(draw.values)), draw.output))
    }

    /// The arguments of an `emit_draw` call (an error once the run is
    /// stopped, which ends the chain).
    pub fn read_draw(&self, args: Vec<Value>) -> Result<DrawCall, RuntimeError> {
        self.control.wait_while_held();
        if self.control.is_stopped() {
            return Err(RuntimeError::fatal(INTERRUPTED));
        }
        let [
            Value::Int(iteration),
            Value::Vector(theta),
            Value::Real(lp),
            Value::Real(accept_stat),
            Value::Real(step_size),
            Value::Int(tree_depth),
            Value::Int(n_leapfrog),
            Value::Int(divergent),
            Value::Real(energy),
        ] = <[Value; 9]>::try_from(args).map_err(|_| bad_call("emit_draw"))?
        else {
            return Err(bad_call("emit_draw"));
        };
        let stats = SampleStats {
            lp,
            accept_stat,
            step_size,
            tree_depth,
            n_leapfrog,
            divergent: divergent != 0,
            energy,
        };
        Ok(self.draw_call(iteration, theta, stats))
    }

    /// [`Emitter::read_draw`] of the numbers of an `emit_draw` record
    /// (`record`: the iteration, the `n` numbers of θ, lp, accept_stat,
    /// step_size, tree_depth, n_leapfrog, divergent, energy; ints as
    /// reals, read as [`codegen::sampler::values`] reads them): the
    /// same call without the values in between (building and taking apart
    /// nine of them per iteration was 5% of a compiled sampler's
    /// instructions on eight schools). An error when there are not
    /// `n + 8` numbers.
    pub fn read_draw_numbers(&self, record: &[f64], n: usize) -> Result<DrawCall, RuntimeError> {
        self.control.wait_while_held();
        if self.control.is_stopped() {
            return Err(RuntimeError::fatal(INTERRUPTED));
        }
        let (&[iteration], rest) = record
            .split_at_checked(1)
            .ok_or_else(|| bad_call("emit_draw"))?
        else {
            return Err(bad_call("emit_draw"));
        };
        let Some((
            theta,
            &[
                lp,
                accept_stat,
                step_size,
                tree_depth,
                n_leapfrog,
                divergent,
                energy,
            ],
        )) = rest.split_at_checked(n)
        else {
            return Err(bad_call("emit_draw"));
        };
        let stats = SampleStats {
            lp,
            accept_stat,
            step_size,
            tree_depth: tree_depth as i64,
            n_leapfrog: n_leapfrog as i64,
            divergent: divergent as i64 != 0,
            energy,
        };
        Ok(self.draw_call(iteration as i64, theta.to_vec(), stats))
    }

    /// The call of iteration `iteration` (counted from 1, warmup first).
    fn draw_call(&self, iteration: i64, theta: Vec<f64>, stats: SampleStats) -> DrawCall {
        let iteration = iteration as usize;
        let warmup = iteration <= self.num_warmup;
        let index = if warmup {
            iteration - 1
        } else {
            iteration - 1 - self.num_warmup
        };
        DrawCall {
            iteration,
            theta,
            warmup,
            kept: !self.report_points
                && (!warmup || self.save_warmup)
                && index.is_multiple_of(self.thin),
            stats,
            report_point: self.report_points,
        }
    }

    /// The stream chain `chain`'s generated quantities draw from at the
    /// iteration of `call`: their own per iteration (stream 0 of the chain
    /// is the sampler's).
    pub fn draw_rng(&self, chain: usize, call: &DrawCall) -> Rng {
        Rng::new(self.seed, chain as u32, call.iteration as u64)
    }

    /// Chain `chain`'s `emit_adaptation(args)`.
    pub fn adaptation(&self, chain: usize, args: Vec<Value>) -> Result<Event, RuntimeError> {
        match <[Value; 2]>::try_from(args) {
            Ok([Value::Real(step_size), Value::Vector(inv_metric)]) => Ok(Event::Adaptation {
                chain,
                step_size,
                inv_metric,
            }),
            _ => Err(bad_call("emit_adaptation")),
        }
    }
}

/// Chain `chain`'s `emit_trajectory(args)`.
fn trajectory(chain: usize, args: Vec<Value>) -> Result<Event, RuntimeError> {
    match <[Value; 4]>::try_from(args) {
        Ok(
            [
                Value::Vector(start),
                Value::Vector(end),
                Value::Vector(velocity),
                Value::Real(time),
            ],
        ) => Ok(Event::Trajectory {
            chain,
            trajectory: Trajectory {
                start,
                end,
                velocity,
                time,
            },
        }),
        _ => Err(bad_call("emit_trajectory")),
    }
}

fn bad_call(name: &str) -> RuntimeError {
    RuntimeError::fatal(format!("sampler program: bad arguments to `{name}`"))
}

impl Host for ChainHost<'_> {
    fn call_external(
        &mut self,
        name: &str,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        match name {
            "model_log_density_gradient" => match <[Value; 1]>::try_from(args) {
                Ok([Value::Vector(theta)]) => self.log_density_gradient(theta).map(Some),
                _ => Err(bad_call(name)),
            },
            _ if Emitter::answers(name) => {
                let event = self.emitter.event(name, self.chain, args)?;
                // A closed channel means the driver has stopped listening.
                let _ = self.events.send(event);
                Ok(None)
            }
            _ => Err(RuntimeError::fatal(format!(
                "sampler program: unknown external function `{name}`"
            ))),
        }
    }
}
