//! Lowering a checked program to MIR ([`lower`]).
//!
//! The checker has already rejected every invalid program, so lowering only
//! fails for constructs bat cannot run yet; each gives a "not yet supported"
//! diagnostic at the construct, never a wrong program.

mod expr;
mod ode;
mod stmt;

use std::collections::HashMap;

use super::{
    DataDecl, FunId, Function, Origin, ParamDecl, Program, SizedType, Stmt, StmtKind, Transform,
    VarId, VarInfo,
};
use crate::check::{CheckedProgram, SymbolId, SymbolKind};
use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::ast;
use crate::types::Type;

/// Diagnostic code for constructs the MIR cannot express yet.
pub const NOT_YET_SUPPORTED: &str = "E0201";

/// Lower a checked program. `name` is the model name (file stem). ODE
/// solves with autodiff inputs still lack their sensitivity functions
/// ([`crate::lower_checked`] has the AD attach them).
pub fn lower(
    program: &ast::Program,
    checked: &CheckedProgram,
    name: &str,
) -> Result<Program, Vec<Diagnostic>> {
    let mut lowerer = Lowerer::new(checked, name);
    lowerer.program(program);
    if lowerer.diags.is_empty() {
        Ok(lowerer.out)
    } else {
        Err(lowerer.diags)
    }
}

pub(super) struct Lowerer<'c> {
    checked: &'c CheckedProgram,
    /// Identifier use span → symbol.
    refs: HashMap<Span, SymbolId>,
    vars: HashMap<SymbolId, VarId>,
    funs: HashMap<SymbolId, FunId>,
    /// Definition span of a function symbol → its symbol (to find the
    /// symbol of a definition being lowered).
    fun_by_def: HashMap<Span, SymbolId>,
    out: Program,
    diags: Vec<Diagnostic>,
    /// The block whose statements are being lowered (None in functions).
    block: Option<ast::BlockKind>,
}

impl<'c> Lowerer<'c> {
    fn new(checked: &'c CheckedProgram, name: &str) -> Lowerer<'c> {
        let refs = checked
            .references
            .iter()
            .map(|&(span, id)| (span, id))
            .collect();
        let fun_by_def = checked
            .symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.kind, SymbolKind::Function { .. }))
            .map(|(id, s)| (s.def_span, id))
            .collect();
        Lowerer {
            checked,
            refs,
            vars: HashMap::new(),
            funs: HashMap::new(),
            fun_by_def,
            out: Program {
                name: name.to_string(),
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
            diags: Vec::new(),
            block: None,
        }
    }

    pub(super) fn unsupported(&mut self, what: impl std::fmt::Display, span: Span) {
        self.diags.push(
            Diagnostic::error(
                Kind::Semantic,
                NOT_YET_SUPPORTED,
                format!("not yet supported: {what}"),
                span,
            )
            .with_label("bat cannot run this yet")
            .with_note(
                "the program is valid Stan; bat's model IR does not implement this construct yet",
            ),
        );
    }

    /// The MIR variable for the symbol declared at `name`'s span, creating
    /// it on first sight.
    fn declare(&mut self, name: &ast::Ident, origin: Origin) -> VarId {
        let symbol = self
            .checked
            .symbols
            .iter()
            .position(|s| s.def_span == name.span);
        let ty = symbol.map_or(Type::Error, |id| self.checked.symbols[id].ty.clone());
        let var = VarId(self.out.vars.len() as u32);
        self.out.vars.push(VarInfo {
            name: name.name.clone(),
            ty,
            origin,
            span: name.span,
        });
        if let Some(id) = symbol {
            self.vars.insert(id, var);
        }
        var
    }

    /// The variable an identifier use refers to.
    fn resolve_var(&mut self, ident: &ast::Ident) -> Option<VarId> {
        let var = self
            .refs
            .get(&ident.span)
            .and_then(|id| self.vars.get(id))
            .copied();
        if var.is_none() {
            self.unsupported(
                format_args!("reference to `{}` (unresolved in lowering)", ident.name),
                ident.span,
            );
        }
        var
    }

    fn program(&mut self, program: &ast::Program) {
        // Functions first: bodies may call each other in any order.
        for block in &program.blocks {
            if block.kind == ast::BlockKind::Functions {
                self.declare_functions(&block.stmts);
            }
        }
        for block in &program.blocks {
            self.block = Some(block.kind);
            match block.kind {
                ast::BlockKind::Functions => self.define_functions(&block.stmts),
                ast::BlockKind::Data => self.data_block(&block.stmts),
                ast::BlockKind::Parameters => self.parameters_block(&block.stmts),
                kind => {
                    let origin = match kind {
                        ast::BlockKind::TransformedData => Origin::TransformedData,
                        ast::BlockKind::TransformedParameters => Origin::TransformedParameter,
                        ast::BlockKind::GeneratedQuantities => Origin::GeneratedQuantity,
                        _ => Origin::Local,
                    };
                    let stmts = self.toplevel_stmts(&block.stmts, origin);
                    match kind {
                        ast::BlockKind::TransformedData => self.out.transformed_data = stmts,
                        ast::BlockKind::TransformedParameters => {
                            self.out.transformed_parameters = stmts
                        }
                        ast::BlockKind::Model => self.out.model = stmts,
                        ast::BlockKind::GeneratedQuantities => {
                            self.out.generated_quantities = stmts
                        }
                        _ => unreachable!("handled above"),
                    }
                }
            }
        }
        self.block = None;
    }

    fn declare_functions(&mut self, stmts: &[ast::Stmt]) {
        for stmt in stmts {
            let ast::StmtKind::FunDef(def) = &stmt.kind else {
                continue;
            };
            let Some(&symbol) = self.fun_by_def.get(&def.name.span) else {
                continue;
            };
            // A forward declaration and its definition are one function:
            // key by the definition's symbol when the checker merged them.
            if self.funs.contains_key(&symbol) {
                continue;
            }
            let ret = match &def.return_type {
                ast::ReturnType::Void(_) => None,
                ast::ReturnType::Type(_) => match &self.checked.symbols[symbol].ty {
                    Type::Function(ft) => ft.ret.clone(),
                    _ => None,
                },
            };
            let id = FunId(self.out.functions.len() as u32);
            self.out.functions.push(Function {
                name: def.name.name.clone(),
                args: Vec::new(),
                ret,
                body: Vec::new(),
                uses_target: def.name.name.ends_with("_lp"),
                uses_rng: def.name.name.ends_with("_rng"),
                external: def.body.is_none()
                    && self.checked.symbols[symbol].kind
                        == crate::check::SymbolKind::Function { defined: false },
            });
            self.funs.insert(symbol, id);
        }
    }

    fn define_functions(&mut self, stmts: &[ast::Stmt]) {
        for stmt in stmts {
            let ast::StmtKind::FunDef(def) = &stmt.kind else {
                continue;
            };
            let Some(body) = &def.body else { continue };
            let Some(&symbol) = self.fun_by_def.get(&def.name.span) else {
                continue;
            };
            let Some(&id) = self.funs.get(&symbol) else {
                continue;
            };
            let args = def
                .args
                .iter()
                .map(|a| self.declare(&a.name, Origin::FunctionArg))
                .collect();
            let body = self.stmt_as_block(body);
            let f = &mut self.out.functions[id.0 as usize];
            f.args = args;
            f.body = body;
        }
    }

    fn data_block(&mut self, stmts: &[ast::Stmt]) {
        for stmt in stmts {
            if let ast::StmtKind::Decl(decl) = &stmt.kind {
                let var = self.declare(&decl.name, Origin::Data);
                let (ty, transform) = self.sized_type(&decl.ty);
                self.out.data.push(DataDecl { var, ty, transform });
            }
        }
    }

    fn parameters_block(&mut self, stmts: &[ast::Stmt]) {
        for stmt in stmts {
            if let ast::StmtKind::Decl(decl) = &stmt.kind {
                let var = self.declare(&decl.name, Origin::Parameter);
                let (ty, transform) = self.sized_type(&decl.ty);
                if matches!(transform, Transform::Tuple(_)) {
                    // The transforms (constrain, free, log |J| and its
                    // adjoint) have no rule for tuples yet; refused here
                    // rather than failing at the first draw.
                    self.unsupported(
                        format_args!(
                            "constraints on the components of tuple parameter `{}` \
                             (declare the constrained components as separate parameters)",
                            decl.name.name
                        ),
                        decl.ty.span,
                    );
                }
                self.out.parameters.push(ParamDecl { var, ty, transform });
            }
        }
    }

    /// Statements of transformed data / transformed parameters / model /
    /// generated quantities. Top-level declarations get `origin`; their
    /// constraints are checked at the end of the block, as Stan does.
    fn toplevel_stmts(&mut self, stmts: &[ast::Stmt], origin: Origin) -> Vec<Stmt> {
        let mut out = Vec::new();
        let mut checks = Vec::new();
        for stmt in stmts {
            match &stmt.kind {
                ast::StmtKind::Decl(decl) => {
                    let var = self.declare(&decl.name, origin);
                    let (ty, transform) = self.sized_type(&decl.ty);
                    let init = decl.init.as_ref().map(|e| self.expr(e));
                    if transform != Transform::Identity {
                        checks.push(Stmt {
                            kind: StmtKind::CheckConstraint { var, transform },
                            span: stmt.span,
                        });
                    }
                    out.push(Stmt {
                        kind: StmtKind::Decl { var, ty, init },
                        span: stmt.span,
                    });
                }
                _ => self.stmt_into(stmt, &mut out),
            }
        }
        out.extend(checks);
        out
    }

    /// A declared type's sizes and its transform, lowered.
    fn sized_type(&mut self, ty: &ast::SizedType) -> (SizedType, Transform) {
        use ast::SizedTypeKind as K;
        let bounds = |l: &mut Self, b: &ast::Bounds| -> Transform {
            match b {
                ast::Bounds::None => Transform::Identity,
                ast::Bounds::Lower(e) => Transform::Lower(l.expr(e)),
                ast::Bounds::Upper(e) => Transform::Upper(l.expr(e)),
                ast::Bounds::LowerUpper(a, b) => Transform::LowerUpper(l.expr(a), l.expr(b)),
                ast::Bounds::Offset(e) => Transform::Offset(l.expr(e)),
                ast::Bounds::Multiplier(e) => Transform::Multiplier(l.expr(e)),
                ast::Bounds::OffsetMultiplier(a, b) => {
                    Transform::OffsetMultiplier(l.expr(a), l.expr(b))
                }
            }
        };
        match &ty.kind {
            K::Int(b) => (SizedType::Int, bounds(self, b)),
            K::Real(b) => (SizedType::Real, bounds(self, b)),
            K::Complex => (SizedType::Complex, Transform::Identity),
            K::Vector { bounds: b, size } => {
                let t = bounds(self, b);
                (SizedType::Vector(self.expr(size)), t)
            }
            K::RowVector { bounds: b, size } => {
                let t = bounds(self, b);
                (SizedType::RowVector(self.expr(size)), t)
            }
            K::Matrix {
                bounds: b,
                rows,
                cols,
            } => {
                let t = bounds(self, b);
                (SizedType::Matrix(self.expr(rows), self.expr(cols)), t)
            }
            K::ComplexVector { size } => (
                SizedType::ComplexVector(self.expr(size)),
                Transform::Identity,
            ),
            K::ComplexRowVector { size } => (
                SizedType::ComplexRowVector(self.expr(size)),
                Transform::Identity,
            ),
            K::ComplexMatrix { rows, cols } => (
                SizedType::ComplexMatrix(self.expr(rows), self.expr(cols)),
                Transform::Identity,
            ),
            K::Constrained { kind, sizes } => self.constrained_type(*kind, sizes),
            K::Array { dims, elem } => {
                let (mut inner, transform) = self.sized_type(elem);
                for d in dims.iter().rev() {
                    inner = SizedType::Array(self.expr(d), Box::new(inner));
                }
                (inner, transform)
            }
            K::Tuple(items) => {
                let (tys, transforms): (Vec<_>, Vec<_>) =
                    items.iter().map(|t| self.sized_type(t)).unzip();
                let transform = if transforms.iter().all(|t| *t == Transform::Identity) {
                    Transform::Identity
                } else {
                    Transform::Tuple(transforms)
                };
                (SizedType::Tuple(tys), transform)
            }
        }
    }

    fn constrained_type(
        &mut self,
        kind: ast::ConstrainedKind,
        sizes: &[ast::Expr],
    ) -> (SizedType, Transform) {
        use ast::ConstrainedKind as C;
        let sizes: Vec<_> = sizes.iter().map(|e| self.expr(e)).collect();
        let first = sizes[0].clone();
        let second = sizes.get(1).cloned();
        let square = |n: super::Expr| SizedType::Matrix(n.clone(), n);
        match kind {
            C::Simplex => (SizedType::Vector(first), Transform::Simplex),
            C::UnitVector => (SizedType::Vector(first), Transform::UnitVector),
            C::SumToZeroVector => (SizedType::Vector(first), Transform::SumToZeroVector),
            C::Ordered => (SizedType::Vector(first), Transform::Ordered),
            C::PositiveOrdered => (SizedType::Vector(first), Transform::PositiveOrdered),
            C::SumToZeroMatrix => (
                SizedType::Matrix(first, second.expect("checked: two sizes")),
                Transform::SumToZeroMatrix,
            ),
            C::CholeskyFactorCorr => (square(first), Transform::CholeskyFactorCorr),
            C::CholeskyFactorCov => match second {
                Some(cols) => (SizedType::Matrix(first, cols), Transform::CholeskyFactorCov),
                None => (square(first), Transform::CholeskyFactorCov),
            },
            C::CorrMatrix => (square(first), Transform::CorrMatrix),
            C::CovMatrix => (square(first), Transform::CovMatrix),
            C::ColumnStochasticMatrix => (
                SizedType::Matrix(first, second.expect("checked: two sizes")),
                Transform::ColumnStochasticMatrix,
            ),
            C::RowStochasticMatrix => (
                SizedType::Matrix(first, second.expect("checked: two sizes")),
                Transform::RowStochasticMatrix,
            ),
        }
    }
}
