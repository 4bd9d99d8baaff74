//! Choosing the front-end entry point for a file.

use super::source::SourceFile;
use language::FrontEnd;

/// Parse and check `file` (standalone functions files without the
/// `functions { }` wrapper).
pub fn compile(file: &SourceFile) -> FrontEnd {
    if file.functions_only {
        language::compile_functions_file(&file.text)
    } else {
        language::compile_front_end(&file.text)
    }
}
