//! Semantic checking: name resolution, types, block rules.

use crate::diagnostic::Diagnostic;
use crate::syntax::ast::Program;

/// What the checker learned about a program (types of expressions,
/// resolved names, chosen overloads) for later phases and the LSP.
#[derive(Debug, Default)]
pub struct CheckedProgram {}

/// Check a parsed program, collecting every semantic error and warning.
pub fn check_program(program: &Program) -> (CheckedProgram, Vec<Diagnostic>) {
    let _ = program;
    todo!("checker: owned by the checker work")
}
