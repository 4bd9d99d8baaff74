//! The scalar interpreter over the CFG IR ([`language::batch::cfg`]): runs one
//! lane of a lowered program op by op and block by block. It checks the
//! CFG lowering against the structured MIR interpreter (both must agree
//! bit for bit) and is the one-lane model of what the batched executors do.

use super::Model;
use super::error::{Result, RuntimeError};
use super::exec::{MAX_CALL_DEPTH, Machine, promote};
use language::batch::cfg::{BlockId, FunctionKind, Program, Terminator};
use language::mir::FunId;
use language::value::Value;

impl Model {
    /// [`Model::log_density_gradient`] by running the CFG `p` (lowered from
    /// this model's gradient program with [`language::batch::lower_gradient`]).
    pub fn log_density_gradient_cfg(
        &self,
        p: &Program,
        theta: &[f64],
        jacobian: bool,
    ) -> std::result::Result<(f64, Vec<f64>), RuntimeError> {
        let entry = p.entry(language::batch::GRADIENT_ENTRY).ok_or_else(|| {
            RuntimeError::fatal("the CFG program has no log_density_gradient entry")
        })?;
        let mut m = self.gradient_machine(&p.mir, p.num_ad_stacks, theta, jacobian)?;
        run(&mut m, p, entry, Vec::new())?;
        Ok(super::grad::finish_gradient(m))
    }
}

impl Model {
    /// [`Model::generated_quantities`] by running the CFG `p` (lowered with
    /// [`language::batch::lower_generated_quantities`]).
    pub fn generated_quantities_cfg(
        &self,
        p: &Program,
        theta: &[f64],
        rng: super::Rng,
    ) -> std::result::Result<super::Draw, RuntimeError> {
        let tp = p.entry(language::batch::TRANSFORMED_PARAMETERS_ENTRY);
        let gq = p.entry(language::batch::GENERATED_QUANTITIES_ENTRY);
        let (Some(tp), Some(gq)) = (tp, gq) else {
            return Err(RuntimeError::fatal(
                "the CFG program has no generated-quantities entries",
            ));
        };
        self.draw_with(&p.mir, theta, rng, |m| {
            run(m, p, tp, Vec::new())?;
            run(m, p, gq, Vec::new())?;
            Ok(())
        })
    }
}

/// Run function `f` of `p` with `args`; entries run in the global frame.
pub(super) fn run(
    m: &mut Machine,
    p: &Program,
    f: FunId,
    args: Vec<Value>,
) -> Result<Option<Value>> {
    let fun = p.function(f);
    match fun.kind {
        FunctionKind::Entry => run_blocks(m, p, f),
        // The machine's host supplies it, as in the structured interpreter.
        FunctionKind::External => m.call(f, args),
        FunctionKind::User => {
            if m.depth >= MAX_CALL_DEPTH {
                return Err(RuntimeError::too_deep(&fun.name, MAX_CALL_DEPTH));
            }
            let frame: super::exec::Frame = fun.params.iter().copied().zip(args).collect();
            let saved = m.locals.replace(frame);
            m.depth += 1;
            let result = super::exec::nested_call(|| run_blocks(m, p, f));
            m.depth -= 1;
            m.locals = saved;
            let v = result?;
            Ok(match (&fun.ret, v) {
                (Some(t), Some(v)) => Some(promote(v, t)),
                (_, v) => v,
            })
        }
    }
}

fn run_blocks(m: &mut Machine, p: &Program, f: FunId) -> Result<Option<Value>> {
    let fun = p.function(f);
    let mut b = BlockId(0);
    loop {
        let block = fun.block(b);
        for op in &block.ops {
            m.block_op(op, "CFG")?;
        }
        b = match &block.term {
            Terminator::Jump(t) => *t,
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => m.branch(cond, *then, *otherwise)?,
            Terminator::Call {
                fun: g,
                args,
                ret,
                next,
            } => {
                let values = args.iter().map(|a| m.eval(a)).collect::<Result<Vec<_>>>()?;
                let result = run(m, p, *g, values)?;
                if let Some(var) = ret {
                    let v = result.ok_or_else(|| {
                        RuntimeError::fatal("a void function was used as a value")
                    })?;
                    m.set(*var, v);
                }
                *next
            }
            Terminator::Return(e) => return e.as_ref().map(|e| m.eval(e)).transpose(),
        };
    }
}
