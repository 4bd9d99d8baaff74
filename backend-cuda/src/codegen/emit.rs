//! CUDA C for one straight-line run of MIR statements: each statement
//! becomes a loop over its result's elements (or one assignment for a
//! scalar) reading operands at the same element, with scalars broadcast.
//! Reductions and argument checks are hoisted before the statement's loop,
//! so a statement may read the variable it overwrites.

use language::mir::{Expr, ExprKind, Index, LValue, LValueStep, Prim, Program, Stmt, StmtKind};
use language::types::Type;

use super::layout::{ERROR_STATUS, Layout, Place, REJECTED_STATUS, STATUS_SLOT, TARGET_SLOT};
use super::scalar::{c_name, scalar_fn};

/// Why a statement has no kernel code (the block is reported, not generated).
pub type Unsupported = String;

pub struct Emitter<'a> {
    pub program: &'a Program,
    pub layout: &'a Layout,
    /// Lines emitted so far (the kernel body).
    pub lines: Vec<String>,
    fresh: usize,
    /// Inside a branch of a conditional expression, where nothing that
    /// can fail may be hoisted (the interpreter may not evaluate it).
    in_branch: usize,
}

impl<'a> Emitter<'a> {
    pub fn new(program: &'a Program, layout: &'a Layout) -> Emitter<'a> {
        Emitter {
            program,
            layout,
            lines: Vec::new(),
            fresh: 0,
            in_branch: 0,
        }
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn var_name(&self, var: language::mir::VarId) -> &str {
        &self.program.vars[var.0 as usize].name
    }

    pub fn statement(&mut self, stmt: &Stmt) -> Result<(), Unsupported> {
        match &stmt.kind {
            StmtKind::Let { var, value } => self.store(*var, value, "="),
            StmtKind::Decl {
                var,
                init: Some(value),
                ..
            } => self.store(*var, value, "="),
            StmtKind::Decl {
                var, init: None, ..
            } => {
                let (base, len) = self.state_place(*var)?;
                self.lines.push(format!(
                    "#pragma unroll 1\nfor (int e = 0; e < {len}; ++e) S({base} + e) = BAT_NAN;"
                ));
                Ok(())
            }
            StmtKind::Assign { lhs, rhs } if !lhs.path.is_empty() => {
                self.store_element(lhs, rhs, "=")
            }
            StmtKind::AddAssign { lhs, rhs } if !lhs.path.is_empty() => {
                self.store_element(lhs, rhs, "+=")
            }
            StmtKind::Assign { lhs, rhs } => self.store(whole_var(lhs)?, rhs, "="),
            StmtKind::AddAssign { lhs, rhs } => self.store(whole_var(lhs)?, rhs, "+="),
            StmtKind::TargetAdd(e) => {
                let total = self.total(e)?;
                self.lines.push(format!("S({TARGET_SLOT}) += {total};"));
                Ok(())
            }
            other => Err(format!("statement {}", statement_name(other))),
        }
    }

    fn state_place(&self, var: language::mir::VarId) -> Result<(usize, usize), Unsupported> {
        match self.layout.place(var) {
            Some(Place::State { base, len }) => Ok((base, len)),
            Some(Place::Data { .. }) => Err(format!("assignment to data `{}`", self.var_name(var))),
            None => Err(format!(
                "`{}` has no value of known size",
                self.var_name(var)
            )),
        }
    }

    /// `var op= rhs` elementwise.
    fn store(
        &mut self,
        var: language::mir::VarId,
        rhs: &Expr,
        op: &str,
    ) -> Result<(), Unsupported> {
        let (base, len) = self.state_place(var)?;
        let rhs_len = self.len(rhs)?;
        // Assignment replaces the value (shape included): a scalar is not
        // broadcast into a container, so the sizes must agree. `+=`
        // broadcasts a scalar.
        if rhs_len != len && (rhs_len != 1 || op == "=") {
            return Err(format!(
                "assigning {rhs_len} values to `{}` of {len}",
                self.var_name(var)
            ));
        }
        if len == 1 {
            let value = self.elem(rhs, "0")?;
            self.lines.push(format!("S({base}) {op} {value};"));
        } else {
            let e = self.fresh("e");
            let value = self.elem(rhs, &e)?;
            self.lines.push(format!(
                "#pragma unroll 1\nfor (int {e} = 0; {e} < {len}; ++{e}) S({base} + {e}) {op} {value};"
            ));
        }
        Ok(())
    }

    /// `x[i] op= rhs` for one element of a one-dimensional `x`.
    fn store_element(&mut self, lhs: &LValue, rhs: &Expr, op: &str) -> Result<(), Unsupported> {
        let [LValueStep::Index(indexes)] = lhs.path.as_slice() else {
            return Err("assignment to a tuple component".to_string());
        };
        let (base, len) = self.state_place(lhs.var)?;
        if !is_one_dimensional(&self.program.vars[lhs.var.0 as usize].ty) {
            return Err("assignment into a multi-dimensional variable".to_string());
        }
        let [Index::Single(i)] = indexes.as_slice() else {
            return Err("assignment to a slice or multi-index".to_string());
        };
        if self.len(rhs)? != 1 {
            return Err("assignment of a container to an element".to_string());
        }
        let k = self.checked_index(i, len)?;
        let value = self.elem(rhs, "0")?;
        self.lines
            .push(format!("S({base} + {k} - 1) {op} {value};"));
        Ok(())
    }

    /// A one-based index into `n` elements, checked (an out-of-range index
    /// is an error of the lane, as in the interpreter); returns the C name
    /// of the index.
    fn checked_index(&mut self, i: &Expr, n: usize) -> Result<String, Unsupported> {
        if self.in_branch > 0 {
            return Err("indexing inside a conditional expression".to_string());
        }
        let value = self.int_expr(i)?;
        let k = self.fresh("k");
        self.lines.push(format!(
            "const long long {k} = {value}; if ({k} < 1 || {k} > {n}) {{ S({STATUS_SLOT}) = {ERROR_STATUS}; return; }}"
        ));
        Ok(k)
    }

    /// An integer-valued expression as a C `long long`.
    fn int_expr(&mut self, e: &Expr) -> Result<String, Unsupported> {
        if e.ty != Type::Int {
            return Err("a non-integer index".to_string());
        }
        match &e.kind {
            ExprKind::Int(i) => Ok(format!("{i}LL")),
            ExprKind::Var(_) if self.len(e)? == 1 => {
                Ok(format!("((long long)({}))", self.elem(e, "0")?))
            }
            ExprKind::Prim(p @ (Prim::Add | Prim::Sub | Prim::Mul), args) if args.len() == 2 => {
                let a = self.int_expr(&args[0])?;
                let b = self.int_expr(&args[1])?;
                let op = match p {
                    Prim::Add => "+",
                    Prim::Sub => "-",
                    _ => "*",
                };
                Ok(format!("({a} {op} {b})"))
            }
            ExprKind::Prim(Prim::Neg, args) if args.len() == 1 => {
                Ok(format!("(-{})", self.int_expr(&args[0])?))
            }
            _ => Err("an index expression of this kind".to_string()),
        }
    }

    /// `x[i]` of a one-dimensional variable `x`, hoisted before the
    /// statement (so a loop writing `x` cannot change what it reads).
    fn indexed(&mut self, base: &Expr, indexes: &[Index]) -> Result<String, Unsupported> {
        let ExprKind::Var(var) = base.kind else {
            return Err("indexing an expression".to_string());
        };
        if !is_one_dimensional(&base.ty) {
            return Err("indexing a multi-dimensional value".to_string());
        }
        let [Index::Single(i)] = indexes else {
            return Err("slicing or multi-indexing".to_string());
        };
        let place = self
            .layout
            .place(var)
            .ok_or_else(|| format!("`{}` has no value of known size", self.var_name(var)))?;
        let k = self.checked_index(i, place.size())?;
        let value = self.fresh("x");
        let read = match place {
            Place::State { base, .. } => format!("S({base} + {k} - 1)"),
            Place::Data { base, .. } => format!("D({base} + {k} - 1)"),
        };
        self.lines.push(format!("const double {value} = {read};"));
        Ok(value)
    }

    /// The sum of all elements of `e`, in order (as the interpreter adds
    /// a container to the target).
    fn total(&mut self, e: &Expr) -> Result<String, Unsupported> {
        let n = self.len(e)?;
        if n == 1 {
            return self.elem(e, "0");
        }
        let acc = self.fresh("sum");
        let j = self.fresh("j");
        let value = self.elem(e, &j)?;
        self.lines.push(format!(
            "double {acc} = 0.0;\n#pragma unroll 1\nfor (int {j} = 0; {j} < {n}; ++{j}) {acc} += {value};"
        ));
        Ok(acc)
    }

    /// Number of elements of `e`'s value.
    pub fn len(&self, e: &Expr) -> Result<usize, Unsupported> {
        check_type(&e.ty)?;
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Real(_) | ExprKind::Target => Ok(1),
            ExprKind::Var(var) => self
                .layout
                .place(*var)
                .map(Place::size)
                .ok_or_else(|| format!("`{}` has no value of known size", self.var_name(*var))),
            ExprKind::ZerosLike(inner) => self.len(inner),
            ExprKind::Index(base, indexes) => {
                if is_one_dimensional(&base.ty) && matches!(indexes.as_slice(), [Index::Single(_)])
                {
                    self.len(base)?;
                    Ok(1)
                } else {
                    Err("slicing, multi-indexing or indexing a multi-dimensional value".to_string())
                }
            }
            ExprKind::Prim(p, args) if is_reduction(*p) => {
                for a in args {
                    self.len(a)?;
                }
                Ok(1)
            }
            ExprKind::Prim(_, args) | ExprKind::Partial { args, .. } => self.broadcast_len(args),
            ExprKind::Cond(c, a, b) => {
                self.broadcast_len(&[(**c).clone(), (**a).clone(), (**b).clone()])
            }
            other => Err(format!("expression {}", expr_name(other))),
        }
    }

    fn broadcast_len(&self, args: &[Expr]) -> Result<usize, Unsupported> {
        let mut n = 1;
        for a in args {
            let m = self.len(a)?;
            if m != 1 {
                if n != 1 && n != m {
                    return Err(format!("operands of {n} and {m} elements"));
                }
                n = m;
            }
        }
        Ok(n)
    }

    /// C expression for element `idx` of `e` (any index for scalars).
    pub fn elem(&mut self, e: &Expr, idx: &str) -> Result<String, Unsupported> {
        let at = |len: usize| {
            if len == 1 {
                "0".to_string()
            } else {
                idx.to_string()
            }
        };
        match &e.kind {
            ExprKind::Int(i) => Ok(format!("{}.0", i)),
            ExprKind::Real(x) => Ok(real_literal(*x)),
            ExprKind::Target => Ok(format!("S({TARGET_SLOT})")),
            ExprKind::Var(var) => match self.layout.place(*var) {
                Some(Place::State { base, len }) => Ok(format!("S({base} + {})", at(len))),
                Some(Place::Data { base, len }) => Ok(format!("D({base} + {})", at(len))),
                None => Err(format!(
                    "`{}` has no value of known size",
                    self.var_name(*var)
                )),
            },
            ExprKind::ZerosLike(inner) => {
                self.len(inner)?;
                Ok("0.0".to_string())
            }
            ExprKind::Cond(c, a, b) => {
                let n = self.len(e)?;
                let _ = n;
                let c_len = self.len(c)?;
                let (a_len, b_len) = (self.len(a)?, self.len(b)?);
                let c = self.elem(c, &at(c_len))?;
                self.in_branch += 1;
                let branches = (self.elem(a, &at(a_len)), self.elem(b, &at(b_len)));
                self.in_branch -= 1;
                let (a, b) = (branches.0?, branches.1?);
                Ok(format!("(({c}) != 0.0 ? ({a}) : ({b}))"))
            }
            ExprKind::Index(base, indexes) => self.indexed(base, indexes),
            ExprKind::Prim(p, args) if is_check(*p) => self.check(*p, args),
            ExprKind::Prim(p, args) if is_reduction(*p) => self.reduction(*p, args),
            ExprKind::Prim(p, args) => {
                if matches!(p, Prim::Mul | Prim::Div)
                    && args.iter().all(|a| self.len(a).is_ok_and(|n| n > 1))
                {
                    return Err(format!("{} of two containers (linear algebra)", p.name()));
                }
                // Integer arithmetic is exact in doubles only for these.
                let int_exact = matches!(
                    p,
                    Prim::Add
                        | Prim::Sub
                        | Prim::Neg
                        | Prim::Mul
                        | Prim::Lt
                        | Prim::Leq
                        | Prim::Gt
                        | Prim::Geq
                        | Prim::Eq
                        | Prim::Neq
                        | Prim::Not
                );
                if e.ty == Type::Int && !int_exact {
                    return Err(format!("integer {}", p.name()));
                }
                let f =
                    scalar_fn(*p, args.len()).ok_or_else(|| format!("primitive {}", p.name()))?;
                let operands = self.operands(args, idx)?;
                Ok(format!("{}({operands})", c_name(f, None)))
            }
            ExprKind::Partial { prim, arg, args } => {
                let f = scalar_fn(*prim, args.len())
                    .filter(|f| *arg < f.partials.len())
                    .ok_or_else(|| format!("derivative of {}", prim.name()))?;
                let operands = self.operands(args, idx)?;
                Ok(format!("{}({operands})", c_name(f, Some(*arg))))
            }
            other => Err(format!("expression {}", expr_name(other))),
        }
    }

    fn operands(&mut self, args: &[Expr], idx: &str) -> Result<String, Unsupported> {
        let mut out = Vec::new();
        for a in args {
            let n = self.len(a)?;
            out.push(self.elem(a, if n == 1 { "0" } else { idx })?);
        }
        Ok(out.join(", "))
    }

    /// Reductions over one lane's elements, hoisted before the statement.
    fn reduction(&mut self, p: Prim, args: &[Expr]) -> Result<String, Unsupported> {
        let acc = self.fresh("r");
        let j = self.fresh("j");
        match (p, args) {
            (Prim::Sum, [x]) => {
                let n = self.len(x)?;
                let v = self.elem(x, &j)?;
                self.lines.push(format!(
                    "double {acc} = 0.0;\n#pragma unroll 1\nfor (int {j} = 0; {j} < {n}; ++{j}) {acc} += {v};"
                ));
            }
            (Prim::DotSelf, [x]) => {
                let n = self.len(x)?;
                let v = self.elem(x, &j)?;
                self.lines.push(format!(
                    "double {acc} = 0.0;\n#pragma unroll 1\nfor (int {j} = 0; {j} < {n}; ++{j}) {{ double v = {v}; {acc} += v * v; }}"
                ));
            }
            (Prim::DotProduct, [x, y]) => {
                let n = self.broadcast_len(args)?;
                if self.len(x)? != n || self.len(y)? != n {
                    return Err("dot_product of a scalar".to_string());
                }
                let a = self.elem(x, &j)?;
                let b = self.elem(y, &j)?;
                self.lines.push(format!(
                    "double {acc} = 0.0;\n#pragma unroll 1\nfor (int {j} = 0; {j} < {n}; ++{j}) {acc} += ({a}) * ({b});"
                ));
            }
            _ => return Err(format!("reduction {}", p.name())),
        }
        Ok(acc)
    }

    /// An argument check: rejects the lane (status 1, stop) when an element
    /// fails; its value is 0.
    fn check(&mut self, p: Prim, args: &[Expr]) -> Result<String, Unsupported> {
        if self.in_branch > 0 {
            return Err("an argument check inside a conditional expression".to_string());
        }
        let x = args.first().ok_or("argument check without operand")?;
        let n = self.len(x)?;
        let j = self.fresh("j");
        let v = self.elem(x, &j)?;
        let ok = match p {
            Prim::CheckPositiveFinite => "(v > 0.0 && isfinite(v))",
            Prim::CheckPositive => "(v > 0.0)",
            Prim::CheckNonNegative | Prim::CheckNonNegativeInt => "(v >= 0.0)",
            Prim::CheckFinite => "isfinite(v)",
            Prim::CheckNotNan => "(v == v)",
            Prim::CheckProbability => "(v >= 0.0 && v <= 1.0)",
            _ => return Err(format!("check {}", p.name())),
        };
        let test = format!(
            "{{ double v = {v}; if (!{ok}) {{ S({STATUS_SLOT}) = {REJECTED_STATUS}; return; }} }}"
        );
        self.lines.push(if n == 1 {
            test
        } else {
            format!("#pragma unroll 1\nfor (int {j} = 0; {j} < {n}; ++{j}) {test}")
        });
        Ok("0.0".to_string())
    }
}

fn whole_var(lhs: &LValue) -> Result<language::mir::VarId, Unsupported> {
    if lhs.path.is_empty() {
        Ok(lhs.var)
    } else {
        Err("assignment to an indexed or projected variable".to_string())
    }
}

fn check_type(ty: &Type) -> Result<(), Unsupported> {
    match ty {
        Type::Int | Type::Real | Type::Vector | Type::RowVector | Type::Matrix => Ok(()),
        Type::Array(inner) => check_type(inner),
        other => Err(format!("values of type {other:?}")),
    }
}

/// Vectors, row vectors and one-dimensional arrays of scalars: one index
/// selects one element.
fn is_one_dimensional(ty: &Type) -> bool {
    match ty {
        Type::Vector | Type::RowVector => true,
        Type::Array(inner) => matches!(**inner, Type::Int | Type::Real),
        _ => false,
    }
}

fn is_reduction(p: Prim) -> bool {
    matches!(p, Prim::Sum | Prim::DotSelf | Prim::DotProduct)
}

fn is_check(p: Prim) -> bool {
    matches!(
        p,
        Prim::CheckPositiveFinite
            | Prim::CheckPositive
            | Prim::CheckNonNegative
            | Prim::CheckNonNegativeInt
            | Prim::CheckFinite
            | Prim::CheckNotNan
            | Prim::CheckProbability
    )
}

/// A C double literal that reads back as exactly `x`.
pub fn real_literal(x: f64) -> String {
    if x.is_nan() {
        "BAT_NAN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "BAT_INF" } else { "(-BAT_INF)" }.to_string()
    } else {
        // Rust's Debug form is the shortest round-tripping decimal, with a
        // `.` or an exponent, so C reads it as the same double.
        format!("({x:?})")
    }
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

fn expr_name(kind: &ExprKind) -> &'static str {
    match kind {
        ExprKind::Imag(_) => "imaginary literal",
        ExprKind::Call(..) => "user function call",
        ExprKind::Index(..) => "indexing",
        ExprKind::TupleProj(..) => "tuple projection",
        ExprKind::ArrayLit(_) => "array literal",
        ExprKind::RowVectorLit(_) => "row vector literal",
        ExprKind::TupleLit(_) => "tuple literal",
        ExprKind::Pop(_) => "stack pop",
        _ => "of this kind",
    }
}
