//! Uniform adjoints: the adjoint of a `sum` (and of a vector added to the
//! target) is its scalar adjoint broadcast to every element, `let a =
//! zeros_like(x); a += 1.0;`, then scaled elementwise (`let b = a .*
//! -0.5`) until it meets a vector of `x`'s shape (`b .* (2.0 .* x)`).
//! There the literal itself can stand for the uniform vector
//! (`-0.5 .* (2.0 .* x)`), and the uniform vectors become dead.
//!
//! # Invariants
//! - Shapes are known to be equal only through the forward sweep's
//!   top-level statements, which all ran once, successfully, before the
//!   reverse sweep: a variable defined there once (or a parameter, or
//!   data) by an elementwise operation has the shape of its container
//!   operands (they had to agree for the operation to succeed).
//! - A uniform variable is, at the top level of the reverse sweep, `let a
//!   = zeros_like(x); a += c;` with `c` a literal and `x` of known shape
//!   (its value: `0 + c` in every element, `a` written nowhere else), or
//!   `let b = op(a, c…)`, an elementwise operation on uniform variables of
//!   one shape and literals (its value computed with the interpreter's f64
//!   operations).
//! - A read of a uniform variable is replaced by its value only as an
//!   operand of an elementwise binary operation whose other operand has
//!   the same known shape: broadcasting the literal gives the very same
//!   elements.

use std::collections::HashMap;

use crate::mir::visit::{children_mut, deep_exprs_mut, mentions, write_counts};
use crate::mir::{Expr, ExprKind, Origin, Prim, Program, Stmt, StmtKind, VarId};
use crate::types::{AdLevel, Type};

/// Replace reads of uniform adjoints by their literal where that keeps
/// every value. Returns whether anything changed.
pub(crate) fn run(program: &Program, body: &mut [Stmt], reverse_start: usize) -> bool {
    let writes = write_counts(body, program.vars.len());
    let mut shapes = Shapes::new(program, &writes);
    for s in &body[..reverse_start.min(body.len())] {
        shapes.learn(s);
    }
    let mut uniform: HashMap<VarId, (f64, VarId)> = HashMap::new();
    let mut changed = false;
    for i in reverse_start..body.len() {
        if let Some((a, value, class)) = uniform_def(program, &shapes, &uniform, body, i, &writes) {
            uniform.insert(a, (value, class));
            continue;
        }
        if uniform.is_empty() {
            continue;
        }
        deep_exprs_mut(&mut body[i], &mut |e| {
            replace(&shapes, &uniform, e, &mut changed);
        });
    }
    changed
}

/// Which variables are known to have the same shape (union-find over
/// variables written once).
struct Shapes<'p> {
    program: &'p Program,
    writes: &'p [u32],
    parent: Vec<u32>,
}

impl<'p> Shapes<'p> {
    fn new(program: &'p Program, writes: &'p [u32]) -> Shapes<'p> {
        Shapes {
            program,
            writes,
            parent: (0..program.vars.len() as u32).collect(),
        }
    }

    fn find(&mut self, v: VarId) -> VarId {
        let mut i = v.0;
        while self.parent[i as usize] != i {
            let up = self.parent[self.parent[i as usize] as usize];
            self.parent[i as usize] = up;
            i = up;
        }
        VarId(i)
    }

    /// A variable with one value for the whole evaluation.
    fn fixed(&self, v: VarId) -> bool {
        let info = &self.program.vars[v.0 as usize];
        info.ty.is_real_typed()
            && !info.ty.is_scalar()
            && (self.writes[v.0 as usize] == 1
                || (matches!(info.origin, Origin::Data | Origin::TransformedData)
                    && self.writes[v.0 as usize] == 0))
    }

    /// Record what a forward top-level statement says about shapes.
    fn learn(&mut self, s: &Stmt) {
        let (var, value) = match &s.kind {
            StmtKind::Let { var, value } => (*var, value),
            StmtKind::Decl {
                var,
                init: Some(value),
                ..
            } => (*var, value),
            _ => return,
        };
        if !self.fixed(var) {
            return;
        }
        let mut same = Vec::new();
        self.shape_vars(value, &mut same);
        for u in same {
            let (a, b) = (self.find(var), self.find(u));
            self.parent[a.0 as usize] = b.0;
        }
    }

    /// Fixed variables `e` has the shape of (it is built from them by
    /// elementwise operations).
    fn shape_vars(&self, e: &Expr, out: &mut Vec<VarId>) {
        match &e.kind {
            ExprKind::Var(v) if self.fixed(*v) => out.push(*v),
            ExprKind::ZerosLike(inner) => self.shape_vars(inner, out),
            ExprKind::Prim(p, args) if elementwise(*p, args) => {
                for a in args.iter().filter(|a| !a.ty.is_scalar()) {
                    self.shape_vars(a, out);
                }
            }
            ExprKind::Partial { args, .. } => {
                for a in args.iter().filter(|a| !a.ty.is_scalar()) {
                    self.shape_vars(a, out);
                }
            }
            _ => {}
        }
    }
}

/// An elementwise operation: the result has the shape of its container
/// operands (which must agree), scalars broadcast.
fn elementwise(p: Prim, args: &[Expr]) -> bool {
    use Prim::*;
    let containers = args.iter().filter(|a| !a.ty.is_scalar()).count();
    match p {
        Add | Sub | EltMul | EltDiv | Pow => args.len() == 2,
        Mul | Div => args.len() == 2 && containers <= 1,
        Neg | Exp | Log | Log1p | Log1m | Sqrt | Square | Inv | Sin | Cos | InvLogit
        | LogInvLogit | Log1mInvLogit | Log1pExp | Expm1 | Abs => args.len() == 1,
        _ => false,
    }
}

/// If `body[i]` defines a uniform variable: (it, its value, its shape).
fn uniform_def(
    program: &Program,
    shapes: &Shapes,
    uniform: &HashMap<VarId, (f64, VarId)>,
    body: &[Stmt],
    i: usize,
    writes: &[u32],
) -> Option<(VarId, f64, VarId)> {
    let StmtKind::Let { var, value } = &body[i].kind else {
        return None;
    };
    let ty = &program.vars[var.0 as usize].ty;
    if ty.is_scalar() || !ty.is_real_typed() {
        return None;
    }
    match &value.kind {
        ExprKind::ZerosLike(x) if writes[var.0 as usize] == 2 => {
            let mut shapes_of_x = Vec::new();
            shapes.shape_vars(x, &mut shapes_of_x);
            let &first = shapes_of_x.first()?;
            let j = (i + 1..body.len()).find(|&j| mentions(&body[j], *var))?;
            let StmtKind::AddAssign { lhs, rhs } = &body[j].kind else {
                return None;
            };
            let ExprKind::Real(c) = rhs.kind else {
                return None;
            };
            if lhs.var != *var || !lhs.path.is_empty() {
                return None;
            }
            Some((*var, 0.0 + c, root(shapes, first)))
        }
        ExprKind::Prim(p, args) if writes[var.0 as usize] == 1 && elementwise(*p, args) => {
            let mut class = None;
            let mut values = Vec::new();
            for a in args {
                match a.kind {
                    ExprKind::Var(u) => {
                        let &(v, k) = uniform.get(&u)?;
                        if class.is_some_and(|c| c != k) {
                            return None;
                        }
                        class = Some(k);
                        values.push(v);
                    }
                    ExprKind::Real(x) if a.ty == Type::Real => values.push(x),
                    _ => return None,
                }
            }
            let value = fold(*p, &values)?;
            Some((*var, value, class?))
        }
        _ => None,
    }
}

/// The class root without path compression (`shapes` is shared).
fn root(shapes: &Shapes, v: VarId) -> VarId {
    let mut i = v.0;
    while shapes.parent[i as usize] != i {
        i = shapes.parent[i as usize];
    }
    VarId(i)
}

/// `p` on real scalars, with the interpreter's operations.
fn fold(p: Prim, xs: &[f64]) -> Option<f64> {
    use Prim::*;
    Some(match (p, xs) {
        (Neg, [x]) => -x,
        (Add, [x, y]) => x + y,
        (Sub, [x, y]) => x - y,
        (Mul | EltMul, [x, y]) => x * y,
        (Div | EltDiv, [x, y]) => x / y,
        _ => return None,
    })
}

/// Replace uniform operands of elementwise binary operations whose other
/// operand has their shape.
fn replace(
    shapes: &Shapes,
    uniform: &HashMap<VarId, (f64, VarId)>,
    e: &mut Expr,
    changed: &mut bool,
) {
    children_mut(e, &mut |c| replace(shapes, uniform, c, changed));
    let ExprKind::Prim(p, args) = &mut e.kind else {
        return;
    };
    if !elementwise(*p, args) || args.len() != 2 {
        return;
    }
    for k in 0..2 {
        let ExprKind::Var(u) = args[k].kind else {
            continue;
        };
        let Some(&(value, class)) = uniform.get(&u) else {
            continue;
        };
        let other = &args[1 - k];
        if other.ty.is_scalar() {
            continue;
        }
        let mut vars = Vec::new();
        shapes.shape_vars(other, &mut vars);
        if vars.first().map(|&v| root(shapes, v)) != Some(class) {
            continue;
        }
        let span = args[k].span;
        args[k] = Expr {
            kind: ExprKind::Real(value),
            ty: Type::Real,
            ad: AdLevel::DataOnly,
            span,
        };
        *changed = true;
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn the_adjoint_of_a_sum_becomes_its_scalar() {
        let mut t = TestProgram::new();
        let (v, sq, s, sq_adj, s_adj, v_adj) = (
            t.param_vector("v"),
            t.vector("sq"),
            t.vector("s"),
            t.vector("sq_adj"),
            t.vector("s_adj"),
            t.vector("v_adj"),
        );
        let body = vec![
            t.read_param(v),
            t.let_(sq, t.log(t.var(v))),
            t.let_(s, t.mul(t.lit(-0.5), t.var(sq))),
            t.let_(t.target_adj, t.lit(1.0)),
            t.let_(s_adj, t.zeros(s)),
            t.add_assign(s_adj, t.lit(1.0)),
            t.let_(sq_adj, t.mul(t.var(s_adj), t.lit(-0.5))),
            t.let_(v_adj, t.elt_mul(t.var(sq_adj), t.log(t.var(v)))),
            t.param_adjoint(v, v_adj),
        ];
        let after = t.run(body, |g| {
            super::run(&g.program, &mut g.body, 3);
        });
        assert_eq!(
            after,
            [
                "v = read_param(0);",
                "let sq = log(v);",
                "let s = multiply(-0.5, sq);",
                "let target_adj = 1.0;",
                "let s_adj = zeros_like(s);",
                "s_adj += 1.0;",
                "let sq_adj = multiply(s_adj, -0.5);",
                "let v_adj = elt_multiply(-0.5, log(v));",
                "param_adjoint(0, v, v_adj, target_adj) -> ();",
            ]
        );
    }
}
