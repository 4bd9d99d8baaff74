//! The compiler's [`Diagnostic`]s as LSP diagnostics.
//!
//! The primary label becomes the range; its text, the notes and the help are
//! appended to the message (editors show one message per diagnostic);
//! secondary labels become related information pointing into the same file.

use language::{Diagnostic, Kind, Severity};
use tower_lsp::lsp_types::{
    self as lsp, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Url,
};

use crate::document::Document;

/// Shown as the diagnostic's source in editors.
pub const SOURCE: &str = "bat";

pub fn to_lsp(document: &Document, uri: &Url) -> Vec<lsp::Diagnostic> {
    document
        .diagnostics
        .iter()
        .map(|d| convert(document, uri, d))
        .collect()
}

fn convert(document: &Document, uri: &Url, d: &Diagnostic) -> lsp::Diagnostic {
    let text = &document.text;
    let related: Vec<_> = d
        .secondary
        .iter()
        .map(|label| DiagnosticRelatedInformation {
            location: Location::new(uri.clone(), document.positions.range(text, label.span)),
            message: if label.message.is_empty() {
                "related".to_owned()
            } else {
                label.message.clone()
            },
        })
        .collect();
    lsp::Diagnostic {
        range: document.positions.range(text, d.primary.span),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.to_owned())),
        source: Some(SOURCE.to_owned()),
        message: message(d),
        related_information: (!related.is_empty()).then_some(related),
        data: Some(serde_json::json!({ "kind": kind_name(d.kind) })),
        ..Default::default()
    }
}

fn kind_name(kind: Kind) -> &'static str {
    kind.as_str()
}

/// The message with the primary label, notes and help, one per line.
fn message(d: &Diagnostic) -> String {
    let mut message = d.message.clone();
    if !d.primary.message.is_empty() && d.primary.message != d.message {
        message.push('\n');
        message.push_str(&d.primary.message);
    }
    for note in &d.notes {
        message.push_str("\nnote: ");
        message.push_str(note);
    }
    if let Some(help) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    message
}
