//! One neutral diagnostic type for every phase.
//!
//! Phases collect [`Diagnostic`]s instead of stopping at the first error.
//! The terminal renders them with codespan-reporting ([`render`]); the LSP
//! crate converts them to LSP diagnostics at its edge; `bat check
//! --message-format json` serialises them one per line.

use crate::span::Span;
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Which phase found the problem: stanc3's two error classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Lexing or parsing: the text is not a Stan program.
    Syntax,
    /// Names, types, block rules: the program is well formed but invalid.
    Semantic,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Syntax => "syntax",
            Kind::Semantic => "semantic",
        }
    }
}

/// A labelled span. The primary label says what is wrong where; secondary
/// labels point at related places (the earlier declaration, the signature).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: Kind,
    /// Stable identifier, e.g. `E0101`; see [`crate::codes`] for the list.
    pub code: &'static str,
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(
        kind: Kind,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
    ) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            kind,
            code,
            message: message.into(),
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn warning(
        kind: Kind,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
    ) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(kind, code, message, span)
        }
    }

    /// Text shown under the primary span.
    pub fn with_label(mut self, message: impl Into<String>) -> Diagnostic {
        self.primary.message = message.into();
        self
    }

    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    fn to_codespan(&self) -> cs::Diagnostic<()> {
        let severity = match self.severity {
            Severity::Error => cs::Severity::Error,
            Severity::Warning => cs::Severity::Warning,
        };
        let mut labels = vec![
            cs::Label::primary((), self.primary.span.range()).with_message(&self.primary.message),
        ];
        labels.extend(
            self.secondary
                .iter()
                .map(|l| cs::Label::secondary((), l.span.range()).with_message(&l.message)),
        );
        let mut notes = self.notes.clone();
        if let Some(help) = &self.help {
            notes.push(format!("help: {help}"));
        }
        cs::Diagnostic::new(severity)
            .with_code(self.code)
            .with_message(&self.message)
            .with_labels(labels)
            .with_notes(notes)
    }
}

/// Render diagnostics for one file as codespan-reporting text.
pub fn render(file_name: &str, source: &str, diagnostics: &[Diagnostic], color: bool) -> String {
    use term::termcolor::{Buffer, NoColor};
    let file = SimpleFile::new(file_name, source);
    let config = term::Config::default();
    if color {
        let mut buffer = Buffer::ansi();
        for d in diagnostics {
            let _ = term::emit_to_write_style(&mut buffer, &config, &file, &d.to_codespan());
        }
        String::from_utf8_lossy(buffer.as_slice()).into_owned()
    } else {
        let mut out = NoColor::new(Vec::new());
        for d in diagnostics {
            let _ = term::emit_to_write_style(&mut out, &config, &file, &d.to_codespan());
        }
        String::from_utf8_lossy(&out.into_inner()).into_owned()
    }
}
