//! Document formatting with the compiler's canonical formatter
//! (`language::format`, the same as `bat fmt`).

use language::format::{self, SourceKind as FormatKind};

use crate::document::{Document, SourceKind};

/// The formatted text when it differs from the document's, `Ok(None)` when
/// the document is already canonical, and `Err` with a reason when it has
/// syntax errors (nothing is formatted then).
pub fn format_document(doc: &Document, kind: SourceKind) -> Result<Option<String>, String> {
    let kind = match kind {
        SourceKind::Program => FormatKind::Program,
        SourceKind::Functions => FormatKind::Functions,
    };
    match format::format_source(&doc.text, kind) {
        Ok(text) if text == doc.text => Ok(None),
        Ok(text) => Ok(Some(text)),
        Err(errors) => Err(errors
            .first()
            .map_or_else(|| "syntax errors".to_string(), |d| d.message.clone())),
    }
}
