//! Printing MIR (`bat ir FILE --emit mir`): Stan-like text with every
//! variable named `name` (or `name__k` for temporaries) and every library
//! call shown as the primitive it became.

use super::{
    DataDecl, Expr, ExprKind, Function, Index, LValue, LValueStep, ParamDecl, Printable, Program,
    SizedType, Stmt, StmtKind, Transform, VarId,
};

/// The gradient program (`bat ir FILE --emit grad`): the model's functions
/// and the forward-then-reverse body.
pub fn print_grad_program(g: &super::GradProgram) -> String {
    let mut pr = Printer {
        p: &g.program,
        out: String::new(),
        indent: 0,
    };
    pr.line(format!(
        "gradient {} ({} stacks)",
        g.program.name, g.num_stacks
    ));
    for f in &g.program.functions {
        pr.function(f);
    }
    pr.hoisted();
    pr.section("log_density_gradient", |pr| pr.stmts(&g.body));
    pr.out
}

pub fn print_program(p: &Program) -> String {
    let mut pr = Printer {
        p,
        out: String::new(),
        indent: 0,
    };
    pr.program();
    pr.out
}

/// One straight-line statement as it appears in `--emit mir`, without the
/// trailing newline (used by the batching IRs' printers).
pub fn print_stmt(p: &Program, s: &Stmt) -> String {
    let mut pr = Printer {
        p,
        out: String::new(),
        indent: 0,
    };
    pr.stmt(s);
    pr.out.trim_end().to_string()
}

/// One expression as it appears in `--emit mir`.
pub fn print_expr(p: &Program, e: &Expr) -> String {
    Printer {
        p,
        out: String::new(),
        indent: 0,
    }
    .expr(e)
}

/// An assignable place as it appears in `--emit mir`.
pub fn print_lvalue(p: &Program, lv: &LValue) -> String {
    Printer {
        p,
        out: String::new(),
        indent: 0,
    }
    .lvalue(lv)
}

struct Printer<'a> {
    p: &'a Program,
    out: String,
    indent: usize,
}

impl Printer<'_> {
    fn line(&mut self, text: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text.as_ref());
        self.out.push('\n');
    }

    fn name(&self, v: VarId) -> String {
        self.p.vars[v.0 as usize].name.clone()
    }

    fn program(&mut self) {
        self.line(format!("program {}", self.p.name));
        for f in &self.p.functions {
            self.function(f);
        }
        self.section("data", |pr| {
            for d in &pr.p.data {
                let DataDecl { var, ty, transform } = d;
                let text = format!(
                    "data {}{} {};",
                    pr.sized(ty),
                    pr.transform(transform),
                    pr.name(*var)
                );
                pr.line(text);
            }
        });
        self.section("transformed_data", |pr| pr.stmts(&pr.p.transformed_data));
        self.section("parameters", |pr| {
            for d in &pr.p.parameters {
                let ParamDecl { var, ty, transform } = d;
                let text = format!(
                    "param {}{} {};",
                    pr.sized(ty),
                    pr.transform(transform),
                    pr.name(*var)
                );
                pr.line(text);
            }
        });
        self.section("transformed_parameters", |pr| {
            pr.stmts(&pr.p.transformed_parameters)
        });
        self.section("model", |pr| pr.stmts(&pr.p.model));
        self.section("generated_quantities", |pr| {
            pr.stmts(&pr.p.generated_quantities)
        });
        self.hoisted();
    }

    /// `hoisted { ... }`, when there is something hoisted.
    fn hoisted(&mut self) {
        if self.p.hoisted.is_empty() {
            return;
        }
        self.section("hoisted", |pr| {
            for h in &pr.p.hoisted {
                let value = pr.expr(&h.value);
                let text = match h.ok {
                    Some(ok) => format!("{} = {value} (else {} = 0);", pr.name(h.var), pr.name(ok)),
                    None => format!("{} = {value};", pr.name(h.var)),
                };
                pr.line(text);
            }
        });
    }

    fn section(&mut self, name: &str, body: impl FnOnce(&mut Self)) {
        self.line(format!("{name} {{"));
        self.indent += 1;
        body(self);
        self.indent -= 1;
        self.line("}");
    }

    fn function(&mut self, f: &Function) {
        let args: Vec<String> = f
            .args
            .iter()
            .map(|&a| format!("{} {}", self.p.vars[a.0 as usize].ty, self.name(a)))
            .collect();
        let ret = f.ret.as_ref().map_or("void".to_string(), |t| t.to_string());
        if f.external {
            self.line(format!("external function {ret} {};", f.name));
            return;
        }
        self.line(format!("function {ret} {}({}) {{", f.name, args.join(", ")));
        self.indent += 1;
        self.stmts(&f.body);
        self.indent -= 1;
        self.line("}");
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn block(&mut self, head: String, body: &[Stmt]) {
        self.line(format!("{head} {{"));
        self.indent += 1;
        self.stmts(body);
        self.indent -= 1;
        self.line("}");
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Decl { var, ty, init } => {
                let init = init
                    .as_ref()
                    .map_or(String::new(), |e| format!(" = {}", self.expr(e)));
                let text = format!("{} {}{init};", self.sized(ty), self.name(*var));
                self.line(text);
            }
            StmtKind::Let { var, value } => {
                let text = format!("let {} = {};", self.name(*var), self.expr(value));
                self.line(text);
            }
            StmtKind::Assign { lhs, rhs } => {
                let text = format!("{} = {};", self.lvalue(lhs), self.expr(rhs));
                self.line(text);
            }
            StmtKind::Unpack { lhs, rhs } => {
                let lhs: Vec<String> = lhs.iter().map(|l| self.lvalue(l)).collect();
                let text = format!("({}) = {};", lhs.join(", "), self.expr(rhs));
                self.line(text);
            }
            StmtKind::TargetAdd(e) => {
                let text = format!("target += {};", self.expr(e));
                self.line(text);
            }
            StmtKind::JacobianAdd(e) => {
                let text = format!("jacobian += {};", self.expr(e));
                self.line(text);
            }
            StmtKind::CheckConstraint { var, transform } => {
                let text = format!("check {}{};", self.name(*var), self.transform(transform));
                self.line(text);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let head = format!("if ({})", self.expr(cond));
                self.block(head, then);
                if !otherwise.is_empty() {
                    self.block("else".to_string(), otherwise);
                }
            }
            StmtKind::While { cond, body } => {
                let head = format!("while ({})", self.expr(cond));
                self.block(head, body);
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let head = format!(
                    "for ({} in {}:{})",
                    self.name(*var),
                    self.expr(lower),
                    self.expr(upper)
                );
                self.block(head, body);
            }
            StmtKind::Block(body) => self.block(String::new(), body),
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Return(e) => {
                let text = match e {
                    Some(e) => format!("return {};", self.expr(e)),
                    None => "return;".to_string(),
                };
                self.line(text);
            }
            StmtKind::Effect(e) => {
                let text = format!("{};", self.expr(e));
                self.line(text);
            }
            StmtKind::Print(items) => {
                let text = format!("print({});", self.printables(items));
                self.line(text);
            }
            StmtKind::Reject(items) => {
                let text = format!("reject({});", self.printables(items));
                self.line(text);
            }
            StmtKind::FatalError(items) => {
                let text = format!("fatal_error({});", self.printables(items));
                self.line(text);
            }
            StmtKind::AddAssign { lhs, rhs } => {
                let text = format!("{} += {};", self.lvalue(lhs), self.expr(rhs));
                self.line(text);
            }
            StmtKind::Push { stack, value } => {
                let text = format!("push(stack{}, {});", stack.0, self.expr(value));
                self.line(text);
            }
            StmtKind::ForDown {
                var,
                upper,
                lower,
                body,
            } => {
                let head = format!(
                    "for ({} in {} down to {})",
                    self.name(*var),
                    self.expr(upper),
                    self.expr(lower)
                );
                self.block(head, body);
            }
            StmtKind::ReadParam {
                param,
                var,
                transform,
            } => {
                let text = format!(
                    "{} = read_param({param}){};",
                    self.name(*var),
                    self.transform(transform)
                );
                self.line(text);
            }
            StmtKind::ParamAdjoint {
                param,
                var,
                var_adj,
                lp_adj,
                transform,
                arg_adjs,
            } => {
                let args: Vec<String> = arg_adjs
                    .iter()
                    .map(|a| a.map_or("_".to_string(), |v| self.name(v)))
                    .collect();
                let text = format!(
                    "param_adjoint({param}, {}, {}, {}){} -> ({});",
                    self.name(*var),
                    self.name(*var_adj),
                    self.name(*lp_adj),
                    self.transform(transform),
                    args.join(", ")
                );
                self.line(text);
            }
        }
    }

    fn printables(&self, items: &[Printable]) -> String {
        let parts: Vec<String> = items
            .iter()
            .map(|p| match p {
                Printable::Str(s) => format!("\"{s}\""),
                Printable::Expr(e) => self.expr(e),
            })
            .collect();
        parts.join(", ")
    }

    fn lvalue(&self, lv: &LValue) -> String {
        let mut s = self.name(lv.var);
        for step in &lv.path {
            match step {
                LValueStep::Index(idx) => s = format!("{s}[{}]", self.indexes(idx)),
                LValueStep::TupleProj(k) => s = format!("{s}.{k}"),
            }
        }
        s
    }

    fn sized(&self, ty: &SizedType) -> String {
        match ty {
            SizedType::Int => "int".into(),
            SizedType::Real => "real".into(),
            SizedType::Complex => "complex".into(),
            SizedType::Vector(n) => format!("vector[{}]", self.expr(n)),
            SizedType::RowVector(n) => format!("row_vector[{}]", self.expr(n)),
            SizedType::Matrix(r, c) => format!("matrix[{}, {}]", self.expr(r), self.expr(c)),
            SizedType::ComplexVector(n) => format!("complex_vector[{}]", self.expr(n)),
            SizedType::ComplexRowVector(n) => format!("complex_row_vector[{}]", self.expr(n)),
            SizedType::ComplexMatrix(r, c) => {
                format!("complex_matrix[{}, {}]", self.expr(r), self.expr(c))
            }
            SizedType::Array(n, elem) => format!("array[{}] {}", self.expr(n), self.sized(elem)),
            SizedType::Tuple(items) => {
                let items: Vec<String> = items.iter().map(|t| self.sized(t)).collect();
                format!("tuple({})", items.join(", "))
            }
        }
    }

    fn transform(&self, t: &Transform) -> String {
        let e = |x: &Expr| self.expr(x);
        match t {
            Transform::Identity => String::new(),
            Transform::Lower(a) => format!(" <lower={}>", e(a)),
            Transform::Upper(b) => format!(" <upper={}>", e(b)),
            Transform::LowerUpper(a, b) => format!(" <lower={}, upper={}>", e(a), e(b)),
            Transform::Offset(a) => format!(" <offset={}>", e(a)),
            Transform::Multiplier(b) => format!(" <multiplier={}>", e(b)),
            Transform::OffsetMultiplier(a, b) => format!(" <offset={}, multiplier={}>", e(a), e(b)),
            Transform::Tuple(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|t| self.transform(t).trim().to_string())
                    .collect();
                format!(" <tuple({})>", items.join(", "))
            }
            other => format!(" <{}>", format!("{other:?}").to_lowercase()),
        }
    }

    fn indexes(&self, idx: &[Index]) -> String {
        let parts: Vec<String> = idx
            .iter()
            .map(|i| match i {
                Index::All => ":".to_string(),
                Index::Single(e) => self.expr(e),
                Index::Multi(e) => format!("multi({})", self.expr(e)),
                Index::Upfrom(e) => format!("{}:", self.expr(e)),
                Index::Downto(e) => format!(":{}", self.expr(e)),
                Index::Between(a, b) => format!("{}:{}", self.expr(a), self.expr(b)),
            })
            .collect();
        parts.join(", ")
    }

    fn list(&self, items: &[Expr]) -> String {
        items
            .iter()
            .map(|e| self.expr(e))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `ode_rk45(f, y0, t0, ts, args…)`, with the control arguments as
    /// `control=(…)`, the sensitivity function as `vjp=f__rev…`, and in
    /// reverse mode the solution's adjoint as `adjoint=…`.
    fn ode(&self, call: &crate::mir::OdeSolve) -> String {
        let mut parts = vec![self.p.functions[call.system.0 as usize].name.clone()];
        parts.extend(
            [&call.initial_state, &call.initial_time, &call.times]
                .into_iter()
                .chain(&call.args)
                .map(|e| self.expr(e)),
        );
        if !call.control.is_empty() {
            parts.push(format!("control=({})", self.list(&call.control)));
        }
        if let Some(s) = &call.sensitivity {
            parts.push(format!(
                "vjp={}",
                self.p.functions[s.function.0 as usize].name
            ));
        }
        if let Some(a) = &call.solution_adjoint {
            parts.push(format!("adjoint={}", self.expr(a)));
        }
        format!("{}({})", call.name, parts.join(", "))
    }

    fn expr(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int(i) => i.to_string(),
            ExprKind::Real(x) => format!("{x:?}"),
            ExprKind::Imag(x) => format!("{x:?}i"),
            ExprKind::Var(v) => self.name(*v),
            ExprKind::Prim(p, args) => format!("{p}({})", self.list(args)),
            ExprKind::Call(f, args) => format!(
                "{}({})",
                self.p.functions[f.0 as usize].name,
                self.list(args)
            ),
            ExprKind::Index(base, idx) => format!("{}[{}]", self.expr(base), self.indexes(idx)),
            ExprKind::TupleProj(base, k) => format!("{}.{k}", self.expr(base)),
            ExprKind::Cond(c, t, f) => {
                format!("({} ? {} : {})", self.expr(c), self.expr(t), self.expr(f))
            }
            ExprKind::ArrayLit(items) => format!("{{{}}}", self.list(items)),
            ExprKind::RowVectorLit(items) => format!("[{}]", self.list(items)),
            ExprKind::TupleLit(items) => format!("({})", self.list(items)),
            ExprKind::Target => "target()".to_string(),
            ExprKind::JacobianOn => "jacobian_on()".to_string(),
            ExprKind::Pop(stack) => format!("pop(stack{})", stack.0),
            ExprKind::Partial { prim, arg, args } => {
                format!("d{}_{prim}({})", arg + 1, self.list(args))
            }
            ExprKind::ZerosLike(e) => format!("zeros_like({})", self.expr(e)),
            ExprKind::Ode(call) => self.ode(call),
        }
    }
}
