//! The scalar reference interpreter: runs a [`mir::Program`] on one
//! parameter vector at a time. It is the ground truth that the batched
//! executors are compared against lane by lane, so it favours plain,
//! checkable code over speed.
//!
//! [`Model::new`] reads the data and runs transformed data;
//! [`Model::log_density`] constrains the unconstrained parameters (adding
//! log |J| when asked), runs transformed parameters and the model block;
//! [`Model::generated_quantities`] draws from the counter-based [`Rng`].
//! Every failure is a [`RuntimeError`]; [`RuntimeError::is_rejection`]
//! says when a sampler should treat it as log density −∞.
//!
//! The executors share it: [`Model`] holds the data and transformed data,
//! [`lane`] is the interpreter's semantics one lane at a time,
//! [`gradient`] is the one interface through which a sampler asks any
//! executor for a batch of log density gradients, and the random streams
//! and ODE solvers are the same everywhere.

// `!(a > b)` is deliberate: it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod cfg_exec;
mod constrain;
mod error;
mod exec;
mod frame;
mod grad;
pub mod gradient;
mod index;
pub mod lane;
mod linalg;
mod ode;
pub mod ode_tape;
mod pc_exec;
mod prims;
mod prims_matrix;
mod print;
pub use prims::passes_check;
/// A value as `print`, `reject` and `fatal_error` write it.
pub use print::value as print_value;
mod rng;
mod values;
pub mod ziggurat;

pub use error::{ErrorKind, RuntimeError};
pub use exec::{IntHasher, MAX_CALL_DEPTH, nested_call};
pub use frame::GradFrame;
pub use ode::MEMO_CAPACITY as ODE_MEMO_CAPACITY;
pub use pc_exec::SharedTrace;
pub use rng::{Rng, philox4x32};

use constrain::Evaluated;
use error::Result;
use exec::Machine;
use language::data::{DataFile, Shape};
use language::mir::{self, Origin, Program, StmtKind, VarId};
use language::value::Value;

/// What `bat run` does with a data file's bytes: read them as UTF-8 Stan
/// JSON, conform every variable to `program`'s `data` block and run
/// transformed data. Every bad input is an error message, never a panic;
/// the data fuzz target and its regression tests call this.
pub fn model_from_json(program: &Program, bytes: &[u8]) -> std::result::Result<Model, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?;
    let data = DataFile::parse(text).map_err(|e| e.to_string())?;
    Model::new(program, &data).map_err(|e| e.message)
}

/// What a program's external functions ([`mir::Function::external`],
/// declared without a body and compiled by [`language::compile_with_externals`])
/// call: the host running the program, e.g. the sampler driver supplying
/// the model's log density gradient and recording draws.
///
/// One of three ways an executor hands the host an external call, each
/// for its own representation of the arguments (`Host`: the interpreter's
/// values; `BatchHost`: a batch's slots; `RecordHost`: compiled code's
/// record numbers); the `bat` crate's `sampler::host` says why they are
/// not one trait.
pub trait Host {
    /// Run external function `name` on `args` (already evaluated, in
    /// declaration order); `None` for a void function. An error stops the
    /// program like a `fatal_error` (or rejects, if it is a rejection).
    fn call_external(
        &mut self,
        name: &str,
        args: Vec<Value>,
    ) -> std::result::Result<Option<Value>, RuntimeError>;
}

/// Run the user function `name` (the first non-external one of that name
/// taking `args.len()` arguments) of a program without data — typically a
/// functions-only program such as the sampler — with `rng` feeding its
/// `_rng` calls and `host` supplying its external functions. Returns the
/// function's value (`None` for `void`).
pub fn run_function(
    program: &Program,
    name: &str,
    args: Vec<Value>,
    rng: Rng,
    host: &mut dyn Host,
) -> std::result::Result<Option<Value>, RuntimeError> {
    let id = program
        .functions
        .iter()
        .position(|f| !f.external && f.name == name && f.args.len() == args.len())
        .ok_or_else(|| {
            RuntimeError::fatal(format!(
                "no function `{name}` taking {} arguments",
                args.len()
            ))
        })?;
    let mut m = Machine::new(program);
    m.rng = Some(rng);
    m.host = Some(host);
    m.call(mir::FunId(id as u32), args)
}

/// The chain id of the random stream used by transformed data.
pub const TRANSFORMED_DATA_CHAIN: u32 = u32::MAX;

/// One parameter's place in the unconstrained vector.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamLayout {
    pub name: String,
    pub var: VarId,
    pub shape: Shape,
    /// First unconstrained coordinate.
    pub offset: usize,
    pub unconstrained_len: usize,
}

/// A program with its data read and transformed data computed.
#[derive(Clone)]
pub struct Model {
    program: Program,
    /// Values of data and transformed data (other slots empty).
    globals: Vec<Option<Value>>,
    /// [`Model::globals_for`] of the first program with hoisted values it
    /// was asked for (in practice the model's gradient program), kept.
    hoisted: std::sync::OnceLock<HoistedGlobals>,
    params: Vec<ParamLayout>,
    /// Output printed while reading data and running transformed data.
    pub startup_output: Vec<String>,
}

/// Hoisted values of one program on top of a model's globals.
#[derive(Clone)]
struct HoistedGlobals {
    hoisted: Vec<mir::Hoisted>,
    globals: Vec<Option<Value>>,
}

/// Constrained values, transformed parameters and generated quantities of
/// one draw, by name in declaration order, plus anything printed.
#[derive(Clone, Debug, PartialEq)]
pub struct Draw {
    pub values: Vec<(String, Value)>,
    pub output: Vec<String>,
}

impl Model {
    /// Read `data` and run transformed data, whose `_rng` calls draw from
    /// seed 0 (see [`Model::with_seed`]).
    pub fn new(program: &Program, data: &DataFile) -> std::result::Result<Model, RuntimeError> {
        Model::with_seed(program, data, 0)
    }

    /// As [`Model::new`], transformed data drawing from the stream
    /// [`TRANSFORMED_DATA_CHAIN`] of `seed`.
    pub fn with_seed(
        program: &Program,
        data: &DataFile,
        seed: u64,
    ) -> std::result::Result<Model, RuntimeError> {
        let mut m = Machine::new(program);
        m.rng = Some(Rng::new(seed, TRANSFORMED_DATA_CHAIN, 0));
        for decl in &program.data {
            let name = program.vars[decl.var.0 as usize].name.clone();
            let in_data = |e: RuntimeError| RuntimeError {
                kind: ErrorKind::Data,
                message: format!("data variable `{name}`: {}", e.message),
                ..e
            };
            let shape = m.shape(&decl.ty).map_err(in_data)?;
            let value = data
                .take(&name, &shape)
                .map_err(|e| RuntimeError::new(ErrorKind::Data, e.to_string()))?;
            constrain::check_constraint(&mut m, &name, &value, &decl.transform).map_err(in_data)?;
            m.set(decl.var, value);
        }
        m.block(&program.transformed_data)?;
        m.rng = None;
        let mut params = Vec::new();
        let mut offset = 0;
        for decl in &program.parameters {
            let name = program.vars[decl.var.0 as usize].name.clone();
            let shape = m.shape(&decl.ty)?;
            let len = constrain::unconstrained_len(&decl.transform, &shape)?;
            params.push(ParamLayout {
                name,
                var: decl.var,
                shape,
                offset,
                unconstrained_len: len,
            });
            offset += len;
        }
        Ok(Model {
            globals: m.globals,
            hoisted: std::sync::OnceLock::new(),
            startup_output: m.output,
            program: program.clone(),
            params,
        })
    }

    /// Data and transformed data values, indexed by [`VarId`] (other
    /// variables `None`): the invariant inputs of a batched executor.
    pub fn globals(&self) -> &[Option<Value>] {
        &self.globals
    }

    /// What a run of `program` — this model's program, its gradient
    /// program, or a lowering of either — reads without computing it:
    /// [`Model::globals`] plus the values of `program`'s hoisted
    /// expressions ([`mir::Hoisted`]), computed once and kept for the
    /// first such program (and computed afresh for another one).
    ///
    /// A hoisted value that fails to evaluate is left unset, with its `ok`
    /// variable 0: the program then evaluates the expression in place,
    /// failing as it did before hoisting.
    pub fn globals_for(&self, program: &Program) -> std::borrow::Cow<'_, [Option<Value>]> {
        use std::borrow::Cow;
        if program.hoisted.is_empty() {
            return Cow::Borrowed(&self.globals);
        }
        if let Some(cached) = self.hoisted.get() {
            if cached.hoisted == program.hoisted {
                return Cow::Borrowed(&cached.globals);
            }
            return Cow::Owned(self.compute_hoisted(program));
        }
        let cached = self.hoisted.get_or_init(|| HoistedGlobals {
            hoisted: program.hoisted.clone(),
            globals: self.compute_hoisted(program),
        });
        if cached.hoisted == program.hoisted {
            Cow::Borrowed(&cached.globals)
        } else {
            Cow::Owned(self.compute_hoisted(program))
        }
    }

    fn compute_hoisted(&self, program: &Program) -> Vec<Option<Value>> {
        let mut m = Machine::with_base(program, &self.globals);
        for h in &program.hoisted {
            let ok = match m.eval(&h.value) {
                Ok(v) => {
                    m.set(h.var, v);
                    1
                }
                Err(_) => 0,
            };
            if let Some(flag) = h.ok {
                m.set(flag, Value::Int(ok));
            }
        }
        let mut all = m.globals;
        for (slot, base) in all.iter_mut().zip(&self.globals) {
            if slot.is_none() {
                slot.clone_from(base);
            }
        }
        all
    }

    /// A machine over `program` reading this model's globals and
    /// `program`'s hoisted values.
    pub(crate) fn machine_for<'a>(&'a self, program: &'a Program) -> Machine<'a> {
        match self.globals_for(program) {
            std::borrow::Cow::Borrowed(base) => Machine::with_base(program, base),
            std::borrow::Cow::Owned(all) => {
                // Another program than the one cached: its hoisted values
                // as this evaluation's own.
                let mut m = Machine::with_base(program, &self.globals);
                for (i, v) in all.into_iter().enumerate() {
                    if self.globals.get(i).is_none_or(Option::is_none) && v.is_some() {
                        m.globals[i] = v;
                    }
                }
                m
            }
        }
    }

    pub fn params(&self) -> &[ParamLayout] {
        &self.params
    }

    /// Length of the unconstrained parameter vector.
    pub fn num_unconstrained(&self) -> usize {
        self.params.iter().map(|p| p.unconstrained_len).sum()
    }

    /// Names of the unconstrained coordinates, in order: `theta[1]`,
    /// `Sigma[2,1]` for parameters whose free coordinates are their
    /// elements, `name[k]` (k-th free coordinate) for the others.
    pub fn unconstrained_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (p, decl) in self.params.iter().zip(&self.program.parameters) {
            if p.unconstrained_len == p.shape.num_reals()
                && !matches!(decl.transform, mir::Transform::Simplex)
            {
                out.extend(constrain::element_names(&p.name, &p.shape));
            } else {
                out.extend((1..=p.unconstrained_len).map(|k| format!("{}[{k}]", p.name)));
            }
        }
        out
    }

    fn machine(&self) -> Machine<'_> {
        Machine::with_base(&self.program, &self.globals)
    }

    fn check_len(&self, theta: &[f64]) -> Result<()> {
        let n = self.num_unconstrained();
        if theta.len() == n {
            Ok(())
        } else {
            Err(RuntimeError::fatal(format!(
                "expected {n} unconstrained parameters, found {}",
                theta.len()
            )))
        }
    }

    /// Constrain every parameter into `m`; returns Σ log |J|.
    fn constrain_into(&self, m: &mut Machine, theta: &[f64]) -> Result<f64> {
        self.check_len(theta)?;
        let mut logj = 0.0;
        for (p, decl) in self.params.iter().zip(&self.program.parameters) {
            let n = p.shape.num_reals();
            // Errors point at the parameter's declaration (its bounds).
            let span = self.program.vars[p.var.0 as usize].span;
            let ev = constrain::evaluate(m, &decl.transform, n).map_err(|e| e.at(span))?;
            let x = &theta[p.offset..p.offset + p.unconstrained_len];
            let (value, lj) = constrain::constrain(&ev, &p.shape, x).map_err(|e| e.at(span))?;
            logj += lj;
            m.set(p.var, value);
        }
        Ok(logj)
    }

    /// The log density at unconstrained `theta` (with `~` constants dropped
    /// as Stan does), plus log |J| of the transforms when `jacobian`.
    pub fn log_density(
        &self,
        theta: &[f64],
        jacobian: bool,
    ) -> std::result::Result<f64, RuntimeError> {
        self.log_density_traced(theta, jacobian).0
    }

    /// [`Model::log_density`] with the output of `print` statements run on
    /// the way (also when the evaluation fails).
    pub fn log_density_traced(
        &self,
        theta: &[f64],
        jacobian: bool,
    ) -> (std::result::Result<f64, RuntimeError>, Vec<String>) {
        let mut m = self.machine();
        m.jacobian = jacobian;
        let result = self.run_log_density(&mut m, theta);
        (result, m.output)
    }

    fn run_log_density(&self, m: &mut Machine, theta: &[f64]) -> Result<f64> {
        let logj = self.constrain_into(m, theta)?;
        if m.jacobian {
            m.target += logj;
        }
        m.block(&self.program.transformed_parameters)?;
        m.block(&self.program.model)?;
        Ok(m.target)
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The value of a data or transformed data variable, by name.
    pub fn data_value(&self, name: &str) -> Option<&Value> {
        self.program
            .vars
            .iter()
            .position(|v| {
                v.name == name && matches!(v.origin, Origin::Data | Origin::TransformedData)
            })
            .and_then(|i| self.globals[i].as_ref())
    }

    /// The constrained parameter values at `theta`, by name.
    pub fn constrain(
        &self,
        theta: &[f64],
    ) -> std::result::Result<Vec<(String, Value)>, RuntimeError> {
        let mut m = self.machine();
        self.constrain_into(&mut m, theta)?;
        Ok(self
            .params
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    m.get(p.var).cloned().unwrap_or(Value::Real(f64::NAN)),
                )
            })
            .collect())
    }

    /// Stan's free transform of constrained parameter values given by name
    /// (Stan JSON, as CmdStan's inits).
    pub fn unconstrain(&self, values: &DataFile) -> std::result::Result<Vec<f64>, RuntimeError> {
        self.unconstrain_given(values, false)
            .map(|(theta, _)| theta)
    }

    /// As [`Model::unconstrain`], but a parameter missing from `values`
    /// gets NaN coordinates (for the sampler to draw, as Stan's init
    /// files allow); also returns the missing parameters' names.
    pub fn unconstrain_partial(
        &self,
        values: &DataFile,
    ) -> std::result::Result<(Vec<f64>, Vec<String>), RuntimeError> {
        self.unconstrain_given(values, true)
    }

    fn unconstrain_given(
        &self,
        values: &DataFile,
        allow_missing: bool,
    ) -> std::result::Result<(Vec<f64>, Vec<String>), RuntimeError> {
        let mut missing = Vec::new();
        let mut m = self.machine();
        let mut out = Vec::with_capacity(self.num_unconstrained());
        for (p, decl) in self.params.iter().zip(&self.program.parameters) {
            if allow_missing && !values.contains(&p.name) {
                // Bounds that read this parameter fail below, naming it.
                out.extend(std::iter::repeat_n(f64::NAN, p.unconstrained_len));
                missing.push(p.name.clone());
                continue;
            }
            if !values.contains(&p.name) {
                return Err(RuntimeError::new(
                    ErrorKind::Data,
                    format!(
                        "parameter `{}` has no value (it is declared `{}`)",
                        p.name, p.shape
                    ),
                ));
            }
            let value = values
                .take(&p.name, &p.shape)
                .map_err(|e| RuntimeError::new(ErrorKind::Data, e.to_string()))?;
            let in_param = |e: RuntimeError| RuntimeError {
                message: format!("parameter `{}`: {}", p.name, e.message),
                ..e
            };
            let ev: Evaluated = constrain::evaluate(&mut m, &decl.transform, p.shape.num_reals())
                .map_err(in_param)?;
            let x = constrain::unconstrain(&ev, &p.shape, &value).map_err(in_param)?;
            out.extend(x);
            m.set(p.var, value);
        }
        Ok((out, missing))
    }

    /// Parameters, transformed parameters and generated quantities of one
    /// draw, with `rng` feeding the `_rng` functions.
    pub fn generated_quantities(
        &self,
        theta: &[f64],
        rng: Rng,
    ) -> std::result::Result<Draw, RuntimeError> {
        self.draw_with(&self.program, theta, rng, |m| {
            m.block(&self.program.transformed_parameters)?;
            m.block(&self.program.generated_quantities)?;
            Ok(())
        })
    }

    /// Constrain `theta`, run `blocks` (transformed parameters and generated
    /// quantities) and collect the draw's values.
    pub(crate) fn draw_with(
        &self,
        program: &Program,
        theta: &[f64],
        rng: Rng,
        blocks: impl FnOnce(&mut Machine) -> Result<()>,
    ) -> std::result::Result<Draw, RuntimeError> {
        // `program` is this model's MIR, possibly with more (temporary)
        // variables appended by a later lowering.
        let mut m = Machine::with_base(program, &self.globals);
        m.jacobian = false;
        m.rng = Some(rng);
        self.constrain_into(&mut m, theta)?;
        blocks(&mut m)?;
        let mut values = Vec::new();
        for p in &self.params {
            values.push((p.name.clone(), m.get(p.var)?.clone()));
        }
        for stmts in [
            &self.program.transformed_parameters,
            &self.program.generated_quantities,
        ] {
            for s in stmts {
                if let StmtKind::Decl { var, .. } = &s.kind {
                    let info = &self.program.vars[var.0 as usize];
                    if matches!(
                        info.origin,
                        Origin::TransformedParameter | Origin::GeneratedQuantity
                    ) {
                        values.push((info.name.clone(), m.get(*var)?.clone()));
                    }
                }
            }
        }
        Ok(Draw {
            values,
            output: m.output,
        })
    }
}

#[cfg(test)]
mod tests;
