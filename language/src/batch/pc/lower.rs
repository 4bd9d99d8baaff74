//! CFG IR → naive PC IR: merge all functions' blocks into one graph and
//! lower calls to caller-saves `Push`/`Pop`, argument writes and
//! `PushJump`/`Return`. Naive: every call saves the caller's whole frame
//! and every variable gets a stack; the passes then remove what is not
//! needed.

use super::{Block, BlockId, Function, Op, PcError, Program, Storage, Terminator};
use crate::batch::cfg::{self, FunctionKind};
use crate::mir::{Expr, ExprKind, FunId, Origin, Stmt, StmtKind, VarId, VarInfo};
use crate::span::Span;
use crate::types::AdLevel;

/// Lower `cfg` to the naive PC IR.
pub fn lower(cfg: &cfg::Program) -> Result<Program, PcError> {
    let mut mir = cfg.mir.clone();
    let layouts = layouts(cfg);
    let mut functions = Vec::new();
    for (fi, f) in cfg.functions.iter().enumerate() {
        let result = f.ret.as_ref().map(|ty| {
            let id = VarId(mir.vars.len() as u32);
            mir.vars.push(VarInfo {
                name: format!("{}$result", f.name),
                ty: ty.clone(),
                origin: Origin::Local,
                span: Span::default(),
            });
            id
        });
        let (first, num) = layouts[fi];
        functions.push(Function {
            name: f.name.clone(),
            kind: f.kind,
            params: f.params.clone(),
            ret: f.ret.clone(),
            result,
            frame: f.params.iter().chain(&f.locals).copied().collect(),
            first_block: BlockId(first),
            num_blocks: num,
        });
    }
    let mut blocks = Vec::new();
    for (fi, f) in cfg.functions.iter().enumerate() {
        let mut builder = FnLowering {
            fun: FunId(fi as u32),
            cfg,
            functions: &functions,
            vars: &mut mir.vars,
            base: layouts[fi].0,
            prefixes: vec![Vec::new(); f.blocks.len()],
            extra: Vec::new(),
        };
        let mut lowered = builder.function()?;
        debug_assert_eq!(lowered.len() as u32, layouts[fi].1);
        blocks.append(&mut lowered);
    }
    // Naive storage: every variable the program writes has a stack.
    let mut written = vec![false; mir.vars.len()];
    for op in blocks.iter().flat_map(|b: &Block| &b.ops) {
        for v in super::effects::of_op(op).writes {
            written[v.0 as usize] = true;
        }
    }
    let storage = written
        .iter()
        .map(|&w| {
            if w {
                Storage::Stack { cached_top: false }
            } else {
                Storage::Input
            }
        })
        .collect();
    Ok(Program {
        mir,
        functions,
        blocks,
        num_ad_stacks: cfg.num_ad_stacks,
        storage,
        sharing: None,
    })
}

/// The external call an op makes, if it is one: (function, arguments,
/// variable receiving the result). The PC IR keeps a call of an external
/// function (answered by the host, [`FunctionKind::External`]) as a
/// straight-line op `Let x = f(args)` or `Effect(f(args))`.
pub fn external_call<'a>(p: &Program, op: &'a Op) -> Option<(FunId, &'a [Expr], Option<VarId>)> {
    let Op::Stmt(stmt) = op else { return None };
    let (call, var) = match &stmt.kind {
        StmtKind::Let { var, value } => (value, Some(*var)),
        StmtKind::Effect(value) => (value, None),
        _ => return None,
    };
    match &call.kind {
        ExprKind::Call(f, args) if p.function(*f).kind == FunctionKind::External => {
            Some((*f, args, var))
        }
        _ => None,
    }
}

/// Whether a call's return block is its CFG `next` block itself (the call
/// is its only predecessor, and not in that block), else a new block that
/// jumps to it.
fn merges_into_next(f: &cfg::Function, next: cfg::BlockId) -> bool {
    let preds: Vec<usize> = f
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.term.successors().contains(&next))
        .map(|(i, _)| i)
        .collect();
    next.0 != 0 && preds.len() == 1 && preds[0] != next.0 as usize
}

/// (first block, number of blocks) of every function in the merged graph.
fn layouts(cfg: &cfg::Program) -> Vec<(u32, u32)> {
    let mut next_id = 0;
    cfg.functions
        .iter()
        .map(|f| {
            let extra = f
                .blocks
                .iter()
                .filter(|b| match b.term {
                    cfg::Terminator::Call { fun, next, .. } => {
                        cfg.function(fun).kind != FunctionKind::External
                            && !merges_into_next(f, next)
                    }
                    _ => false,
                })
                .count();
            let num = (f.blocks.len() + extra) as u32;
            let first = next_id;
            next_id += num;
            (first, num)
        })
        .collect()
}

struct FnLowering<'a> {
    fun: FunId,
    cfg: &'a cfg::Program,
    functions: &'a [Function],
    vars: &'a mut Vec<VarInfo>,
    base: u32,
    /// Ops to put first in a CFG block (a merged call's return sequence).
    prefixes: Vec<Vec<Op>>,
    /// Return blocks appended after the CFG blocks.
    extra: Vec<Block>,
}

fn var_expr(v: VarId, info: &VarInfo, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Var(v),
        ty: info.ty.clone(),
        ad: AdLevel::AutoDiff,
        span,
    }
}

impl FnLowering<'_> {
    fn global(&self, b: cfg::BlockId) -> BlockId {
        BlockId(self.base + b.0)
    }

    fn function(&mut self) -> Result<Vec<Block>, PcError> {
        let f = self.cfg.function(self.fun);
        let mut lowered: Vec<Option<Block>> = vec![None; f.blocks.len()];
        // Calls first: they add prefixes to later (or earlier) blocks.
        let mut terms = Vec::new();
        for (i, b) in f.blocks.iter().enumerate() {
            let (ops, term) = self.terminator(b, f.blocks.len())?;
            terms.push((i, ops, term));
        }
        for (i, tail, term) in terms {
            let mut ops = std::mem::take(&mut self.prefixes[i]);
            ops.extend(f.blocks[i].ops.iter().cloned().map(Op::Stmt));
            ops.extend(tail);
            lowered[i] = Some(Block {
                function: self.fun,
                ops,
                term,
            });
        }
        let mut blocks: Vec<Block> = lowered.into_iter().map(Option::unwrap).collect();
        blocks.append(&mut self.extra);
        Ok(blocks)
    }

    /// The ops that end the block and its terminator.
    fn terminator(
        &mut self,
        b: &cfg::Block,
        num_cfg_blocks: usize,
    ) -> Result<(Vec<Op>, Terminator), PcError> {
        let functions = self.functions;
        let me = &functions[self.fun.0 as usize];
        Ok(match &b.term {
            cfg::Terminator::Jump(t) => (vec![], Terminator::Jump(self.global(*t))),
            cfg::Terminator::Branch {
                cond,
                then,
                otherwise,
            } => (
                vec![],
                Terminator::Branch {
                    cond: cond.clone(),
                    then: self.global(*then),
                    otherwise: self.global(*otherwise),
                },
            ),
            cfg::Terminator::Return(value) => {
                let ops = match (value, me.result) {
                    (Some(value), Some(var)) => vec![Op::SetResult {
                        var,
                        value: value.clone(),
                    }],
                    _ => vec![],
                };
                (ops, Terminator::Return)
            }
            cfg::Terminator::Call {
                fun,
                args,
                ret,
                next,
            } => {
                let callee = &functions[fun.0 as usize];
                if callee.kind == FunctionKind::External {
                    // The host answers it within the block (no frame, no
                    // program-counter step): one op, see [`external_call`].
                    let span = Span::default();
                    let ty = ret.map_or(crate::types::Type::Error, |v| {
                        self.vars[v.0 as usize].ty.clone()
                    });
                    let call = Expr {
                        kind: ExprKind::Call(*fun, args.clone()),
                        ty,
                        ad: AdLevel::AutoDiff,
                        span,
                    };
                    let kind = match ret {
                        Some(var) => StmtKind::Let {
                            var: *var,
                            value: call,
                        },
                        None => StmtKind::Effect(call),
                    };
                    return Ok((
                        vec![Op::Stmt(Stmt { kind, span })],
                        Terminator::Jump(self.global(*next)),
                    ));
                }
                if callee.num_blocks == 0 {
                    return Err(PcError(format!(
                        "`{}` calls `{}`, which has no blocks",
                        me.name, callee.name
                    )));
                }
                let frame = me.frame.clone();
                let mut ops = Vec::new();
                // An argument reading a parameter written earlier in the
                // sequence (recursion) is bound to a temporary first, and so
                // is every argument before it, keeping the evaluation order
                // (arguments may draw random numbers).
                let last_clobbered = args.iter().enumerate().rposition(|(j, arg)| {
                    let reads = super::effects::of_expr(arg).reads;
                    callee.params[..j].iter().any(|p| reads.contains(p))
                });
                let mut values = Vec::new();
                for (j, arg) in args.iter().enumerate() {
                    if last_clobbered.is_some_and(|last| j <= last) {
                        let t = VarId(self.vars.len() as u32);
                        self.vars.push(VarInfo {
                            name: format!("{}$arg{j}", callee.name),
                            ty: arg.ty.clone(),
                            origin: Origin::Local,
                            span: arg.span,
                        });
                        ops.push(Op::Stmt(Stmt {
                            kind: StmtKind::Let {
                                var: t,
                                value: arg.clone(),
                            },
                            span: arg.span,
                        }));
                        values.push(var_expr(t, &self.vars[t.0 as usize], arg.span));
                    } else {
                        values.push(arg.clone());
                    }
                }
                ops.extend(frame.iter().map(|v| Op::Push(*v)));
                for (param, value) in callee.params.iter().zip(values) {
                    ops.push(Op::Arg {
                        param: *param,
                        value,
                    });
                }
                // Restore first: the result variable may itself be saved.
                let mut restore: Vec<Op> = frame.iter().rev().map(|v| Op::Pop(*v)).collect();
                if let Some(x) = ret {
                    let result = callee.result.ok_or_else(|| {
                        PcError(format!("void function `{}` used as a value", callee.name))
                    })?;
                    let span = Span::default();
                    restore.push(Op::Stmt(Stmt {
                        kind: StmtKind::Let {
                            var: *x,
                            value: var_expr(result, &self.vars[result.0 as usize], span),
                        },
                        span,
                    }));
                }
                let f = self.cfg.function(self.fun);
                let ret_block = if merges_into_next(f, *next) {
                    self.prefixes[next.0 as usize] = restore;
                    self.global(*next)
                } else {
                    let id = BlockId(self.base + (num_cfg_blocks + self.extra.len()) as u32);
                    self.extra.push(Block {
                        function: self.fun,
                        ops: restore,
                        term: Terminator::Jump(self.global(*next)),
                    });
                    id
                };
                (
                    ops,
                    Terminator::PushJump {
                        ret: ret_block,
                        callee: *fun,
                        target: callee.first_block,
                    },
                )
            }
        })
    }
}
