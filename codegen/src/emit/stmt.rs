//! Statements: assignments (whole variables and indexed places), `target
//! +=`, declarations, stack pushes and pops, `reject`.

use language::mir::{Expr, ExprKind, Index, LValue, LValueStep, Prim, Printable, StmtKind, VarId};

use super::super::layout::{JACOBIAN_SLOT, TARGET_SLOT};
use super::super::shape::{Inner, Shape};
use super::super::typing::{Unsupported, is_check, is_reduction};
use super::{Dest, Emitter, FailKind, for_each};

/// Rows of a matrix product computed together in the generated loops
/// ([`Emitter::direct_into`]): independent sums the core (or a SIMD lane
/// per row) overlaps.
const MATMUL_ROWS: usize = 8;

impl Emitter<'_> {
    pub(super) fn stmt(&mut self, stmt: &language::mir::Stmt) -> Result<(), Unsupported> {
        match &stmt.kind {
            StmtKind::Let { var, value } => self.assign_whole(*var, value, "="),
            StmtKind::Decl {
                var,
                init: Some(value),
                ..
            } => self.assign_whole(*var, value, "="),
            StmtKind::Decl {
                var, init: None, ..
            } => {
                let (base, shape) = self.state_place(*var)?;
                // Stan's uninitialised values: NaN, or the smallest int.
                let fill = if shape.int {
                    "-2147483648.0"
                } else {
                    "BAT_NAN"
                };
                let e = self.fresh("e");
                self.lines.push(for_each(
                    &e,
                    shape.len(),
                    &format!("S({base} + {e}) = {fill};"),
                ));
                Ok(())
            }
            StmtKind::Assign { lhs, rhs } if lhs.path.is_empty() => {
                self.assign_whole(lhs.var, rhs, "=")
            }
            StmtKind::AddAssign { lhs, rhs } if lhs.path.is_empty() => {
                self.assign_whole(lhs.var, rhs, "+=")
            }
            StmtKind::Assign { lhs, rhs } => self.assign_indexed(lhs, rhs, "="),
            StmtKind::AddAssign { lhs, rhs } => self.assign_indexed(lhs, rhs, "+="),
            // `(a, b, ...) = tuple`: component by component from a
            // tuple variable (no component aliases the tuple).
            StmtKind::Unpack { lhs, rhs } => {
                if !matches!(rhs.kind, language::mir::ExprKind::Var(_)) {
                    return Err("tuple unpacking of an expression".to_string());
                }
                let components = self.shape(rhs)?.tuple.len();
                if components != lhs.len() {
                    return Err("tuple unpacking of a different arity".to_string());
                }
                // All alive through the statement (values computed before
                // it are found by their expression's address).
                let projections: Vec<language::mir::Expr> = (0..lhs.len())
                    .map(|k| language::mir::Expr {
                        kind: language::mir::ExprKind::TupleProj(Box::new(rhs.clone()), k + 1),
                        ty: match &rhs.ty {
                            language::types::Type::Tuple(ts) => ts[k].clone(),
                            other => other.clone(),
                        },
                        ad: rhs.ad,
                        span: rhs.span,
                    })
                    .collect();
                for (l, component) in lhs.iter().zip(&projections) {
                    if l.path.is_empty() {
                        self.assign_whole(l.var, component, "=")?;
                    } else {
                        self.assign_indexed(l, component, "=")?;
                    }
                }
                Ok(())
            }
            StmtKind::TargetAdd(e) => {
                let total = self.total(e)?;
                self.lines.push(format!("S({TARGET_SLOT}) += {total};"));
                Ok(())
            }
            StmtKind::JacobianAdd(e) => {
                // Evaluated only when the Jacobian is on, as the interpreter.
                let before = self.lines.len();
                let total = self.total(e)?;
                let body: Vec<String> = self.lines.drain(before..).collect();
                self.lines.push(format!(
                    "if (S({JACOBIAN_SLOT}) != 0.0) {{\n{}\nS({TARGET_SLOT}) += {total};\n}}",
                    body.join("\n")
                ));
                Ok(())
            }
            StmtKind::Push { stack, value } => {
                let slots = self
                    .layout
                    .stack(*stack)
                    .cloned()
                    .ok_or_else(|| format!("stack {} has no place", stack.0))?;
                let n = slots.elem.len();
                if self.shape(value)?.len() != n {
                    return Err(format!("a push of a different size onto stack {}", stack.0));
                }
                let d = self.fresh("depth");
                let fail = self.fail(
                    FailKind::StackOverflow,
                    format!("AD stack {} full ({} values)", stack.0, slots.capacity),
                );
                self.lines.push(format!(
                    "const int {d} = (int)S({}); if ({d} >= {}) {fail}",
                    slots.depth, slots.capacity
                ));
                let e = self.fresh("e");
                let v = self.elem(value, &e)?;
                self.lines.push(for_each(
                    &e,
                    n,
                    &format!("S({} + {d} * {n} + {e}) = {v};", slots.base),
                ));
                self.lines.push(format!("S({}) = {d} + 1;", slots.depth));
                Ok(())
            }
            // A print in the log density: its line is not shown (`bat run`
            // says so, W0201) and arguments that cannot fail change
            // nothing, so no code; one that may fail (an index, an argument
            // check) rejects the evaluation on the CPU, so it is refused.
            StmtKind::Print(items) => {
                let quiet = items.iter().all(|i| match i {
                    Printable::Str(_) => true,
                    Printable::Expr(e) => language::simplify::cannot_fail(e),
                });
                if !quiet {
                    return Err("print of a value that may fail to evaluate".to_string());
                }
                self.lines
                    .push("// print: the log density's lines are not shown".to_string());
                Ok(())
            }
            StmtKind::Reject(items) | StmtKind::FatalError(items) => {
                let kind = if matches!(stmt.kind, StmtKind::Reject(_)) {
                    FailKind::Rejection
                } else {
                    FailKind::Fatal
                };
                let text: String = items
                    .iter()
                    .map(|i| match i {
                        Printable::Str(s) => s.clone(),
                        Printable::Expr(_) => "…".to_string(),
                    })
                    .collect();
                // Scalar values are stored in slots of their own for the
                // host to write the message as the interpreter does.
                let mut parts = Vec::new();
                let mut stores = Vec::new();
                for item in items {
                    match item {
                        Printable::Str(s) => parts.push(super::MessagePart::Text(s.clone())),
                        Printable::Expr(e) => {
                            let shape = self.shape(e)?;
                            if shape.is_scalar() && shape.tuple.is_empty() {
                                let v = self.elem(e, "0")?;
                                let slot = self.layout.scratch(1);
                                stores.push(format!("S({slot}) = {v};"));
                                parts.push(super::MessagePart::Value {
                                    slot,
                                    int: shape.int,
                                });
                            } else {
                                parts.push(super::MessagePart::Text("…".to_string()));
                            }
                        }
                    }
                }
                let fail = self.fail_with(kind, text, parts);
                self.lines.extend(stores);
                self.lines.push(fail);
                Ok(())
            }
            StmtKind::ReadParam {
                param,
                var,
                transform,
            } => self.read_param(*param, *var, transform),
            StmtKind::ParamAdjoint {
                param,
                var,
                var_adj,
                lp_adj,
                transform,
                arg_adjs,
            } => self.param_adjoint(*param, *var, *var_adj, *lp_adj, transform, arg_adjs),
            StmtKind::CheckConstraint { var, transform } => self.check_constraint(*var, transform),
            other => Err(format!("statement {}", statement_name(other))),
        }
    }

    /// `var op= rhs` for a whole variable.
    pub(crate) fn assign_whole(
        &mut self,
        var: VarId,
        rhs: &Expr,
        op: &str,
    ) -> Result<(), Unsupported> {
        // The value's shape first: why it is unknown is the real reason.
        let rhs_shape = self.shape(rhs)?;
        let (base, shape) = self.state_place(var)?;
        let len = shape.len();
        // Assignment replaces the value (shape included): a scalar is not
        // broadcast into a container. `+=` broadcasts a scalar.
        if rhs_shape.len() != len && (op == "=" || !rhs_shape.is_scalar()) {
            return Err(format!(
                "assigning {rhs_shape} to `{}` of type {shape}",
                self.var_name(var)
            ));
        }
        let dest = Dest::State {
            base,
            maps: Vec::new(),
        };
        self.compute_into(&dest, len, rhs, op, Some((var, true)))
    }

    /// `x[indexes]... op= rhs`.
    fn assign_indexed(&mut self, lhs: &LValue, rhs: &Expr, op: &str) -> Result<(), Unsupported> {
        let (base, mut shape) = self.state_place(lhs.var)?;
        let mut maps = Vec::new();
        for step in &lhs.path {
            let LValueStep::Index(indexes) = step else {
                return Err("assignment to a tuple component".to_string());
            };
            let view = self.prepare_view(&shape, indexes)?;
            shape = view.shape.clone();
            maps.push(view);
        }
        let len = shape.len();
        let rhs_shape = self.shape(rhs)?;
        if rhs_shape.len() != len && !(op == "+=" && rhs_shape.is_scalar()) {
            return Err(format!(
                "assigning {rhs_shape} to {len} selected elements of `{}`",
                self.var_name(lhs.var)
            ));
        }
        let multi = lhs.path.iter().any(|s| {
            matches!(s, LValueStep::Index(ix) if ix.iter().any(|i| matches!(i, Index::Multi(_))))
        });
        if multi && op == "=" {
            // Repeated positions: the last write wins, as in the interpreter
            // (which assigns position by position in order) — same here.
        }
        let dest = Dest::State { base, maps };
        self.compute_into(&dest, len, rhs, op, Some((lhs.var, false)))
    }

    /// `dest op= e` over `len` elements. `target` is the variable written
    /// and whether `dest` is all of it in order (then `e` may read it at
    /// the same element); otherwise `e` is computed first when it reads it.
    pub(crate) fn compute_into(
        &mut self,
        dest: &Dest,
        len: usize,
        e: &Expr,
        op: &str,
        target: Option<(VarId, bool)>,
    ) -> Result<(), Unsupported> {
        let aliased = target.is_some_and(|(var, whole)| aliases(e, var, whole));
        if aliased {
            let m = self.materialize(e)?;
            let i = self.fresh("e");
            let to = self.dest_elem(dest, &i)?;
            let from = if self.shape(e)?.len() == 1 {
                m.at("0")
            } else {
                m.at(&i)
            };
            self.lines
                .push(for_each(&i, len, &format!("{to} {op} {from};")));
            return Ok(());
        }
        if self.direct_into(dest, len, e, op)? {
            return Ok(());
        }
        let i = self.fresh("e");
        let value = self.elem(e, &i)?;
        let to = self.dest_elem(dest, &i)?;
        if len == 1 {
            self.lines
                .push(format!("{{ const int {i} = 0; {} {op} {value}; }}", to));
        } else {
            self.lines
                .push(for_each(&i, len, &format!("{to} {op} {value};")));
        }
        Ok(())
    }

    /// Values that cannot be read one element at a time, computed straight
    /// into `dest`; false when `e` is not one of them.
    fn direct_into(
        &mut self,
        dest: &Dest,
        len: usize,
        e: &Expr,
        op: &str,
    ) -> Result<bool, Unsupported> {
        match &e.kind {
            ExprKind::Prim(Prim::Tcrossprod | Prim::Crossprod | Prim::QuadForm, _) => {
                let product = self.defining_form(e)?;
                self.direct_into(dest, len, &product, op)
            }
            ExprKind::Prim(Prim::Div, args) if super::expr::is_matrix_division(self, args)? => {
                let division = self.defining_form(e)?;
                self.direct_into(dest, len, &division, op)
            }
            ExprKind::Prim(Prim::Mul, args) if args.len() == 2 => {
                let (a, b) = (&args[0], &args[1]);
                let (sa, sb) = (self.shape(a)?, self.shape(b)?);
                if sa.is_scalar() || sb.is_scalar() {
                    return Ok(false);
                }
                // a is m×k, b is k×n (vectors as columns, row vectors as rows).
                let dims = |s: &Shape| match s.inner {
                    Inner::Vector(n) => (n, 1),
                    Inner::RowVector(n) => (1, n),
                    Inner::Matrix(r, c) => (r, c),
                    Inner::Scalar => (1, 1),
                };
                let ((m, k), (k2, n)) = (dims(&sa), dims(&sb));
                if k != k2 || m * n != len {
                    return Err(format!("multiply of {sa} by {sb}"));
                }
                self.readable(a)?;
                self.readable(b)?;
                let (i, j, p) = (self.fresh("i"), self.fresh("j"), self.fresh("p"));
                let (i0, r, x) = (self.fresh("i"), self.fresh("r"), self.fresh("x"));
                let av = self.elem(a, &format!("({p} * {m} + {i})"))?;
                let bv = self.elem(b, &format!("({j} * {k} + {p})"))?;
                let to = self.dest_elem(dest, &format!("({j} * {m} + {i})"))?;
                // The interpreter's matmul sums over p in order from 0,
                // one fused multiply-add per term — for MATMUL_ROWS rows at
                // once (one row at a time, each sum a dependent chain of k
                // additions, left the core waiting), b's element read once
                // per block of rows: the same sums. Whole blocks of rows,
                // then the last rows as one block of their own: the bounds
                // are constants, so no row needs a test (a tested row kept
                // g++ from vectorizing the block).
                let block = |first: usize, end: usize, rows: usize| {
                    let row = |body: &str| {
                        format!(
                            "for (int {r} = 0; {r} < {rows}; ++{r}) {{ const int {i} = {i0} + {r}; {body} }}"
                        )
                    };
                    format!(
                        "#pragma unroll 1\nfor (int {i0} = {first}; {i0} < {end}; {i0} += {rows}) {{\n    double acc[{rows}];\n    for (int {r} = 0; {r} < {rows}; ++{r}) acc[{r}] = 0.0;\n    #pragma unroll 1\n    for (int {p} = 0; {p} < {k}; ++{p}) {{\n        const double {x} = {bv};\n        {}\n    }}\n    {}\n}}",
                        row(&format!("acc[{r}] = fma({av}, {x}, acc[{r}]);")),
                        row(&format!("{to} {op} acc[{r}];")),
                    )
                };
                let whole = m / MATMUL_ROWS * MATMUL_ROWS;
                let mut blocks = Vec::new();
                if whole > 0 {
                    blocks.push(block(0, whole, MATMUL_ROWS));
                }
                if whole < m {
                    blocks.push(block(whole, m, m - whole));
                }
                self.lines.push(format!(
                    "#pragma unroll 1\nfor (int {j} = 0; {j} < {n}; ++{j}) {{\n{}\n}}",
                    blocks.join("\n")
                ));
                Ok(true)
            }
            ExprKind::Prim(p, args) if super::is_dense(*p, args.len()) => {
                if self.dense_into(dest, *p, args, op)? {
                    return Ok(true);
                }
                // Computed whole, then copied through the index maps.
                let m = self.materialize(e)?;
                let i = self.fresh("e");
                let to = self.dest_elem(dest, &i)?;
                let from = m.at(&i);
                self.lines
                    .push(for_each(&i, len, &format!("{to} {op} {from};")));
                Ok(true)
            }
            ExprKind::Ode(call) => {
                self.ode_into(dest, len, call, op)?;
                Ok(true)
            }
            ExprKind::Pop(stack) => {
                let slots = self
                    .layout
                    .stack(*stack)
                    .cloned()
                    .ok_or_else(|| format!("stack {} has no place", stack.0))?;
                let n = slots.elem.len();
                if n != len {
                    return Err(format!("a pop of {n} values into {len}"));
                }
                let d = self.fresh("depth");
                let fail = self.fail(
                    FailKind::Fatal,
                    format!("popped the empty AD stack {}", stack.0),
                );
                self.lines.push(format!(
                    "const int {d} = (int)S({}) - 1; if ({d} < 0) {fail}",
                    slots.depth
                ));
                let i = self.fresh("e");
                let to = self.dest_elem(dest, &i)?;
                self.lines.push(for_each(
                    &i,
                    n,
                    &format!("{to} {op} S({} + {d} * {n} + {i});", slots.base),
                ));
                self.lines.push(format!("S({}) = {d};", slots.depth));
                Ok(true)
            }
            ExprKind::RowVectorLit(items) if matches!(self.shape(e)?.inner, Inner::Matrix(..)) => {
                // Rows of a matrix, stored column-major: element j of row
                // i at j·r + i.
                let r = items.len();
                for (row, item) in items.iter().enumerate() {
                    let c = self.shape(item)?.len();
                    if r * c != len {
                        return Err("a matrix literal of the wrong size".to_string());
                    }
                    let j = self.fresh("e");
                    let v = self.elem(item, &j)?;
                    let to = self.dest_elem(dest, &format!("({row} + {j} * {r})"))?;
                    self.lines.push(for_each(&j, c, &format!("{to} {op} {v};")));
                }
                Ok(true)
            }
            ExprKind::ArrayLit(items)
            | ExprKind::RowVectorLit(items)
            | ExprKind::TupleLit(items) => {
                let mut at = 0;
                for item in items {
                    let n = self.shape(item)?.len();
                    let i = self.fresh("e");
                    let v = self.elem(item, &i)?;
                    let to = self.dest_elem(dest, &format!("({at} + {i})"))?;
                    self.lines.push(for_each(&i, n, &format!("{to} {op} {v};")));
                    at += n;
                }
                if at != len {
                    return Err("a literal of the wrong size".to_string());
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Make `e` readable at any element: materialize it unless it is.
    fn readable(&mut self, e: &Expr) -> Result<(), Unsupported> {
        if !is_random_access(self, e)? {
            self.materialize(e)?;
        }
        Ok(())
    }
}

/// Whether [`Emitter::elem`] reads `e` at any element without computing
/// a whole intermediate.
fn is_random_access(em: &Emitter, e: &Expr) -> Result<bool, Unsupported> {
    Ok(match &e.kind {
        ExprKind::Pop(_)
        | ExprKind::Ode(_)
        | ExprKind::ArrayLit(_)
        | ExprKind::RowVectorLit(_)
        | ExprKind::TupleLit(_) => false,
        ExprKind::Prim(Prim::Mul, args) if args.len() == 2 => {
            let scalar = |a: &Expr| em.shape(a).map(|s| s.is_scalar());
            (scalar(&args[0])? || scalar(&args[1])?)
                && args
                    .iter()
                    .all(|a| is_random_access(em, a).unwrap_or(false))
        }
        ExprKind::Prim(Prim::Tcrossprod | Prim::Crossprod | Prim::QuadForm, _) => false,
        ExprKind::Prim(Prim::Div, args) if super::expr::is_matrix_division(em, args)? => false,
        ExprKind::Prim(p, _) if is_check(*p) || is_reduction(*p) => true,
        ExprKind::Prim(p, args) if super::is_dense(*p, args.len()) => false,
        ExprKind::Prim(_, args) | ExprKind::Partial { args, .. } => args
            .iter()
            .all(|a| is_random_access(em, a).unwrap_or(false)),
        ExprKind::Index(base, _) => is_random_access(em, base)?,
        ExprKind::Cond(c, a, b) => {
            is_random_access(em, c)? && is_random_access(em, a)? && is_random_access(em, b)?
        }
        _ => true,
    })
}

/// Whether computing `e` element by element into `var` could read an
/// element of `var` already overwritten: any read of `var` other than at
/// the same element of a whole-variable destination (reductions and
/// checks read before the statement's loop).
fn aliases(e: &Expr, var: VarId, whole: bool) -> bool {
    match &e.kind {
        ExprKind::Var(v) => *v == var && !whole,
        ExprKind::ZerosLike(_) => false,
        ExprKind::Prim(p, _) if is_check(*p) || is_reduction(*p) => false,
        ExprKind::Prim(p, args) if super::super::scalar::scalar_fn(*p, args.len()).is_some() => {
            args.iter().any(|a| aliases(a, var, whole))
        }
        ExprKind::Partial { args, .. } => args.iter().any(|a| aliases(a, var, whole)),
        ExprKind::Cond(c, a, b) => [c, a, b].iter().any(|x| aliases(x, var, whole)),
        _ => mentions(e, var),
    }
}

/// Whether `e` reads `var` anywhere.
fn mentions(e: &Expr, var: VarId) -> bool {
    format!("{e:?}").contains(&format!("Var(VarId({}))", var.0))
}

fn statement_name(kind: &StmtKind) -> &'static str {
    match kind {
        StmtKind::Decl { .. } => "declaration",
        StmtKind::Assign { .. } => "assignment",
        StmtKind::Unpack { .. } => "tuple unpacking",
        StmtKind::TargetAdd(_) => "target +=",
        StmtKind::JacobianAdd(_) => "jacobian +=",
        StmtKind::Let { .. } => "let",
        StmtKind::CheckConstraint { .. } => "constraint check",
        StmtKind::If { .. } => "if",
        StmtKind::While { .. } => "while",
        StmtKind::For { .. } => "for",
        StmtKind::Block(_) => "block",
        StmtKind::Break => "break",
        StmtKind::Continue => "continue",
        StmtKind::Return(_) => "return",
        StmtKind::Effect(_) => "function call",
        StmtKind::Print(_) => "print",
        StmtKind::Reject(_) => "reject",
        StmtKind::FatalError(_) => "fatal_error",
        StmtKind::AddAssign { .. } => "+=",
        StmtKind::Push { .. } => "stack push",
        StmtKind::ForDown { .. } => "reverse for",
        StmtKind::ReadParam { .. } => "read_param (parameter transform)",
        StmtKind::ParamAdjoint { .. } => "param_adjoint (parameter transform reverse)",
    }
}
