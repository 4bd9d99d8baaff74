//! User-defined functions: declarations, overloads, suffix rules, bodies.

use super::codes;
use super::compat::{display_signature, is_discrete};
use super::context::{Checker, FunSuffix, FunctionContext};
use super::decl::unsized_to_type;
use super::env::Origin;
use super::higher_order::is_higher_order;
use super::stmt::Flow;
use super::{Symbol, SymbolKind};
use crate::diagnostic::Label;
use crate::span::Span;
use crate::syntax::ast::{BlockKind, FunDef, ReturnType};
use crate::types::{AdLevel, FunctionType, Type};

fn signature_of(def: &FunDef) -> (Vec<(AdLevel, Type)>, Option<Type>) {
    let args = def
        .args
        .iter()
        .map(|a| {
            let ad = if a.data_only {
                AdLevel::DataOnly
            } else {
                AdLevel::AutoDiff
            };
            (ad, unsized_to_type(&a.ty))
        })
        .collect();
    let ret = match &def.return_type {
        ReturnType::Void(_) => None,
        ReturnType::Type(t) => Some(unsized_to_type(t)),
    };
    (args, ret)
}

fn same_arg_types(a: &[(AdLevel, Type)], b: &[(AdLevel, Type)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|((_, x), (_, y))| x == y)
}

impl Checker {
    /// First pass over the functions block: add every signature so bodies
    /// can call any function (recursion, mutual recursion).
    pub fn declare_function(&mut self, def: &FunDef, span: Span, program_span: Span) {
        let name = def.name.name.as_str();
        self.report_reserved(name, def.name.span);
        let (args, ret) = signature_of(def);
        let ty = Type::Function(Box::new(FunctionType {
            args: args.clone(),
            ret: ret.clone(),
        }));
        if is_higher_order(name) {
            self.error(
                codes::BAD_FUNCTION_DEF,
                format!("Identifier '{name}' clashes with a Stan Math library function."),
                def.name.span,
            );
        } else if super::expr::is_unnormalized(name) {
            self.error(
                codes::BAD_FUNCTION_DEF,
                format!(
                    "Identifier '{name}' has a _lupdf/_lupmf suffix, which is only allowed for \
                     functions called in the model block or in _lpdf/_lpmf functions; define it \
                     with the _lpdf/_lpmf suffix instead."
                ),
                def.name.span,
            );
        }
        let existing = self.env.functions(name).to_vec();
        let forward = existing.iter().copied().find(|&id| {
            let s = &self.out.symbols[id];
            s.kind == SymbolKind::Function { defined: false } && s.ty == ty
        });
        if let Some(id) = forward {
            if def.body.is_none() {
                let previous = self.out.symbols[id].def_span;
                self.error(
                    codes::BAD_FUNCTION_DEF,
                    format!(
                        "Function '{name}' has already been declared for these argument types."
                    ),
                    span,
                )
                .secondary
                .push(Label {
                    span: previous,
                    message: "first declared here".into(),
                });
            } else {
                // The definition of an earlier forward declaration.
                let symbol = &mut self.out.symbols[id];
                symbol.kind = SymbolKind::Function { defined: true };
                symbol.def_span = def.name.span;
            }
            return;
        }
        // A new overload must differ in argument types from every other
        // signature of that name, user-defined or built-in.
        let mut clash: Option<(Option<Type>, Option<Span>)> = None;
        for &id in &existing {
            if let Type::Function(ft) = &self.out.symbols[id].ty
                && same_arg_types(&ft.args, &args)
            {
                clash = Some((ft.ret.clone(), Some(self.out.symbols[id].def_span)));
                break;
            }
        }
        if clash.is_none() {
            let builtin = self.builtin_signatures(name);
            if let Some(s) = builtin.iter().find(|s| same_arg_types(&s.args, &args)) {
                clash = Some((s.ret.clone(), None));
            }
        }
        if let Some((other_ret, other_span)) = clash {
            let message = if other_ret != ret {
                format!(
                    "Function '{name}' has already been declared with these argument types but \
                     return type {}; overloads may not differ only in return type.",
                    other_ret.as_ref().map_or("void".into(), Type::to_string)
                )
            } else if other_span.is_none() {
                format!(
                    "Function '{name}' is already declared in the Stan Math library with \
                     signature {}.",
                    display_signature(&args, ret.as_ref())
                )
            } else {
                format!(
                    "Function '{name}' has already been declared for signature {}.",
                    display_signature(&args, ret.as_ref())
                )
            };
            let d = self.error(codes::BAD_FUNCTION_DEF, message, span);
            if let Some(s) = other_span {
                d.secondary.push(Label {
                    span: s,
                    message: "previously declared here".into(),
                });
            }
            return;
        }
        let mut declared = format!(
            "{} {name}(",
            ret.as_ref().map_or("void".into(), Type::to_string)
        );
        let arg_text: Vec<String> = def
            .args
            .iter()
            .zip(&args)
            .map(|(a, (ad, t))| {
                let data = if *ad == AdLevel::DataOnly {
                    "data "
                } else {
                    ""
                };
                format!("{data}{t} {}", a.name.name)
            })
            .collect();
        declared.push_str(&arg_text.join(", "));
        declared.push(')');
        let id = self.add_symbol(Symbol {
            name: name.to_string(),
            def_span: def.name.span,
            kind: SymbolKind::Function {
                defined: def.body.is_some(),
            },
            ty,
            ad: AdLevel::DataOnly,
            declared,
            scope_span: program_span,
        });
        self.env.add_function(name, id);
    }

    /// Second pass: suffix rules and the body.
    pub fn function_body(&mut self, def: &FunDef, span: Span) {
        let name = def.name.name.as_str();
        let (args, ret) = signature_of(def);
        let suffix = FunSuffix::of(name);
        let is_dist = [
            "_log", "_lpdf", "_lupdf", "_lpmf", "_lupmf", "_cdf", "_lcdf", "_lccdf",
        ]
        .iter()
        .any(|s| name.ends_with(s));
        if is_dist && ret != Some(Type::Real) {
            self.error(
                codes::BAD_FUNCTION_DEF,
                format!(
                    "Real return type required for probability functions ending in _log, _lpdf, \
                     _lupdf, _lpmf, _lupmf, _cdf, _lcdf or _lccdf; found {}.",
                    ret.as_ref().map_or("void".into(), Type::to_string)
                ),
                span,
            );
        }
        let first = args.first().map(|(_, t)| t);
        if name.ends_with("_lpdf") && first.is_none_or(is_discrete) {
            self.error(
                codes::BAD_FUNCTION_DEF,
                format!(
                    "Probability density functions require real variates (first argument). \
                     Instead found type {}.",
                    first.map_or("nothing".into(), Type::to_string)
                ),
                span,
            );
        }
        if name.ends_with("_lpmf") && !first.is_some_and(is_discrete) {
            self.error(
                codes::BAD_FUNCTION_DEF,
                format!(
                    "Probability mass functions require integer variates (first argument). \
                     Instead found type {}.",
                    first.map_or("nothing".into(), Type::to_string)
                ),
                span,
            );
        }
        for (i, a) in def.args.iter().enumerate() {
            self.report_reserved(&a.name.name, a.name.span);
            if def.args[..i].iter().any(|b| b.name.name == a.name.name) {
                self.error(
                    codes::ALREADY_DECLARED,
                    format!(
                        "All function arguments must have distinct identifiers; '{}' is repeated.",
                        a.name.name
                    ),
                    span,
                );
            }
        }
        let Some(body) = &def.body else {
            return;
        };
        self.env.push_scope();
        for (a, (ad, t)) in def.args.iter().zip(&args) {
            if self.env.var(&a.name.name).is_some() {
                continue;
            }
            let origin = match ad {
                AdLevel::DataOnly => Origin::Block(BlockKind::Data),
                AdLevel::AutoDiff => Origin::Block(BlockKind::Parameters),
            };
            let data = if *ad == AdLevel::DataOnly {
                "data "
            } else {
                ""
            };
            self.declare_var(
                &a.name.name,
                a.name.span,
                SymbolKind::FunArg,
                t.clone(),
                format!("{data}{t}"),
                body.span,
                true,
                origin,
            );
        }
        let saved_block = self.block;
        self.block = Origin::Functions;
        self.function = Some(FunctionContext {
            name: name.to_string(),
            suffix,
            ret: ret.clone(),
        });
        let errors_before = self.error_count();
        let flow = self.stmt(body, body.span);
        let body_had_errors = self.error_count() > errors_before;
        self.function = None;
        self.block = saved_block;
        self.env.pop_scope();
        // stanc3 stops at the first error, so a body with errors never gets
        // the return-path check; neither do we (one mistake, one message).
        if ret.is_some() && flow != Flow::Complete && !body_had_errors {
            self.error(
                codes::MISSING_RETURN,
                "Function bodies must contain a return statement of correct type in every branch.",
                span,
            )
            .secondary
            .push(Label {
                span: def.name.span,
                message: format!("'{name}' may end without returning"),
            });
        }
    }

    /// Forward declarations must be defined. Like stanc3 (which checks
    /// this after the functions block), only when nothing else was wrong
    /// there, so a redefinition is not also reported as a missing one.
    pub fn verify_functions_defined(&mut self) {
        if self.error_count() > 0 {
            return;
        }
        let undefined: Vec<(String, Span)> = self
            .out
            .symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::Function { defined: false })
            .map(|s| (s.name.clone(), s.def_span))
            .collect();
        for (name, span) in undefined {
            self.error(
                codes::BAD_FUNCTION_DEF,
                format!("Function '{name}' is declared without specifying a definition."),
                span,
            );
        }
    }
}
