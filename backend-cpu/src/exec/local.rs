//! Local static autobatching (Radul et al. 2020, Alg. 1; TFP's stackless
//! `execute`): one invocation of a function at a time, lanes waiting at
//! its blocks, calls by host recursion with the lanes that took them.

use super::block::{self, Returned, StmtOps};
use super::host::BatchHost;
use super::schedule::WaitQueue;
use super::{ExecConfig, ExecError, Result};
use crate::eval::eval;
use crate::lanes::{Lanes, Slot, State};
use language::batch::cfg::{FunctionKind, Program, Terminator};
use language::mir::FunId;
use runtime::RuntimeError;
use std::sync::Arc;

pub(super) fn run(
    p: &Program,
    f: FunId,
    st: &mut State,
    lanes: &Lanes,
    config: &ExecConfig,
    host: &mut dyn BatchHost,
) -> Result<Option<Slot>> {
    let mut exec = Local {
        p,
        config,
        host,
        depth: super::base_depth(p, f),
        footprints: block::Footprints::default(),
    };
    let value = exec.blocks(f, st, lanes)?;
    Ok(value.map(Arc::unwrap_or_clone))
}

struct Local<'a> {
    p: &'a Program,
    config: &'a ExecConfig,
    /// Answers calls of external functions.
    host: &'a mut dyn BatchHost,
    /// Nested user-function calls (host recursion levels).
    depth: usize,
    footprints: block::Footprints,
}

impl Local<'_> {
    /// Run the blocks of `f` for `lanes` until every lane has returned or
    /// failed; the returned values of the lanes that returned.
    fn blocks(&mut self, f: FunId, st: &mut State, lanes: &Lanes) -> Result<Option<Arc<Slot>>> {
        let fun = self.p.function(f);
        if fun.kind == FunctionKind::External {
            let msg = format!("external function `{}` has no host here", fun.name);
            block::fail(st, lanes, &RuntimeError::fatal(msg));
            return Ok(None);
        }
        // Blocks whose call terminator calls a synchronizing external.
        let barriers = fun
            .blocks
            .iter()
            .map(|b| match &b.term {
                Terminator::Call { fun: g, .. } => {
                    let callee = self.p.function(*g);
                    callee.kind == FunctionKind::External
                        && self.config.synchronize_at.contains(&callee.name)
                }
                _ => false,
            })
            .collect();
        let mut queue = WaitQueue::with_barriers(barriers, Vec::new(), Vec::new());
        queue.add(0, lanes.iter());
        let mut returned = Returned::default();
        while let Some((b, waiting)) = queue.take(&*self.config.choice, st.z) {
            let bl = &fun.blocks[b];
            block::run_ops(
                StmtOps::Cfg(&bl.ops),
                st,
                &waiting,
                self.config,
                &mut self.footprints,
            )?;
            let active = st.running(&waiting);
            if active.is_empty() {
                continue;
            }
            match &bl.term {
                Terminator::Jump(t) => queue.add(t.0 as usize, active.iter()),
                Terminator::Branch {
                    cond,
                    then,
                    otherwise,
                } => {
                    let (yes, no) = block::branch(cond, st, &active)?;
                    queue.add(then.0 as usize, yes.iter());
                    queue.add(otherwise.0 as usize, no.iter());
                }
                Terminator::Call {
                    fun: g,
                    args,
                    ret,
                    next,
                } => {
                    let args = block::eval_args(args, st, &active)?;
                    let active = st.running(&active);
                    let value = self.call(*g, args, st, &active)?;
                    let back = st.running(&active);
                    if let Some(var) = ret {
                        match value {
                            Some(v) => block::set_masked(st, *var, v, &back),
                            None => {
                                let err =
                                    RuntimeError::fatal("a void function was used as a value");
                                block::fail(st, &back, &err);
                            }
                        }
                    }
                    queue.add(next.0 as usize, st.running(&back).iter());
                }
                Terminator::Return(e) => {
                    if let Some(e) = e {
                        let v = eval(e, st, &active)?;
                        returned.add(v, &st.running(&active));
                    }
                }
            }
        }
        Ok(returned.value)
    }

    /// Call `g` with `args` on `lanes`: user functions get a frame of their
    /// own for this recursion level (the previous contents of their
    /// variables are set aside and restored afterwards).
    fn call(
        &mut self,
        g: FunId,
        args: Vec<Arc<Slot>>,
        st: &mut State,
        lanes: &Lanes,
    ) -> Result<Option<Arc<Slot>>> {
        if lanes.is_empty() {
            return Ok(None);
        }
        let fun = self.p.function(g);
        if fun.kind == FunctionKind::External {
            // All lanes that took the call are served by one host call.
            let wants_value = fun.ret.is_some();
            let timed = super::profile::start();
            let value = super::profile::inside_host_call(|| {
                super::host::serve(&mut *self.host, &fun.name, &args, wants_value, st, lanes)
            });
            super::profile::record(
                timed,
                std::ptr::from_ref(fun).cast(),
                || format!("call {}", fun.name),
                lanes.len(),
                st.z,
            );
            return Ok(value);
        }
        if fun.kind != FunctionKind::User {
            return self.blocks(g, st, lanes);
        }
        if args.len() != fun.params.len() {
            return Err(ExecError::Setup(format!(
                "`{}` takes {} arguments, given {}",
                fun.name,
                fun.params.len(),
                args.len()
            )));
        }
        if self.depth >= self.config.max_depth {
            block::fail(
                st,
                lanes,
                &runtime::RuntimeError::too_deep(&fun.name, self.config.max_depth),
            );
            return Ok(None);
        }
        let frame: Vec<usize> = fun
            .params
            .iter()
            .chain(&fun.locals)
            .map(|v| v.0 as usize)
            .collect();
        let saved: Vec<_> = frame.iter().map(|&v| st.vars[v].take()).collect();
        for (param, arg) in fun.params.iter().zip(args) {
            st.vars[param.0 as usize] = Some(arg);
        }
        self.depth += 1;
        let result = runtime::nested_call(|| self.blocks(g, st, lanes));
        self.depth -= 1;
        for (v, s) in frame.into_iter().zip(saved) {
            st.vars[v] = s;
        }
        let value = result?;
        Ok(match (&fun.ret, value) {
            (Some(ty), Some(v)) => Some(block::promote(v, ty, st, &st.running(lanes))),
            (_, v) => v,
        })
    }
}
