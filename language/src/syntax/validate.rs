use crate::diagnostic::Diagnostic;
pub fn validate(_: &super::ast::Program, _: bool) -> Vec<Diagnostic> {
    Vec::new()
}
