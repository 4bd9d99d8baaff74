//! Small gradient programs written by hand for the passes' unit tests,
//! printed one statement per line.

use crate::mir::GradProgram;
use crate::mir::{
    Expr, ExprKind, Index, LValue, Origin, Prim, Program, Stmt, StmtKind, Transform, VarId, VarInfo,
};
use crate::span::Span;
use crate::types::{AdLevel, Type};

pub(crate) struct TestProgram {
    pub program: Program,
    pub target_adj: VarId,
    params: usize,
}

impl TestProgram {
    pub fn new() -> TestProgram {
        let mut t = TestProgram {
            program: Program {
                name: "test".into(),
                vars: Vec::new(),
                functions: Vec::new(),
                data: Vec::new(),
                transformed_data: Vec::new(),
                parameters: Vec::new(),
                transformed_parameters: Vec::new(),
                model: Vec::new(),
                generated_quantities: Vec::new(),
                hoisted: Vec::new(),
            },
            target_adj: VarId(0),
            params: 0,
        };
        t.target_adj = t.declare("target_adj", Type::Real, Origin::Local);
        t
    }

    fn declare(&mut self, name: &str, ty: Type, origin: Origin) -> VarId {
        self.program.vars.push(VarInfo {
            name: name.into(),
            ty,
            origin,
            span: Span::default(),
        });
        VarId(self.program.vars.len() as u32 - 1)
    }

    pub fn param(&mut self, name: &str) -> VarId {
        self.declare(name, Type::Real, Origin::Parameter)
    }

    pub fn param_vector(&mut self, name: &str) -> VarId {
        self.declare(name, Type::Vector, Origin::Parameter)
    }

    pub fn data_vector(&mut self, name: &str) -> VarId {
        self.declare(name, Type::Vector, Origin::Data)
    }

    pub fn real(&mut self, name: &str) -> VarId {
        self.declare(name, Type::Real, Origin::Local)
    }

    pub fn vector(&mut self, name: &str) -> VarId {
        self.declare(name, Type::Vector, Origin::Local)
    }

    fn ty(&self, v: VarId) -> Type {
        self.program.vars[v.0 as usize].ty.clone()
    }

    pub fn var(&self, v: VarId) -> Expr {
        expr(ExprKind::Var(v), self.ty(v))
    }

    pub fn lit(&self, x: f64) -> Expr {
        expr(ExprKind::Real(x), Type::Real)
    }

    pub fn int(&self, i: i64) -> Expr {
        expr(ExprKind::Int(i), Type::Int)
    }

    pub fn clone_expr(&self, e: &Expr) -> Expr {
        e.clone()
    }

    pub fn zeros(&self, v: VarId) -> Expr {
        expr(ExprKind::ZerosLike(Box::new(self.var(v))), self.ty(v))
    }

    pub fn index(&self, v: VarId, i: i64) -> Expr {
        expr(
            ExprKind::Index(Box::new(self.var(v)), vec![Index::Single(self.int(i))]),
            Type::Real,
        )
    }

    fn binary(&self, p: Prim, a: Expr, b: Expr) -> Expr {
        let ty = match (a.ty.is_scalar(), b.ty.is_scalar()) {
            (true, true) if a.ty == Type::Int && b.ty == Type::Int => Type::Int,
            (true, true) => Type::Real,
            (true, false) => b.ty.clone(),
            (false, _) => a.ty.clone(),
        };
        prim(p, vec![a, b], ty)
    }

    pub fn add(&self, a: Expr, b: Expr) -> Expr {
        self.binary(Prim::Add, a, b)
    }

    pub fn sub(&self, a: Expr, b: Expr) -> Expr {
        self.binary(Prim::Sub, a, b)
    }

    pub fn mul(&self, a: Expr, b: Expr) -> Expr {
        self.binary(Prim::Mul, a, b)
    }

    pub fn elt_mul(&self, a: Expr, b: Expr) -> Expr {
        self.binary(Prim::EltMul, a, b)
    }

    pub fn div(&self, a: Expr, b: Expr) -> Expr {
        self.binary(Prim::Div, a, b)
    }

    pub fn log(&self, a: Expr) -> Expr {
        let ty = a.ty.clone();
        prim(Prim::Log, vec![a], ty)
    }

    /// `p(a)` for a unary elementwise primitive (the type of `a`).
    pub fn unary(&self, p: Prim, a: Expr) -> Expr {
        let ty = a.ty.clone();
        prim(p, vec![a], ty)
    }

    pub fn check_not_nan(&self, a: Expr) -> Expr {
        prim(Prim::CheckNotNan, vec![a, self.int(1)], Type::Real)
    }

    pub fn check_positive(&self, a: Expr) -> Expr {
        prim(Prim::CheckPositive, vec![a, self.int(1)], Type::Real)
    }

    pub fn let_(&self, var: VarId, value: Expr) -> Stmt {
        stmt(StmtKind::Let { var, value })
    }

    pub fn add_assign(&self, var: VarId, rhs: Expr) -> Stmt {
        stmt(StmtKind::AddAssign {
            lhs: LValue {
                var,
                path: Vec::new(),
            },
            rhs,
        })
    }

    pub fn target_add(&self, e: Expr) -> Stmt {
        stmt(StmtKind::TargetAdd(e))
    }

    pub fn read_param(&mut self, var: VarId) -> Stmt {
        self.params += 1;
        stmt(StmtKind::ReadParam {
            param: self.params - 1,
            var,
            transform: Transform::Identity,
        })
    }

    pub fn param_adjoint(&self, var: VarId, var_adj: VarId) -> Stmt {
        stmt(StmtKind::ParamAdjoint {
            param: 0,
            var,
            var_adj,
            lp_adj: self.target_adj,
            transform: Transform::Identity,
            arg_adjs: Vec::new(),
        })
    }

    fn grad(&self, body: Vec<Stmt>) -> GradProgram {
        GradProgram {
            program: self.program.clone(),
            body,
            num_stacks: 0,
            target_adjoint: self.target_adj,
        }
    }

    /// The body's lines after `pass`.
    pub fn run(&self, body: Vec<Stmt>, pass: impl FnOnce(&mut GradProgram)) -> Vec<String> {
        let lines = self.run_full(body, pass);
        let start = lines
            .iter()
            .position(|l| l == "log_density_gradient {")
            .expect("a body");
        lines[start + 1..lines.len() - 1].to_vec()
    }

    /// The whole printed program after `pass`, without its header.
    pub fn run_full(&self, body: Vec<Stmt>, pass: impl FnOnce(&mut GradProgram)) -> Vec<String> {
        let mut g = self.grad(body);
        pass(&mut g);
        crate::mir::print::print_grad_program(&g)
            .lines()
            .skip(1)
            .map(|l| l.trim().to_string())
            .collect()
    }
}

fn expr(kind: ExprKind, ty: Type) -> Expr {
    Expr {
        kind,
        ty,
        ad: AdLevel::AutoDiff,
        span: Span::default(),
    }
}

fn prim(p: Prim, args: Vec<Expr>, ty: Type) -> Expr {
    expr(ExprKind::Prim(p, args), ty)
}

fn stmt(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::default(),
    }
}
