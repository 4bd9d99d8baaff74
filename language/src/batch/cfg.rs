//! The CFG IR (Radul et al. 2020, Fig. 2): functions made of basic blocks.
//!
//! A [`Program`] is the MIR program it was lowered from (whose variable
//! table now also holds the temporaries the lowering introduced) plus one
//! [`Function`] per MIR user function — at the same index, so a
//! [`FunId`] names the same function in both IRs — followed by the entry
//! functions (e.g. the log-density gradient, generated quantities).
//!
//! # Invariants
//! - A function's `blocks[0]` is its entry; every block ends in exactly one
//!   [`Terminator`]; every block is reachable from the entry.
//! - Ops are straight-line MIR statements: never `If`, `While`, `For`,
//!   `ForDown`, `Block`, `Break`, `Continue` or `Return` (those became
//!   terminators), and no expression inside an op, a branch condition, call
//!   arguments or a return value contains a user-function call
//!   ([`crate::mir::ExprKind::Call`]): every call is a [`Terminator::Call`]
//!   whose result is written to a variable. Calls were hoisted in the
//!   interpreter's evaluation order; operands evaluated before a call that
//!   have effects (random draws, stack pops, reading `target()`) were bound
//!   to temporaries first, so effects happen in the same order as in the
//!   scalar interpreter.
//! - A `for` loop evaluates its bounds once (into the loop variable and a
//!   temporary) as in Stan; the loop variable is set with `Let`.
//! - `Let` means "set the variable to this value" (no shape check).
//! - Every variable a function's blocks read or write is in its `locals`
//!   or `params` (functions see only their own frame); entry functions also
//!   read globals (data, transformed data, parameters, ...). The batching
//!   IR decides which of these need a stack across recursive calls.
//! - After [`super::sra`], a tuple local that is only defined whole from a
//!   place or a tuple literal and read by projection or whole is replaced
//!   by its components (`a.1`, `a.2`, ...); see that module for the rules.
//! - A lane that executes `Reject` (or hits a domain error) abandons the
//!   entry invocation it is in; executors report it per lane.

use crate::mir::{self, Expr, FunId, Stmt, StmtKind, VarId};
use crate::types::Type;

/// Index into [`Function::blocks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

#[derive(Clone, Debug)]
pub struct Program {
    /// The MIR program: variables (with the lowering's temporaries), data
    /// declarations, parameter declarations.
    pub mir: mir::Program,
    /// `functions[f]` for `f < mir.functions.len()` is user function `f`;
    /// the entries follow.
    pub functions: Vec<Function>,
    /// Stacks used by the gradient program's `Push`/`Pop` (0 otherwise).
    pub num_ad_stacks: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// A user-defined function of the Stan program.
    User,
    /// Declared without a body: provided by the host (sampler intrinsics).
    External,
    /// A top-level entry (a program block or the gradient program).
    Entry,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub kind: FunctionKind,
    pub params: Vec<VarId>,
    /// `None` for `void`.
    pub ret: Option<Type>,
    /// Variables of one invocation's frame other than the parameters, in
    /// first-use order.
    pub locals: Vec<VarId>,
    pub blocks: Vec<Block>,
}

#[derive(Clone, Debug)]
pub struct Block {
    pub ops: Vec<Stmt>,
    pub term: Terminator,
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
    /// Call `fun` with `args`; its result (if any) is set into variable
    /// `ret` (a whole variable, like `Let`), then execution goes on at `next`.
    Call {
        fun: FunId,
        args: Vec<Expr>,
        ret: Option<VarId>,
        next: BlockId,
    },
    /// Leave the function, returning the value (non-void functions).
    Return(Option<Expr>),
}

impl Program {
    pub fn function(&self, f: FunId) -> &Function {
        &self.functions[f.0 as usize]
    }

    /// Check the invariants written in this module's docs (a lowering bug
    /// otherwise); the message names the function and block.
    pub fn validate(&self) -> Result<(), String> {
        let p = self;
        for f in &p.functions {
            if f.kind == FunctionKind::External {
                continue;
            }
            if f.blocks.is_empty() {
                return Err(format!("{}: no blocks", f.name));
            }
            let mut reached = vec![false; f.blocks.len()];
            let mut work = vec![0usize];
            while let Some(b) = work.pop() {
                if std::mem::replace(&mut reached[b], true) {
                    continue;
                }
                for s in f.blocks[b].term.successors() {
                    if s.0 as usize >= f.blocks.len() {
                        return Err(format!("{}: b{b} jumps to missing b{}", f.name, s.0));
                    }
                    work.push(s.0 as usize);
                }
            }
            if let Some(b) = reached.iter().position(|r| !r) {
                return Err(format!("{}: b{b} unreachable", f.name));
            }
            for (i, b) in f.blocks.iter().enumerate() {
                for op in &b.ops {
                    let structured = matches!(
                        op.kind,
                        StmtKind::If { .. }
                            | StmtKind::While { .. }
                            | StmtKind::For { .. }
                            | StmtKind::ForDown { .. }
                            | StmtKind::Block(_)
                            | StmtKind::Break
                            | StmtKind::Continue
                            | StmtKind::Return(_)
                    );
                    if structured {
                        return Err(format!("{}: b{i} holds a control-flow statement", f.name));
                    }
                    if format!("{op:?}").contains("Call(FunId(") {
                        return Err(format!("{}: b{i} holds a call inside an op", f.name));
                    }
                }
                let term_exprs = match &b.term {
                    Terminator::Branch { cond, .. } => vec![cond],
                    Terminator::Call { args, .. } => args.iter().collect(),
                    Terminator::Return(Some(e)) => vec![e],
                    _ => vec![],
                };
                if term_exprs.iter().any(|e| super::lower::contains_call(e)) {
                    return Err(format!("{}: b{i} terminator holds a nested call", f.name));
                }
            }
        }
        Ok(())
    }
}

impl Program {
    /// The entry function called `name`.
    pub fn entry(&self, name: &str) -> Option<FunId> {
        self.functions
            .iter()
            .position(|f| f.kind == FunctionKind::Entry && f.name == name)
            .map(|i| FunId(i as u32))
    }
}

impl Function {
    pub fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b.0 as usize]
    }
}

impl Terminator {
    /// The blocks control may go to next within the function.
    pub fn successors(&self) -> Vec<BlockId> {
        match self {
            Terminator::Jump(b) => vec![*b],
            Terminator::Branch {
                then, otherwise, ..
            } => vec![*then, *otherwise],
            Terminator::Call { next, .. } => vec![*next],
            Terminator::Return(_) => vec![],
        }
    }
}
