//! Choosing the front-end entry point for a file.

use super::source::SourceFile;
use language::{Diagnostic, FrontEnd};

/// Parse and check `file`. Standalone functions files are parsed without
/// the `functions { }` wrapper, then checked the same way as
/// [`language::compile_front_end`] does: only if parsing found no error.
pub fn compile(file: &SourceFile) -> FrontEnd {
    if !file.functions_only {
        return language::compile_front_end(&file.text);
    }
    let (program, mut diagnostics) = language::syntax::parse_functions_only(&file.text);
    let checked = if diagnostics.iter().any(Diagnostic::is_error) {
        None
    } else {
        let (checked, semantic) = language::check::check_program(&program);
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
