//! One copy of a user function per call site, for programs that call a
//! function with arguments of different sizes.
//!
//! Kernels hold every variable at one static size, and in the PC IR a
//! function's parameters and locals are program-wide variables, so a
//! function called with a 40-element vector at one call site and a
//! 20-element one at another has no layout. [`per_call_site`] gives each
//! call site of such a function (non-recursive, called from more than one
//! place) its own copy of the function's blocks, with fresh variables and
//! AD stacks, and repeats for the functions those copies call. The
//! original's blocks are emptied. The result is a PC program like any
//! other (the interpreter runs it unchanged), whose variables each have
//! one size.
//!
//! A variable is renamed only where the PC IR's calling convention puts
//! it: the function's own blocks, the argument writes of its call site and
//! the reads of its result in the return block. Values cross calls only
//! through arguments and results (a function's locals are written before
//! they are read, its AD stacks pushed and popped in balance), so each
//! copy may own all of them. If any other block still reads the result of
//! an emptied function, the program is left as it was (and refused as
//! before).

use std::collections::{BTreeSet, HashMap};

use language::batch::pc::{self, BlockId, FunctionKind, Op, Terminator};
use language::mir::visit::{children_mut, for_each_expr};
use language::mir::{Expr, ExprKind, FunId, Origin, SizedType, StackId, Stmt, StmtKind, VarId};

/// `p` with a copy of each multiply-called, non-recursive user function
/// per call site; `None` if nothing needs copying or the copies cannot be
/// made safely (see the module docs).
pub fn per_call_site(p: &pc::Program) -> Option<pc::Program> {
    let mut p = p.clone();
    let budget = 8 * p.blocks.len() + 256;
    let mut dead: Vec<(FunId, Owned)> = Vec::new();
    loop {
        let live = live_functions(&p);
        let sites = call_sites(&p, &live);
        let candidate = sites.into_iter().find(|(g, at)| {
            at.len() > 1 && p.function(*g).kind == FunctionKind::User && !recursive(&p, *g, &live)
        });
        let Some((g, at)) = candidate else { break };
        let owned = owned(&p, g)?;
        for (k, &site) in at.iter().enumerate() {
            copy_for_site(&mut p, g, &owned, site, k + 1);
        }
        for b in block_range(&p, g) {
            p.blocks[b].ops.clear();
            p.blocks[b].term = Terminator::Return;
        }
        dead.push((g, owned));
        if p.blocks.len() > budget {
            return None;
        }
    }
    if dead.is_empty() {
        return None;
    }
    // Every read of a copied function's result was redirected to its
    // copy's (an emptied function's result is written by no one).
    let live = live_functions(&p);
    for b in live.iter().flat_map(|&f| block_range(&p, f)) {
        let (vars, _) = mentions(&p.blocks[b]);
        if dead
            .iter()
            .filter_map(|(_, owned)| owned.result)
            .any(|r| vars.contains(&r.0))
        {
            return None;
        }
    }
    p.sharing = None;
    Some(p)
}

/// What the copies of a function rename, and its result variable.
#[derive(Clone, Debug)]
struct Owned {
    vars: Vec<VarId>,
    stacks: Vec<StackId>,
    result: Option<VarId>,
}

fn block_range(p: &pc::Program, f: FunId) -> std::ops::Range<usize> {
    let f = p.function(f);
    f.first_block.0 as usize..(f.first_block.0 + f.num_blocks) as usize
}

/// Functions reachable by calls from the entries (emptied functions are
/// no longer called).
fn live_functions(p: &pc::Program) -> Vec<FunId> {
    let entries: Vec<FunId> = (0..p.functions.len() as u32)
        .map(FunId)
        .filter(|&f| p.function(f).kind == FunctionKind::Entry)
        .collect();
    super::program::reachable_functions(p, &entries)
}

/// The call-site blocks of each function called from a live function.
fn call_sites(p: &pc::Program, live: &[FunId]) -> Vec<(FunId, Vec<usize>)> {
    let mut sites: Vec<(FunId, Vec<usize>)> = Vec::new();
    for b in live.iter().flat_map(|&f| block_range(p, f)) {
        if let Terminator::PushJump { callee, .. } = p.blocks[b].term {
            match sites.iter_mut().find(|(g, _)| *g == callee) {
                Some((_, at)) => at.push(b),
                None => sites.push((callee, vec![b])),
            }
        }
    }
    sites
}

/// Whether `g` can call itself (directly or through other functions).
fn recursive(p: &pc::Program, g: FunId, live: &[FunId]) -> bool {
    let callees = |f: FunId| -> Vec<FunId> {
        block_range(p, f)
            .filter_map(|b| match p.blocks[b].term {
                Terminator::PushJump { callee, .. } => Some(callee),
                _ => None,
            })
            .collect()
    };
    let mut seen = vec![g];
    let mut todo = callees(g);
    while let Some(f) = todo.pop() {
        if f == g {
            return true;
        }
        if !seen.contains(&f) && live.contains(&f) {
            seen.push(f);
            todo.extend(callees(f));
        }
    }
    false
}

/// Ids after `VarId(` and `StackId(` in a block's debug text: every
/// variable and stack it mentions, wherever they are.
fn mentions(block: &pc::Block) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let text = format!("{:?}{:?}", block.ops, block.term);
    let ids = |tag: &str| -> BTreeSet<u32> {
        text.match_indices(tag)
            .filter_map(|(i, _)| {
                let rest = &text[i + tag.len()..];
                let end = rest.find(')')?;
                rest[..end].parse().ok()
            })
            .collect()
    };
    (ids("VarId("), ids("StackId("))
}

/// The variables and AD stacks a copy of `g` renames: every one its
/// blocks mention, and its parameters and result — except data, the
/// parameters and results of the functions it calls (written and read by
/// its call sites), and what the entries mention. (A function and its
/// reverse may share variables: each copy of either gets its own.) `None`
/// if `g`'s parameters are also those of a function it calls.
fn owned(p: &pc::Program, g: FunId) -> Option<Owned> {
    let f = p.function(g);
    let own: BTreeSet<u32> = f.params.iter().chain(&f.result).map(|v| v.0).collect();
    let mut theirs = BTreeSet::new();
    let mut entries = BTreeSet::new();
    for (h, function) in p.functions.iter().enumerate() {
        let h = FunId(h as u32);
        if function.kind == FunctionKind::Entry {
            for b in block_range(p, h) {
                entries.extend(mentions(&p.blocks[b]).0);
            }
        }
    }
    let (mut vars, mut stacks) = (BTreeSet::new(), BTreeSet::new());
    for b in block_range(p, g) {
        let (v, s) = mentions(&p.blocks[b]);
        vars.extend(v);
        stacks.extend(s);
        if let Terminator::PushJump { callee, .. } = p.blocks[b].term {
            let c = p.function(callee);
            theirs.extend(c.params.iter().chain(&c.result).map(|v| v.0));
        }
    }
    if !own.is_disjoint(&theirs) {
        return None;
    }
    vars.extend(&own);
    let is_data = |v: u32| {
        matches!(
            p.mir.vars[v as usize].origin,
            Origin::Data | Origin::TransformedData | Origin::Parameter
        )
    };
    Some(Owned {
        vars: vars
            .into_iter()
            .filter(|v| {
                !is_data(*v) && !theirs.contains(v) && (own.contains(v) || !entries.contains(v))
            })
            .map(VarId)
            .collect(),
        stacks: stacks.into_iter().map(StackId).collect(),
        result: f.result,
    })
}

/// Append a copy of `g` for the call at block `site` and point the call
/// (its argument writes, jump, and the reads of the result in its return
/// block) at it.
fn copy_for_site(p: &mut pc::Program, g: FunId, owned: &Owned, site: usize, k: usize) {
    let mut renames = Renames::default();
    for &v in &owned.vars {
        let fresh = VarId(p.mir.vars.len() as u32);
        p.mir.vars.push(p.mir.vars[v.0 as usize].clone());
        p.storage.push(p.storage[v.0 as usize]);
        renames.vars.insert(v, fresh);
    }
    for &s in &owned.stacks {
        renames.stacks.insert(s, StackId(p.num_ad_stacks));
        p.num_ad_stacks += 1;
    }
    let range = block_range(p, g);
    let first = p.blocks.len() as u32;
    let new_id = FunId(p.functions.len() as u32);
    let moved = |b: BlockId| -> BlockId {
        if range.contains(&(b.0 as usize)) {
            BlockId(b.0 - range.start as u32 + first)
        } else {
            b
        }
    };
    for b in range.clone() {
        let mut block = p.blocks[b].clone();
        block.function = new_id;
        for op in &mut block.ops {
            renames.op(op);
        }
        block.term = match block.term {
            Terminator::Jump(t) => Terminator::Jump(moved(t)),
            Terminator::Branch {
                mut cond,
                then,
                otherwise,
            } => {
                renames.expr(&mut cond);
                Terminator::Branch {
                    cond,
                    then: moved(then),
                    otherwise: moved(otherwise),
                }
            }
            Terminator::PushJump {
                ret,
                callee,
                target,
            } => Terminator::PushJump {
                ret: moved(ret),
                callee,
                target,
            },
            Terminator::Return => Terminator::Return,
        };
        p.blocks.push(block);
    }
    let mut function = p.function(g).clone();
    function.name = format!("{}${k}", function.name);
    let rename = |v: &VarId| *renames.vars.get(v).unwrap_or(v);
    function.params = function.params.iter().map(rename).collect();
    function.result = function.result.as_ref().map(rename);
    function.frame = function.frame.iter().map(rename).collect();
    function.first_block = BlockId(first);
    p.functions.push(function);
    // The call site: arguments into the copy's parameters, then the jump.
    let params: Renames = Renames {
        vars: p
            .function(g)
            .params
            .iter()
            .map(|v| (*v, rename(v)))
            .collect(),
        stacks: HashMap::new(),
    };
    let call = &mut p.blocks[site];
    for op in &mut call.ops {
        if let Op::Arg { param, .. } = op {
            params.var(param);
        }
    }
    let Terminator::PushJump { ret, .. } = call.term else {
        unreachable!("a call site ends with its call");
    };
    call.term = Terminator::PushJump {
        ret,
        callee: new_id,
        target: BlockId(first),
    };
    // The return block reads the copy's result.
    if let Some(result) = p.function(g).result {
        let reads = Renames {
            vars: HashMap::from([(result, rename(&result))]),
            stacks: HashMap::new(),
        };
        for op in &mut p.blocks[ret.0 as usize].ops {
            if let Op::Stmt(s) = op {
                reads.stmt_reads(s);
            }
        }
    }
}

#[derive(Default)]
struct Renames {
    vars: HashMap<VarId, VarId>,
    stacks: HashMap<StackId, StackId>,
}

impl Renames {
    fn var(&self, v: &mut VarId) {
        if let Some(n) = self.vars.get(v) {
            *v = *n;
        }
    }

    fn stack(&self, s: &mut StackId) {
        if let Some(n) = self.stacks.get(s) {
            *s = *n;
        }
    }

    fn expr(&self, e: &mut Expr) {
        self.shallow(e);
        children_mut(e, &mut |c| self.expr(c));
    }

    fn shallow(&self, e: &mut Expr) {
        match &mut e.kind {
            ExprKind::Var(v) => self.var(v),
            ExprKind::Pop(s) => self.stack(s),
            _ => {}
        }
    }

    fn sized(&self, ty: &mut SizedType) {
        ty.for_each_size_mut(&mut |n| self.expr(n));
    }

    /// Every expression of `s` (reads).
    fn stmt_reads(&self, s: &mut Stmt) {
        for_each_expr(std::slice::from_mut(s), &mut |e| self.shallow(e));
    }

    fn stmt(&self, s: &mut Stmt) {
        self.stmt_reads(s);
        match &mut s.kind {
            StmtKind::Decl { var, ty, .. } => {
                self.var(var);
                self.sized(ty);
            }
            StmtKind::Let { var, .. } | StmtKind::CheckConstraint { var, .. } => self.var(var),
            StmtKind::Assign { lhs, .. } | StmtKind::AddAssign { lhs, .. } => {
                self.var(&mut lhs.var)
            }
            StmtKind::Unpack { lhs, .. } => lhs.iter_mut().for_each(|l| self.var(&mut l.var)),
            StmtKind::Push { stack, .. } => self.stack(stack),
            StmtKind::For { var, .. } | StmtKind::ForDown { var, .. } => self.var(var),
            _ => {}
        }
    }

    fn op(&self, op: &mut Op) {
        match op {
            Op::Stmt(s) => self.stmt(s),
            Op::Arg { param, value } => {
                // A call inside the copy: the callee's parameter is not
                // among the renamed, its value may be.
                self.var(param);
                self.expr(value);
            }
            Op::SetResult { var, value } => {
                self.var(var);
                self.expr(value);
            }
            Op::Push(v) | Op::Pop(v) | Op::Peek(v) => self.var(v),
        }
    }
}
