//! The checker's state and the program-level walk.

use std::collections::HashMap;

use super::env::{Env, Origin, VarEntry};
use super::sigs::{self, Signature};
use super::{CheckedProgram, Symbol, SymbolId, SymbolKind, codes};
use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::ast::{BlockKind, Program, StmtKind};
use crate::types::{AdLevel, Type};

/// The kind of function a body belongs to, from its name's suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunSuffix {
    Plain,
    Rng,
    Lpdf,
    Lpmf,
    /// `_lp`: may use `target +=`.
    Target,
    Jacobian,
}

impl FunSuffix {
    pub fn of(name: &str) -> FunSuffix {
        if name.ends_with("_rng") {
            FunSuffix::Rng
        } else if name.ends_with("_lpdf") || name.ends_with("_lupdf") {
            FunSuffix::Lpdf
        } else if name.ends_with("_lpmf") || name.ends_with("_lupmf") {
            FunSuffix::Lpmf
        } else if name.ends_with("_lp") {
            FunSuffix::Target
        } else if name.ends_with("_jacobian") {
            FunSuffix::Jacobian
        } else {
            FunSuffix::Plain
        }
    }
}

/// The function whose body is being checked.
#[derive(Clone, Debug)]
pub struct FunctionContext {
    pub name: String,
    pub suffix: FunSuffix,
    /// `None` for void functions.
    pub ret: Option<Type>,
}

pub struct Checker {
    pub out: CheckedProgram,
    pub diags: Vec<Diagnostic>,
    pub env: Env,
    /// The block being checked (`Origin::Functions` in function bodies).
    pub block: Origin,
    pub function: Option<FunctionContext>,
    pub loop_depth: u32,
    /// Checking the sizes of a top-level declaration.
    pub in_toplevel_decl: bool,
    /// Likelihood callbacks passed to Laplace functions, with the use site.
    pub laplace_likelihoods: Vec<(String, Span)>,
    /// Functions (built-in or user) each user function calls or passes.
    pub function_callees: HashMap<String, Vec<String>>,
    /// Body-less function declarations are external functions supplied by
    /// the host (the sampler program's intrinsics), not missing definitions.
    pub allow_external: bool,
}

impl Checker {
    pub fn new() -> Checker {
        Checker {
            out: CheckedProgram::default(),
            diags: Vec::new(),
            env: Env::new(),
            block: Origin::Functions,
            function: None,
            loop_depth: 0,
            in_toplevel_decl: false,
            laplace_likelihoods: Vec::new(),
            function_callees: HashMap::new(),
            allow_external: false,
        }
    }

    pub fn finish(self) -> (CheckedProgram, Vec<Diagnostic>) {
        (self.out, self.diags)
    }

    pub fn check_program(&mut self, program: &Program) {
        // Roughly one expression per few bytes of source: reserve once
        // instead of rehashing as the map grows.
        let estimate = program.span.end as usize / 8;
        self.out.expr_types.reserve(estimate);
        // All user functions are visible everywhere (and in each other's
        // bodies), so declare them first as stanc3 does.
        if let Some(functions) = program
            .blocks
            .iter()
            .find(|b| b.kind == BlockKind::Functions)
        {
            for stmt in &functions.stmts {
                if let StmtKind::FunDef(def) = &stmt.kind {
                    self.declare_function(def, stmt.span, program.span);
                }
            }
        }
        for block in &program.blocks {
            self.block = match block.kind {
                BlockKind::Functions => Origin::Functions,
                kind => Origin::Block(kind),
            };
            // Model-block variables are local to it; generated quantities
            // cannot see them.
            let scoped = block.kind == BlockKind::Model;
            if scoped {
                self.env.push_scope();
            }
            self.check_toplevel_stmts(&block.stmts, block.kind, block.span, program.span);
            if scoped {
                self.env.pop_scope();
            }
            if block.kind == BlockKind::Functions && !self.allow_external {
                self.verify_functions_defined();
            }
        }
        self.verify_laplace_autodiff();
    }

    // ------------------------------------------------------------ helpers

    pub fn error(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
    ) -> &mut Diagnostic {
        self.diags
            .push(Diagnostic::error(Kind::Semantic, code, message, span));
        self.diags.last_mut().expect("just pushed")
    }

    pub fn warning(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
    ) -> &mut Diagnostic {
        self.diags
            .push(Diagnostic::warning(Kind::Semantic, code, message, span));
        self.diags.last_mut().expect("just pushed")
    }

    /// Remember that the function being checked calls (or passes) `callee`.
    pub fn note_callee(&mut self, callee: &str) {
        if let Some(f) = &self.function {
            self.function_callees
                .entry(f.name.clone())
                .or_default()
                .push(super::expr::normalized_name(callee).into_owned());
        }
    }

    pub fn error_count(&self) -> usize {
        self.diags.iter().filter(|d| d.is_error()).count()
    }

    pub fn builtin_signatures(&self, name: &str) -> &'static [Signature] {
        sigs::signatures(name)
    }

    pub fn is_builtin_function(&mut self, name: &str) -> bool {
        !self.builtin_signatures(name).is_empty() || sigs::is_special(name)
    }

    pub fn add_symbol(&mut self, symbol: Symbol) -> SymbolId {
        self.out.symbols.push(symbol);
        self.out.symbols.len() - 1
    }

    /// Declare a variable in the current scope (after the freshness checks
    /// done by the caller).
    #[allow(clippy::too_many_arguments)]
    pub fn declare_var(
        &mut self,
        name: &str,
        span: Span,
        kind: SymbolKind,
        ty: Type,
        declared: String,
        scope_span: Span,
        readonly: bool,
        origin: Origin,
    ) -> SymbolId {
        let global = matches!(kind, SymbolKind::BlockVar(_));
        let ad = self.ad_of_origin(origin, &ty);
        let id = self.add_symbol(Symbol {
            name: name.to_string(),
            def_span: span,
            kind,
            ty,
            ad,
            declared,
            scope_span,
        });
        self.env.add_var(
            name,
            VarEntry {
                id,
                origin,
                global,
                readonly,
            },
        );
        id
    }

    /// stanc3's `calculate_autodifftype`: parameters, transformed
    /// parameters, model locals and function locals are autodiff unless
    /// integer; everything is data in generated quantities.
    pub fn ad_of_origin(&self, origin: Origin, ty: &Type) -> AdLevel {
        let autodiff_origin = matches!(
            origin,
            Origin::Functions
                | Origin::Block(
                    BlockKind::Parameters | BlockKind::TransformedParameters | BlockKind::Model
                )
        );
        if autodiff_origin
            && !super::compat::is_discrete(ty)
            && !self.block.is(BlockKind::GeneratedQuantities)
        {
            AdLevel::AutoDiff
        } else {
            AdLevel::DataOnly
        }
    }

    pub fn in_function(&self, suffixes: &[FunSuffix]) -> bool {
        self.function
            .as_ref()
            .is_some_and(|f| suffixes.contains(&f.suffix))
    }

    pub fn record_type(&mut self, span: Span, ty: &Type, ad: AdLevel) {
        self.out.expr_types.insert(span, (ty.clone(), ad));
    }

    pub fn reference(&mut self, span: Span, id: SymbolId) {
        self.out.references.push((span, id));
    }

    pub fn report_reserved(&mut self, name: &str, span: Span) -> bool {
        const RESERVED: [&str; 15] = [
            "generated",
            "quantities",
            "transformed",
            "repeat",
            "until",
            "then",
            "true",
            "false",
            "typedef",
            "struct",
            "var",
            "export",
            "extern",
            "static",
            "auto",
        ];
        if name.ends_with("__") || RESERVED.contains(&name) {
            self.error(
                codes::RESERVED_NAME,
                format!("Identifier '{name}' clashes with a reserved keyword."),
                span,
            );
            true
        } else {
            false
        }
    }
}
