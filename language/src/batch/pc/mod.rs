//! The program-counter IR (Radul et al. 2020, Fig. 4) and its optimization
//! passes (§3.2), built from the CFG IR ([`super::cfg`]).
//!
//! All functions' blocks are merged into ONE graph with global [`BlockId`]s
//! (each function's blocks are contiguous, its entry first). Every variable
//! ([`VarId`], an index into `mir.vars`) is one program-wide variable: a
//! recursive function's locals are the same variables at every depth, so a
//! call saves the caller's values that the callee could clobber on that
//! variable's own stack ([`Op::Push`]) and restores them after the return
//! ([`Op::Pop`]) — caller-saves. Calls pass arguments by writing the
//! callee's parameters ([`Op::Arg`]) and return values through one
//! dedicated result variable per function ([`Op::SetResult`], read by the
//! caller with a `Let`). [`Terminator::PushJump`] pushes the return block on
//! the program-counter stack and jumps to the callee's entry;
//! [`Terminator::Return`] pops it (an empty program-counter stack means the
//! entry invocation is finished).
//!
//! # Invariants
//! - `functions[f]` is CFG function `f` (same [`FunId`]); its blocks are
//!   `first_block .. first_block + num_blocks`, `first_block` its entry.
//!   Jump/Branch targets and PushJump return blocks stay within the
//!   function; a PushJump's `target` is `functions[callee].first_block`.
//! - Ops are [`Op`]s: MIR straight-line statements exactly as in the CFG
//!   IR (no control flow, no user-function calls), plus the calling ops.
//!   A call of an external function (answered by the host) stays one op,
//!   `Let x = f(args)` or `Effect(f(args))` ([`lower::external_call`]):
//!   it has no frame and needs no program-counter step.
//! - A call site is a block ending in `PushJump { ret, .. }` whose ops end
//!   with the saves (`Push`) then the argument writes (`Arg`, in parameter
//!   order; an argument that reads a parameter written earlier in the same
//!   sequence was bound to a temporary `callee$argJ` first, as was every
//!   argument before it, so arguments are evaluated left to right; pass
//!   [`identity_args`] drops an argument that is the parameter itself). The return block `ret` starts
//!   with the restores (`Pop`, in the reverse order of the saves) followed
//!   by `Let x = callee_result` (if the call has a result; pass
//!   [`forward_results`] may remove it, the block's reads of `x` then
//!   reading `callee_result`). Pass [`fuse`] may turn a restore and a later save into a `Peek` or remove
//!   both.
//! - Variables never share a stack; each stack holds only saved values of
//!   its own variable. The program-counter stack holds return blocks.
//! - [`Program::storage`] gives each variable's storage class
//!   ([`Storage`]); [`Program::sharing`] (after [`sharing::analyse`]) says
//!   which values are the same for every lane.
//!
//! Pipeline ([`build`]): [`lower::lower`] (naive: every call saves the
//! caller's whole frame, every variable has a stack) → (a)
//! [`prune_saves`] → [`identity_args`] (no copy of a parameter passed on
//! unchanged) → [`forward_results`] (a call's value read from the
//! callee's result variable, not a copy) → (e) [`fuse`] → (b) [`temps`] → (c) [`registers`] → (d)
//! [`cached_tops`] → [`thread_jumps`] (no steps through empty jump
//! blocks) → [`sharing::analyse`].

pub mod cached_tops;
pub mod effects;
pub mod forward_results;
pub mod fuse;
pub mod identity_args;
pub mod liveness;
pub mod lower;
pub mod print;
pub mod prune_saves;
pub mod registers;
pub mod sharing;
pub mod temps;
pub mod thread_jumps;

use crate::mir::{self, Expr, FunId, Stmt, VarId};
use crate::types::Type;

pub use crate::batch::cfg::FunctionKind;

/// A global block index into [`Program::blocks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

#[derive(Clone, Debug)]
pub struct Program {
    /// The MIR program: the variable table (with the CFG's temporaries and
    /// the PC lowering's result and argument variables), declarations.
    pub mir: mir::Program,
    pub functions: Vec<Function>,
    pub blocks: Vec<Block>,
    /// Stacks of the gradient program's own `Push`/`Pop` (AD tape).
    pub num_ad_stacks: u32,
    /// Storage class per variable (indexed by [`VarId`]).
    pub storage: Vec<Storage>,
    /// Batched-vs-shared per variable, op and branch; `None` until
    /// [`sharing::analyse`] ran (passes that change ops reset it).
    pub sharing: Option<sharing::Sharing>,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub kind: FunctionKind,
    pub params: Vec<VarId>,
    /// Declared return type (`None` for `void` and entries).
    pub ret: Option<Type>,
    /// The variable [`Op::SetResult`] writes (non-void functions).
    pub result: Option<VarId>,
    /// The caller-visible frame of the CFG function: params then locals.
    pub frame: Vec<VarId>,
    pub first_block: BlockId,
    pub num_blocks: u32,
}

#[derive(Clone, Debug)]
pub struct Block {
    pub function: FunId,
    pub ops: Vec<Op>,
    pub term: Terminator,
}

#[derive(Clone, Debug)]
pub enum Op {
    /// A straight-line MIR statement (as in the CFG IR).
    Stmt(Stmt),
    /// Pass an argument: set the callee's parameter `param` to `value`
    /// (no conversion, as the structured interpreter).
    Arg { param: VarId, value: Expr },
    /// Set the function's result variable to `value` converted to the
    /// declared return type (int → real, ...), as Stan's `return`.
    SetResult { var: VarId, value: Expr },
    /// Save the variable's current value on its stack.
    Push(VarId),
    /// Restore the variable from its stack (the saved value is removed).
    Pop(VarId),
    /// Set the variable to the value on top of its stack, leaving the
    /// stack as it is: a fused `Pop` then `Push` (pass [`fuse`]).
    Peek(VarId),
}

#[derive(Clone, Debug)]
pub enum Terminator {
    Jump(BlockId),
    /// Per lane: to `then` when `cond` is non-zero, else to `otherwise`.
    Branch {
        cond: Expr,
        then: BlockId,
        otherwise: BlockId,
    },
    /// Push `ret` on the program-counter stack and go to `target`, the
    /// entry of `callee`.
    PushJump {
        ret: BlockId,
        callee: FunId,
        target: BlockId,
    },
    /// Pop the program-counter stack and go there; an empty stack ends
    /// the entry invocation.
    Return,
}

/// Where a variable lives in a batched executor. Orthogonal to sharing:
/// a `Shared` register or temporary needs one value, not one per lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// Read, never written by the program (data, transformed data, and in
    /// generated quantities the parameters): set by the host.
    Input,
    /// Defined and used within one block execution: no batch storage
    /// across blocks (an executor keeps it in a scratch buffer).
    Temp,
    /// One value per lane, no stack: written with a mask (or scatter) of
    /// the active lanes.
    Register,
    /// One value per lane plus a per-lane stack of saved values (live
    /// across a call that can write it, i.e. recursion). With
    /// `cached_top` the current value is the register and the stack holds
    /// only the saved values below it, so reads never gather from the stack;
    /// without, every read gathers `stack[depth]` per lane.
    Stack { cached_top: bool },
}

impl Program {
    pub fn function(&self, f: FunId) -> &Function {
        &self.functions[f.0 as usize]
    }

    pub fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b.0 as usize]
    }

    /// The entry function called `name`.
    pub fn entry(&self, name: &str) -> Option<FunId> {
        self.functions
            .iter()
            .position(|f| f.kind == FunctionKind::Entry && f.name == name)
            .map(|i| FunId(i as u32))
    }

    pub fn var_name(&self, v: VarId) -> &str {
        &self.mir.vars[v.0 as usize].name
    }

    /// Variables that have a stack (after the passes: only variables live
    /// across recursive calls).
    pub fn stack_vars(&self) -> Vec<VarId> {
        (0..self.storage.len())
            .filter(|&i| matches!(self.storage[i], Storage::Stack { .. }))
            .map(|i| VarId(i as u32))
            .filter(|v| self.has_stack_ops(*v))
            .collect()
    }

    fn has_stack_ops(&self, v: VarId) -> bool {
        self.blocks.iter().any(|b| {
            b.ops
                .iter()
                .any(|op| matches!(op, Op::Push(x) | Op::Pop(x) | Op::Peek(x) if *x == v))
        })
    }

    /// Number of Push, Pop and Peek ops (variable stacks only).
    pub fn count_stack_ops(&self) -> usize {
        self.blocks
            .iter()
            .flat_map(|b| &b.ops)
            .filter(|op| matches!(op, Op::Push(_) | Op::Pop(_) | Op::Peek(_)))
            .count()
    }

    /// Check the invariants of this module's docs that do not need an
    /// analysis (a lowering or pass bug otherwise).
    pub fn validate(&self) -> Result<(), String> {
        for (fi, f) in self.functions.iter().enumerate() {
            let range = f.first_block.0..f.first_block.0 + f.num_blocks;
            for b in range.clone() {
                let block = &self.blocks[b as usize];
                if block.function.0 as usize != fi {
                    return Err(format!("{}: b{b} belongs to another function", f.name));
                }
                let inside = |t: &BlockId| range.contains(&t.0);
                let ok = match &block.term {
                    Terminator::Jump(t) => inside(t),
                    Terminator::Branch {
                        then, otherwise, ..
                    } => inside(then) && inside(otherwise),
                    Terminator::PushJump {
                        ret,
                        callee,
                        target,
                    } => {
                        inside(ret)
                            && self
                                .functions
                                .get(callee.0 as usize)
                                .is_some_and(|g| g.first_block == *target)
                    }
                    Terminator::Return => true,
                };
                if !ok {
                    return Err(format!("{}: b{b} has a bad successor", f.name));
                }
            }
        }
        let covered: u32 = self.functions.iter().map(|f| f.num_blocks).sum();
        if covered as usize != self.blocks.len() || self.storage.len() != self.mir.vars.len() {
            return Err("blocks or storage do not cover the program".into());
        }
        Ok(())
    }
}

/// Errors of building the PC IR from a CFG program.
#[derive(Clone, Debug, PartialEq)]
pub struct PcError(pub String);

impl std::fmt::Display for PcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The optimized PC IR of a CFG program: the naive lowering, identity
/// arguments and result forwarding, the five passes of Radul et al. §3.2, jump threading, then
/// the batched-vs-shared analysis.
pub fn build(cfg: &crate::batch::cfg::Program) -> Result<Program, PcError> {
    let mut p = lower::lower(cfg)?;
    prune_saves::run(&mut p);
    identity_args::run(&mut p);
    forward_results::run(&mut p);
    fuse::run(&mut p);
    temps::run(&mut p);
    registers::run(&mut p);
    cached_tops::run(&mut p);
    thread_jumps::run(&mut p);
    sharing::analyse(&mut p);
    p.validate().map_err(PcError)?;
    Ok(p)
}
