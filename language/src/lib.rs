//! bat's compiler for the Stan language.
//!
//! Phases, each with one entry point and a printable result:
//!
//! | phase | entry point | output |
//! |---|---|---|
//! | lex + parse | [`syntax::parse`] | [`syntax::ast::Program`] + syntax diagnostics |
//! | check | [`check::check_program`] | [`check::CheckedProgram`] + semantic diagnostics |
//!
//! Later phases (model IR, AD, batching IRs) consume the checked program.
//! This crate does no I/O beyond the source text it is handed and knows no
//! backend.

pub mod ad;
pub mod builtins;
pub mod check;
pub mod data;
pub mod diagnostic;
pub mod interp;
pub mod mir;
pub mod span;
pub mod syntax;
pub mod types;
pub mod value;

pub use diagnostic::{Diagnostic, Kind, Severity};
pub use span::{LineIndex, Span};

/// Result of running the front end over one source text.
pub struct FrontEnd {
    pub program: syntax::ast::Program,
    pub checked: Option<check::CheckedProgram>,
    /// All diagnostics of all phases, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parse and check `source`. Checking runs only if parsing produced no
/// errors (as stanc does), so semantic errors never cascade from syntax ones.
pub fn compile_front_end(source: &str) -> FrontEnd {
    let (program, mut diagnostics) = syntax::parse(source);
    let checked = if diagnostics.iter().any(Diagnostic::is_error) {
        None
    } else {
        let (checked, semantic) = check::check_program(&program);
        diagnostics.extend(semantic);
        Some(checked)
    };
    diagnostics.sort_by_key(|d| (d.primary.span.start, d.primary.span.end));
    FrontEnd {
        program,
        checked,
        diagnostics,
    }
}
