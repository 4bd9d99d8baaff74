//! `--message-format json`: one JSON object per diagnostic per line.
//!
//! Positions are 1-based; columns count characters. `end_line`/`end_column`
//! is the position just after the last character of the span (exclusive).

use language::diagnostic::Label;
use language::{Diagnostic, LineIndex, Span};
use serde::Serialize;

#[derive(Serialize)]
pub struct JsonDiagnostic<'a> {
    pub severity: &'static str,
    pub kind: &'static str,
    pub code: &'static str,
    pub message: &'a str,
    pub file: &'a str,
    #[serde(flatten)]
    pub position: Position,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<JsonLabel<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub notes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<&'a str>,
}

#[derive(Serialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

#[derive(Serialize)]
pub struct JsonLabel<'a> {
    pub primary: bool,
    pub message: &'a str,
    #[serde(flatten)]
    pub position: Position,
}

fn position(index: &LineIndex, text: &str, span: Span) -> Position {
    let (line, column) = index.line_col(text, span.start as usize);
    let (end_line, end_column) = index.line_col(text, span.end as usize);
    Position {
        line,
        column,
        end_line,
        end_column,
    }
}

/// JSON lines for all diagnostics of one file.
pub fn to_json_lines(file: &str, text: &str, diagnostics: &[Diagnostic]) -> String {
    let index = LineIndex::new(text);
    let mut out = String::new();
    for d in diagnostics {
        let json = convert(file, text, &index, d);
        // Serialising plain strings and integers cannot fail.
        out.push_str(&serde_json::to_string(&json).unwrap_or_default());
        out.push('\n');
    }
    out
}

fn convert<'a>(
    file: &'a str,
    text: &str,
    index: &LineIndex,
    d: &'a Diagnostic,
) -> JsonDiagnostic<'a> {
    let label = |l: &'a Label, primary: bool| JsonLabel {
        primary,
        message: &l.message,
        position: position(index, text, l.span),
    };
    // The primary label is listed only when it says something or when
    // secondary labels need it for context.
    let mut labels = Vec::new();
    if !d.primary.message.is_empty() || !d.secondary.is_empty() {
        labels.push(label(&d.primary, true));
    }
    labels.extend(d.secondary.iter().map(|l| label(l, false)));
    JsonDiagnostic {
        severity: d.severity.as_str(),
        kind: d.kind.as_str(),
        code: d.code,
        message: &d.message,
        file,
        position: position(index, text, d.primary.span),
        labels,
        notes: &d.notes,
        help: d.help.as_deref(),
    }
}
