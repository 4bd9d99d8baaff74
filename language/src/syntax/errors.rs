use super::lexer::{Spanned, Token};
use crate::diagnostic::Diagnostic;
pub fn lexical_errors(_: &str, _: &[Spanned<'_>]) -> Vec<Diagnostic> {
    Vec::new()
}
pub fn parse_errors(
    _: &str,
    _: &[Spanned<'_>],
    _: Vec<lalrpop_util::ErrorRecovery<usize, Token<'_>, &'static str>>,
) -> Vec<Diagnostic> {
    Vec::new()
}
