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

#[cfg(test)]
mod tests {
    use super::*;
    use language::Kind;

    fn parse(line: &str) -> serde_json::Value {
        serde_json::from_str(line).expect("valid JSON")
    }

    #[test]
    fn columns_count_characters_and_end_is_exclusive() {
        // `é` is two bytes: `x` starts at byte 12 but at character column 12.
        let text = "model {\n  é x;\n}\n";
        let start = text.find('x').unwrap();
        let d = Diagnostic::error(
            Kind::Semantic,
            "E0101",
            "bad x",
            Span::new(start, start + 1),
        );
        let v = parse(to_json_lines("m.stan", text, &[d]).trim_end());
        assert_eq!(v["line"], 2);
        assert_eq!(v["column"], 5);
        assert_eq!(v["end_line"], 2);
        assert_eq!(v["end_column"], 6);
        assert_eq!(v["kind"], "semantic");
        assert_eq!(v["severity"], "error");
        assert!(v.get("labels").is_none(), "no label text, no labels");
        assert!(v.get("notes").is_none());
        assert!(v.get("help").is_none());
    }

    #[test]
    fn labels_notes_and_help_are_serialised_when_present() {
        let text = "data {\n  real a;\n  real a;\n}\n";
        let first = text.find("a;").unwrap();
        let second = text.rfind("a;").unwrap();
        let d = Diagnostic::warning(
            Kind::Semantic,
            "W0001",
            "dup",
            Span::new(second, second + 1),
        )
        .with_label("again")
        .with_secondary(Span::new(first, first + 1), "first here")
        .with_note("a note")
        .with_help("rename it");
        let lines = to_json_lines("m.stan", text, &[d.clone(), d]);
        assert_eq!(lines.lines().count(), 2, "one line per diagnostic");
        let v = parse(lines.lines().next().unwrap());
        assert_eq!(v["severity"], "warning");
        let labels = v["labels"].as_array().unwrap();
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[0]["primary"], true);
        assert_eq!(labels[0]["message"], "again");
        assert_eq!(labels[0]["line"], 3);
        assert_eq!(labels[1]["primary"], false);
        assert_eq!(labels[1]["line"], 2);
        assert_eq!(labels[1]["column"], 8);
        assert_eq!(v["notes"], serde_json::json!(["a note"]));
        assert_eq!(v["help"], "rename it");
    }
}
