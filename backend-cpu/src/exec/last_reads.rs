//! The last read of a block-local variable takes the variable's value
//! instead of sharing it, so the statement's kernels may write into it.
//!
//! Why: a variable's slot is shared by `Arc`, and an elementwise kernel
//! writes its result into an operand's buffer only when nothing else holds
//! the operand ([`crate::eval::kernels::prim_in_place`]) — true of nested
//! temporaries, never of a variable read. A gradient program is mostly
//! statements reading compiler temporaries no one reads again
//! (`let t__39 = add(alpha, t__38)`), each of which kept its operand's
//! block alive and filled a new one. Moving them frees the block at its
//! last use: the logistic regression's 1,000-chain `bat run` peaks at
//! 2.4–2.5 GB instead of 2.9 GB, `bat bench` at 1,024 chains at 357 MB
//! instead of 518 MB. Time is unchanged
//! (a pass in place and a pass into a pooled buffer cost the same there).
//!
//! # Which reads move
//! A read of `v` in statement `s` of a block moves `v`'s slot out of the
//! state when:
//! - `v` is block-local: a function-local variable (not a parameter, a
//!   generated quantity or anything else the host reads) that no block
//!   reads before writing it whole — so its value never crosses a block
//!   boundary, and lanes running the block later write it again first;
//! - no later op of the block, nor its terminator, reads `v`;
//! - `s` reads `v` exactly once, not inside a `c ? a : b` (evaluated per
//!   side, possibly more than once) and `s` makes no call;
//! - `s` does not write `v`, and is a plain statement (`let`, a
//!   declaration with a value, an assignment, `target +=`, an AD push).
//!
//! Then no lane, running now or later, reads the value after `s`, so
//! taking it changes no lane's result (the executors' contract); it only
//! lets the value's buffer be reused. Statements run by other paths (loops
//! run as lanes, the structured executor) simply share as before.

use language::batch::pc::effects::{self, Effects};
use language::batch::{cfg, pc};
use language::mir::{Expr, ExprKind, Origin, Stmt, StmtKind, VarId, VarInfo};
use runtime::IntHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

/// The variables each statement's last read moves, by the statement's
/// address in the program it was computed for.
#[derive(Debug, Default)]
pub struct LastReads {
    /// (Hashed by a multiplication: SipHash, looked up once per statement
    /// run, was ~2% of eight schools' one-chain gradient.)
    by_stmt: HashMap<usize, Arc<[VarId]>, BuildHasherDefault<IntHasher>>,
}

/// One op of a block: a statement (where reads may move) or another op
/// (a PC IR argument, result, push or pop), by its effects.
struct Item<'a> {
    stmt: Option<&'a Stmt>,
    effects: Effects,
}

/// A block's ops and what its terminator reads.
struct BlockView<'a> {
    items: Vec<Item<'a>>,
    end: Effects,
}

impl LastReads {
    /// The moves of `s` (empty for most statements).
    pub fn at(&self, s: &Stmt) -> Option<&Arc<[VarId]>> {
        self.by_stmt.get(&(std::ptr::from_ref(s) as usize))
    }

    /// No statement moves anything.
    pub fn is_empty(&self) -> bool {
        self.by_stmt.is_empty()
    }

    /// For the CFG program (local static batching).
    pub fn of_cfg(p: &cfg::Program) -> LastReads {
        let blocks = p.functions.iter().flat_map(|f| &f.blocks).map(|b| {
            let items = b
                .ops
                .iter()
                .map(|s| Item {
                    stmt: Some(s),
                    effects: effects::of_stmt(s),
                })
                .collect();
            let mut end = Effects::default();
            match &b.term {
                cfg::Terminator::Jump(_) | cfg::Terminator::Return(None) => {}
                cfg::Terminator::Branch { cond, .. } => end = effects::of_expr(cond),
                cfg::Terminator::Return(Some(e)) => end = effects::of_expr(e),
                cfg::Terminator::Call { args, .. } => {
                    for a in args {
                        end.reads.extend(effects::of_expr(a).reads);
                    }
                }
            }
            BlockView { items, end }
        });
        analyse(&p.mir.vars, blocks.collect(), &[])
    }

    /// For the PC IR (program-counter batching). Function results are
    /// never moved (the host reads the entry's).
    pub fn of_pc(p: &pc::Program) -> LastReads {
        let blocks = p.blocks.iter().map(|b| BlockView {
            items: b
                .ops
                .iter()
                .map(|op| Item {
                    stmt: match op {
                        pc::Op::Stmt(s) => Some(s),
                        _ => None,
                    },
                    effects: effects::of_op(op),
                })
                .collect(),
            end: effects::of_terminator(&b.term),
        });
        let results: Vec<VarId> = p.functions.iter().filter_map(|f| f.result).collect();
        analyse(&p.mir.vars, blocks.collect(), &results)
    }
}

fn analyse(vars: &[VarInfo], blocks: Vec<BlockView>, excluded: &[VarId]) -> LastReads {
    // Block-local: a local no block reads before writing it whole.
    let mut local: Vec<bool> = vars.iter().map(|v| v.origin == Origin::Local).collect();
    for v in excluded {
        local[v.0 as usize] = false;
    }
    for b in &blocks {
        let mut written = vec![false; vars.len()];
        let effects = b.items.iter().map(|i| &i.effects).chain([&b.end]);
        for e in effects {
            for r in &e.reads {
                if !written[r.0 as usize] {
                    local[r.0 as usize] = false;
                }
            }
            for k in &e.kills {
                written[k.0 as usize] = true;
            }
        }
    }
    let mut by_stmt = HashMap::default();
    for b in &blocks {
        // Variables some later op (or the terminator) reads.
        let mut read_later = vec![false; vars.len()];
        for r in &b.end.reads {
            read_later[r.0 as usize] = true;
        }
        for item in b.items.iter().rev() {
            if let Some(s) = item.stmt
                && movable_kind(s)
            {
                let e = &item.effects;
                let moves: Vec<VarId> = distinct(&e.reads)
                    .filter(|v| {
                        let i = v.0 as usize;
                        local[i]
                            && !read_later[i]
                            && e.reads.iter().filter(|r| *r == v).count() == 1
                            && !e.writes.contains(v)
                            && plainly_read(s, *v)
                    })
                    .collect();
                if !moves.is_empty() {
                    by_stmt.insert(std::ptr::from_ref(s) as usize, moves.into());
                }
            }
            for r in &item.effects.reads {
                read_later[r.0 as usize] = true;
            }
        }
    }
    LastReads { by_stmt }
}

fn distinct(vs: &[VarId]) -> impl Iterator<Item = VarId> + '_ {
    vs.iter()
        .enumerate()
        .filter(|(i, v)| !vs[..*i].contains(v))
        .map(|(_, v)| *v)
}

fn movable_kind(s: &Stmt) -> bool {
    matches!(
        s.kind,
        StmtKind::Let { .. }
            | StmtKind::Decl { init: Some(_), .. }
            | StmtKind::Assign { .. }
            | StmtKind::AddAssign { .. }
            | StmtKind::TargetAdd(_)
            | StmtKind::JacobianAdd(_)
            | StmtKind::Push { .. }
    )
}

/// `v`'s read in `s` is not under a `c ? a : b` and `s` makes no call
/// (nor runs an ODE solver, whose operands user functions read).
fn plainly_read(s: &Stmt, v: VarId) -> bool {
    let value = match &s.kind {
        StmtKind::Let { value, .. }
        | StmtKind::Decl {
            init: Some(value), ..
        }
        | StmtKind::Assign { rhs: value, .. }
        | StmtKind::AddAssign { rhs: value, .. }
        | StmtKind::TargetAdd(value)
        | StmtKind::JacobianAdd(value)
        | StmtKind::Push { value, .. } => value,
        _ => return false,
    };
    // Reads elsewhere in the statement (sizes, indexes of the target) are
    // outside `value`: the one read must be in it.
    fn walk(e: &Expr, v: VarId, guarded: bool, found: &mut Option<bool>) -> bool {
        match &e.kind {
            ExprKind::Var(x) => {
                if *x == v {
                    *found = Some(!guarded);
                }
                true
            }
            ExprKind::Call(..) | ExprKind::Ode(_) => false,
            ExprKind::Cond(c, t, f) => {
                walk(c, v, true, found) && walk(t, v, true, found) && walk(f, v, true, found)
            }
            _ => {
                let mut ok = true;
                language::mir::visit::children(e, &mut |c| ok = ok && walk(c, v, guarded, found));
                ok
            }
        }
    }
    let mut found = None;
    walk(value, v, false, &mut found) && found == Some(true)
}
