//! bat's compiler for the Stan language.
//!
//! Phases, each with one entry point and a printable result:
//!
//! | phase | entry point | output |
//! |---|---|---|
//! | lex + parse | [`syntax::parse`] | [`syntax::ast::Program`] + syntax diagnostics |
//! | check | [`check::check_program`] | [`check::CheckedProgram`] + semantic diagnostics |
//! | lower | [`mir::lower`] | [`mir::Program`] (model IR) |
//! | differentiate | [`ad::gradient`] | [`mir::GradProgram`] (forward + reverse sweep, simplified by [`simplify`]) |
//! | batch | [`batch::lower_gradient`], [`batch::pc::build`] | CFG and program-counter IRs |
//!
//! Modules depend on each other in that order only (tests/module_graph.rs).
//! Running a program is the `runtime` crate's (the reference interpreter,
//! the model instance) and the executors'. This crate does no I/O beyond
//! the source text it is handed and knows no backend.

pub mod ad;
pub mod batch;
pub mod builtins;
pub mod check;
pub mod data;
pub mod diagnostic;
pub mod format;
pub mod mir;
pub mod simplify;
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
    check_parsed(syntax::parse(source))
}

/// [`compile_front_end`] for a standalone functions file (`.stanfunctions`):
/// function definitions without the `functions { }` wrapper.
pub fn compile_functions_file(source: &str) -> FrontEnd {
    check_parsed(syntax::parse_functions_only(source))
}

/// Compile a program whose body-less function declarations are external
/// functions supplied by the host at run time (marked
/// [`mir::Function::external`]); everything else is checked as usual. This
/// is how the sampler program (`src/sampler/nuts.stan`) is compiled.
pub fn compile_with_externals(source: &str, name: &str) -> (Option<mir::Program>, Vec<Diagnostic>) {
    let (program, diagnostics) = syntax::parse(source);
    let fe = check_parsed_with((program, diagnostics), true);
    lower_checked(fe, name)
}

/// Source text to model IR: parse, check and lower. Returns the program
/// when every phase succeeded, and every diagnostic (warnings included) in
/// source order either way. `name` is the model's name (file stem).
pub fn compile_model(source: &str, name: &str) -> (Option<mir::Program>, Vec<Diagnostic>) {
    lower_checked(compile_front_end(source), name)
}

/// [`compile_model`] after the front end has run (e.g. on a functions file).
pub fn lower_checked(fe: FrontEnd, name: &str) -> (Option<mir::Program>, Vec<Diagnostic>) {
    let mut diagnostics = fe.diagnostics;
    let checked = match fe.checked {
        Some(c) if !diagnostics.iter().any(Diagnostic::is_error) => c,
        _ => return (None, diagnostics),
    };
    // ODE solves with autodiff inputs integrate their sensitivities, which
    // need the reverse function of their right-hand side.
    match mir::lower(&fe.program, &checked, name).and_then(ad::attach_ode_sensitivities) {
        Ok(program) => (Some(program), diagnostics),
        Err(more) => {
            diagnostics.extend(more);
            (None, diagnostics)
        }
    }
}

fn check_parsed(parsed: (syntax::ast::Program, Vec<Diagnostic>)) -> FrontEnd {
    check_parsed_with(parsed, false)
}

fn check_parsed_with(
    (program, mut diagnostics): (syntax::ast::Program, Vec<Diagnostic>),
    allow_external: bool,
) -> FrontEnd {
    let checked = if diagnostics.iter().any(Diagnostic::is_error) {
        None
    } else {
        let (checked, semantic) = check::check_program_with(&program, allow_external);
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
