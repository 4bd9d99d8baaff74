//! Scalar replacement of tuple locals on the CFG IR (SRA): a tuple-typed
//! local that the function only defines whole from a place or a tuple
//! literal, reads by projection, or reads whole, becomes one local per
//! component. The PC IR then sees the components as separate variables:
//! liveness drops a component when it is dead, the caller-saves stacks hold
//! only the components live across a recursive call, and a component never
//! read after a call is never saved (NUTS's `build_tree_rng` keeps 12 of
//! the 18 components of its first sub-tree across the second recursive
//! call instead of the whole tuple).
//!
//! # What is split
//! A variable `a` of function `f` is split when it is in `f.locals`, its
//! origin is [`Origin::Local`], its type is a tuple, and every occurrence
//! of `a` in `f` is one of:
//! - a whole definition `Decl a = e` (or without initial value), `Let a =
//!   e` or `a = e`, where `e` is a *place* (a variable other than `a`,
//!   possibly projected: `w`, `w.3.1`) or a tuple literal whose elements do
//!   not read `a`; it becomes one definition per component, in component
//!   order, `a.k = e.k` (a place is projected, a literal's element taken);
//! - a projection `a.k` read in an expression, or an assigned place
//!   starting with `a.k`: it becomes the component variable `a.k`;
//! - a whole read `a` in any other expression (a `return a`, an argument):
//!   it becomes the tuple literal of the components, rebuilt where used.
//!
//! Left whole, with the reason:
//! - a call's result variable (`Terminator::Call { ret }`): a call writes
//!   the whole value (the lowering binds calls to temporaries `cfg__N`,
//!   whose only use is the definition of the declared local, so the
//!   declared local is split and the temporary stays whole);
//! - a parameter (written whole by the caller), a global, a variable
//!   defined from any other expression (e.g. `Cond`, an indexed array of
//!   tuples), a whole variable in `Unpack`/`+=`/constraint checks/parameter
//!   reads.
//!
//! Nested tuples: a component that is itself a tuple is a new local and is
//! split in the next round when it qualifies (its definitions are places
//! `w.k` or elements of literals), until no variable qualifies.
//!
//! # Invariants (of the output)
//! - A split variable no longer occurs in its function; its components
//!   take its place in `locals` (same position, component order), named
//!   `a.1`, `a.2`, ... (so errors still name the component) with the
//!   component types.
//! - Values, effects and their order are those of the input on every run
//!   without errors: definitions are evaluated in component order, which
//!   is the order the literal's elements were evaluated in, and a place is
//!   read without effects. (A `Decl` with sizes checks each component's
//!   size right after its value, so when two things fail, a different
//!   error may be reported first.)

use super::cfg::{Function, FunctionKind, Program, Terminator};
use crate::mir::{Expr, ExprKind, LValue, LValueStep, Origin, SizedType, Stmt, StmtKind, VarId};
use crate::mir::{VarInfo, visit};
use crate::types::Type;
use std::collections::{HashMap, HashSet};

/// Split every qualifying tuple local of every function (see the module
/// docs); returns how many variables were split (components that were
/// split again count too).
pub fn split_tuple_locals(p: &mut Program) -> usize {
    let mut split = 0;
    for fi in 0..p.functions.len() {
        if p.functions[fi].kind == FunctionKind::External {
            continue;
        }
        loop {
            let chosen = qualifying(&p.functions[fi], &p.mir.vars);
            if chosen.is_empty() {
                break;
            }
            split += chosen.len();
            let components = new_components(&chosen, &mut p.mir.vars);
            rewrite_function(&mut p.functions[fi], &components);
        }
    }
    split
}

/// Component variables of each split variable, in component order.
type Components = HashMap<VarId, Vec<VarId>>;

/// The locals of `f` that qualify (module docs), in `locals` order.
fn qualifying(f: &Function, vars: &[VarInfo]) -> Vec<VarId> {
    let candidates: HashSet<VarId> = f
        .locals
        .iter()
        .copied()
        .filter(|v| {
            let info = &vars[v.0 as usize];
            info.origin == Origin::Local && matches!(info.ty, Type::Tuple(_))
        })
        .collect();
    let mut excluded = HashSet::new();
    for block in &f.blocks {
        for op in &block.ops {
            exclude_in_stmt(op, &candidates, &mut excluded);
        }
        if let Terminator::Call { ret: Some(v), .. } = block.term {
            excluded.insert(v);
        }
    }
    f.locals
        .iter()
        .copied()
        .filter(|v| candidates.contains(v) && !excluded.contains(v))
        .collect()
}

/// Add to `excluded` the candidates `op` uses in a way the pass cannot
/// split (module docs).
fn exclude_in_stmt(op: &Stmt, candidates: &HashSet<VarId>, excluded: &mut HashSet<VarId>) {
    let candidate = |v: &VarId| candidates.contains(v);
    // Whole variables in non-expression fields (constraint checks,
    // parameter adjoints).
    crate::mir::visit::field_reads(op, &mut |v| {
        if candidate(&v) {
            excluded.insert(v);
        }
    });
    match &op.kind {
        StmtKind::Decl { var, ty, init } if candidate(var) => {
            let ok_ty = matches!(ty, SizedType::Tuple(_));
            let ok_init = init.as_ref().is_none_or(|e| splittable_value(e, *var));
            let mut reads_self = false;
            ty.for_each_size(&mut |e| reads_self |= reads(e, *var));
            if !ok_ty || !ok_init || reads_self {
                excluded.insert(*var);
            }
        }
        StmtKind::Let { var, value } if candidate(var) && !splittable_value(value, *var) => {
            excluded.insert(*var);
        }
        StmtKind::Assign { lhs, rhs } if candidate(&lhs.var) => {
            let whole = lhs.path.is_empty();
            let into_component = matches!(lhs.path.first(), Some(LValueStep::TupleProj(_)));
            if !(whole && splittable_value(rhs, lhs.var) || into_component) {
                excluded.insert(lhs.var);
            }
        }
        StmtKind::AddAssign { lhs, .. }
            if candidate(&lhs.var)
                && !matches!(lhs.path.first(), Some(LValueStep::TupleProj(_))) =>
        {
            excluded.insert(lhs.var);
        }
        StmtKind::Unpack { lhs, .. } => {
            for l in lhs {
                if candidate(&l.var) && !matches!(l.path.first(), Some(LValueStep::TupleProj(_))) {
                    excluded.insert(l.var);
                }
            }
        }
        StmtKind::ReadParam { var, .. } => {
            excluded.insert(*var);
        }
        StmtKind::For { var, .. } | StmtKind::ForDown { var, .. } => {
            excluded.insert(*var);
        }
        _ => {}
    }
}

/// Whether a whole definition `a = e` can become one definition per
/// component: `e` is a place not rooted at `a`, or a literal not reading `a`.
fn splittable_value(e: &Expr, a: VarId) -> bool {
    match &e.kind {
        ExprKind::TupleLit(_) => !reads(e, a),
        _ => place_root(e).is_some_and(|root| root != a),
    }
}

/// The variable a place (`w`, `w.k`, `w.k.j`) is rooted at.
fn place_root(e: &Expr) -> Option<VarId> {
    match &e.kind {
        ExprKind::Var(v) => Some(*v),
        ExprKind::TupleProj(base, _) => place_root(base),
        _ => None,
    }
}

fn reads(e: &Expr, a: VarId) -> bool {
    let mut found = matches!(e.kind, ExprKind::Var(v) if v == a);
    visit::children(e, &mut |c| found |= reads(c, a));
    found
}

/// Create the component variables of `chosen` (named `a.k`).
fn new_components(chosen: &[VarId], vars: &mut Vec<VarInfo>) -> Components {
    chosen
        .iter()
        .map(|&a| {
            let info = vars[a.0 as usize].clone();
            let Type::Tuple(types) = &info.ty else {
                unreachable!("only tuples qualify")
            };
            let ids = types
                .iter()
                .enumerate()
                .map(|(k, ty)| {
                    vars.push(VarInfo {
                        name: format!("{}.{}", info.name, k + 1),
                        ty: ty.clone(),
                        origin: Origin::Local,
                        span: info.span,
                    });
                    VarId(vars.len() as u32 - 1)
                })
                .collect();
            (a, ids)
        })
        .collect()
}

fn rewrite_function(f: &mut Function, components: &Components) {
    f.locals = f
        .locals
        .iter()
        .flat_map(|v| components.get(v).cloned().unwrap_or_else(|| vec![*v]))
        .collect();
    for block in &mut f.blocks {
        let ops = std::mem::take(&mut block.ops);
        for op in ops {
            for mut s in split_definition(op, components) {
                rewrite_stmt(&mut s, components);
                block.ops.push(s);
            }
        }
        match &mut block.term {
            Terminator::Branch { cond, .. } => rewrite_expr(cond, components),
            Terminator::Call { args, .. } => {
                args.iter_mut().for_each(|e| rewrite_expr(e, components))
            }
            Terminator::Return(Some(e)) => rewrite_expr(e, components),
            Terminator::Jump(_) | Terminator::Return(None) => {}
        }
    }
}

/// A whole definition of a split variable as one definition per component
/// (its value's operands not yet rewritten); any other statement as is.
fn split_definition(op: Stmt, components: &Components) -> Vec<Stmt> {
    let span = op.span;
    let per_component = |var: VarId, make: &mut dyn FnMut(usize, VarId) -> StmtKind| {
        components[&var]
            .iter()
            .enumerate()
            .map(|(k, &c)| Stmt {
                kind: make(k, c),
                span,
            })
            .collect::<Vec<_>>()
    };
    match op.kind {
        StmtKind::Decl { var, ty, init } if components.contains_key(&var) => {
            let SizedType::Tuple(types) = ty else {
                unreachable!("checked by `qualifying`")
            };
            per_component(var, &mut |k, c| StmtKind::Decl {
                var: c,
                ty: types[k].clone(),
                init: init.as_ref().map(|e| component_of(e, k)),
            })
        }
        StmtKind::Let { var, value } if components.contains_key(&var) => {
            per_component(var, &mut |k, c| StmtKind::Let {
                var: c,
                value: component_of(&value, k),
            })
        }
        StmtKind::Assign { lhs, rhs }
            if lhs.path.is_empty() && components.contains_key(&lhs.var) =>
        {
            per_component(lhs.var, &mut |k, c| StmtKind::Assign {
                lhs: LValue {
                    var: c,
                    path: Vec::new(),
                },
                rhs: component_of(&rhs, k),
            })
        }
        kind => vec![Stmt { kind, span }],
    }
}

/// Component `k` (0-based) of a splittable value (a place or a literal).
fn component_of(e: &Expr, k: usize) -> Expr {
    match &e.kind {
        ExprKind::TupleLit(items) => items[k].clone(),
        _ => {
            let Type::Tuple(types) = &e.ty else {
                unreachable!("a tuple place")
            };
            Expr {
                kind: ExprKind::TupleProj(Box::new(e.clone()), k + 1),
                ty: types[k].clone(),
                ad: e.ad,
                span: e.span,
            }
        }
    }
}

/// Replace the split variables' projections and whole reads in `s`
/// (expressions, declared sizes, assigned places).
fn rewrite_stmt(s: &mut Stmt, components: &Components) {
    match &mut s.kind {
        StmtKind::Decl { ty, .. } => ty.for_each_size_mut(&mut |e| rewrite_expr(e, components)),
        StmtKind::Assign { lhs, .. } | StmtKind::AddAssign { lhs, .. } => {
            rewrite_place(lhs, components)
        }
        StmtKind::Unpack { lhs, .. } => lhs.iter_mut().for_each(|l| rewrite_place(l, components)),
        _ => {}
    }
    visit::for_each_root_expr(std::slice::from_mut(s), &mut |e| {
        rewrite_expr(e, components)
    });
}

fn rewrite_place(lv: &mut LValue, components: &Components) {
    if let (Some(comps), Some(LValueStep::TupleProj(k))) =
        (components.get(&lv.var), lv.path.first())
    {
        lv.var = comps[k - 1];
        lv.path.remove(0);
    }
}

fn rewrite_expr(e: &mut Expr, components: &Components) {
    if let ExprKind::TupleProj(base, k) = &e.kind
        && let ExprKind::Var(v) = base.kind
        && let Some(comps) = components.get(&v)
    {
        e.kind = ExprKind::Var(comps[k - 1]);
        return;
    }
    if let ExprKind::Var(v) = e.kind
        && let Some(comps) = components.get(&v)
    {
        let Type::Tuple(types) = &e.ty else {
            unreachable!("a split variable is a tuple")
        };
        let items = comps
            .iter()
            .zip(types)
            .map(|(&c, ty)| Expr {
                kind: ExprKind::Var(c),
                ty: ty.clone(),
                ad: e.ad,
                span: e.span,
            })
            .collect();
        e.kind = ExprKind::TupleLit(items);
        return;
    }
    visit::children_mut(e, &mut |c| rewrite_expr(c, components));
}

#[cfg(test)]
#[path = "sra_tests.rs"]
mod tests;
