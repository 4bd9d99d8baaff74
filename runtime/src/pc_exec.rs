//! The scalar interpreter over the PC IR ([`language::batch::pc`]): one lane,
//! explicit variable stacks and an explicit program-counter stack, no host
//! recursion — the one-lane model of program-counter autobatching
//! (Radul et al. 2020, Alg. 2). It must agree bit for bit with the
//! structured interpreter on every program, before and after each of the
//! PC IR's optimization passes.

use super::Model;
use super::error::{Result, RuntimeError};
use super::exec::{MAX_CALL_DEPTH, Machine, promote};
use language::batch::pc::sharing::Share;
use language::batch::pc::{BlockId, Op, Program, Terminator, effects};
use language::mir::{FunId, VarId};
use language::value::Value;

impl Model {
    /// [`Model::log_density_gradient`] by running the PC program `p` (built
    /// with [`language::batch::pc::build`] from this model's gradient CFG).
    pub fn log_density_gradient_pc(
        &self,
        p: &Program,
        theta: &[f64],
        jacobian: bool,
    ) -> std::result::Result<(f64, Vec<f64>), RuntimeError> {
        let entry = p.entry(language::batch::GRADIENT_ENTRY).ok_or_else(|| {
            RuntimeError::fatal("the PC program has no log_density_gradient entry")
        })?;
        let mut m = self.gradient_machine(&p.mir, p.num_ad_stacks, theta, jacobian)?;
        run(&mut m, p, entry, None)?;
        Ok(super::grad::finish_gradient(m))
    }

    /// [`Model::log_density_gradient_pc`] that also returns every value
    /// written to a variable the sharing analysis calls shared, in order —
    /// two lanes must give the same list (the analysis' test).
    pub fn log_density_gradient_pc_traced(
        &self,
        p: &Program,
        theta: &[f64],
        jacobian: bool,
    ) -> std::result::Result<(f64, Vec<f64>, SharedTrace), RuntimeError> {
        let entry = p.entry(language::batch::GRADIENT_ENTRY).ok_or_else(|| {
            RuntimeError::fatal("the PC program has no log_density_gradient entry")
        })?;
        let mut m = self.gradient_machine(&p.mir, p.num_ad_stacks, theta, jacobian)?;
        let mut trace = Vec::new();
        run(&mut m, p, entry, Some(&mut trace))?;
        let (lp, gradient) = super::grad::finish_gradient(m);
        Ok((lp, gradient, trace))
    }

    /// [`Model::generated_quantities`] by running the PC program `p` (built
    /// from [`language::batch::lower_generated_quantities`]).
    pub fn generated_quantities_pc(
        &self,
        p: &Program,
        theta: &[f64],
        rng: super::Rng,
    ) -> std::result::Result<super::Draw, RuntimeError> {
        let tp = p.entry(language::batch::TRANSFORMED_PARAMETERS_ENTRY);
        let gq = p.entry(language::batch::GENERATED_QUANTITIES_ENTRY);
        let (Some(tp), Some(gq)) = (tp, gq) else {
            return Err(RuntimeError::fatal(
                "the PC program has no generated-quantities entries",
            ));
        };
        self.draw_with(&p.mir, theta, rng, |m| {
            run(m, p, tp, None)?;
            run(m, p, gq, None)
        })
    }
}

/// Values written to shared variables, in execution order.
pub type SharedTrace = Vec<(VarId, Value)>;

/// Run entry `f` until its `Return` empties the program-counter stack.
/// All variables live in the machine's one global frame.
pub(crate) fn run(
    m: &mut Machine,
    p: &Program,
    f: FunId,
    mut trace: Option<&mut SharedTrace>,
) -> Result<()> {
    let mut stacks: Vec<Vec<Option<Value>>> = vec![Vec::new(); p.mir.vars.len()];
    let mut pc_stack: Vec<BlockId> = Vec::new();
    let mut b = p.function(f).first_block;
    loop {
        let block = p.block(b);
        for op in &block.ops {
            match op {
                Op::Stmt(s) => m.block_op(s, "PC")?,
                Op::Arg { param, value } => {
                    let v = m.eval(value)?;
                    m.set(*param, v);
                }
                Op::SetResult { var, value } => {
                    let v = m.eval(value)?;
                    let ty = &p.mir.vars[var.0 as usize].ty;
                    m.set(*var, promote(v, ty));
                }
                Op::Push(v) => {
                    let value = m.globals[v.0 as usize].clone();
                    stacks[v.0 as usize].push(value);
                }
                Op::Pop(v) | Op::Peek(v) => {
                    let stack = &mut stacks[v.0 as usize];
                    let top = if matches!(op, Op::Pop(_)) {
                        stack.pop()
                    } else {
                        stack.last().cloned()
                    };
                    let Some(top) = top else {
                        return Err(RuntimeError::fatal(format!(
                            "the stack of `{}` is empty (PC lowering bug)",
                            p.var_name(*v)
                        )));
                    };
                    m.globals[v.0 as usize] = top;
                }
            }
            if let (Some(trace), Some(sharing)) = (trace.as_deref_mut(), &p.sharing) {
                for v in effects::of_op(op).writes {
                    if sharing.var(v) == Share::Shared {
                        trace.push((v, m.get(v)?.clone()));
                    }
                }
            }
        }
        b = match &block.term {
            Terminator::Jump(t) => *t,
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => m.branch(cond, *then, *otherwise)?,
            Terminator::PushJump {
                ret,
                callee,
                target,
            } => {
                if pc_stack.len() >= MAX_CALL_DEPTH {
                    let callee = &p.function(*callee).name;
                    return Err(RuntimeError::too_deep(callee, MAX_CALL_DEPTH));
                }
                pc_stack.push(*ret);
                *target
            }
            Terminator::Return => match pc_stack.pop() {
                Some(r) => r,
                None => return Ok(()),
            },
        };
    }
}
