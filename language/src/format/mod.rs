//! The canonical formatter (`bat fmt`, LSP formatting): Stan source →
//! canonical Stan source.
//!
//! Style (stanc3's `--auto-format`): two-space indentation, one statement
//! per line, `model {` ... `}`, spaces around binary operators and after
//! commas, unbraced bodies on their own indented line, `} else {`.
//! Comments are kept, placed by their source offsets (see [`layout`]);
//! one blank line between statements is kept where the source had one.
//! Statements longer than 80 columns break after commas and before binary
//! operators, continuation lines aligned with their bracket or operand
//! ([`wrap`]).
//!
//! Invariants (tested over the whole corpus in `tests/format_corpus.rs`):
//! - the program's tree is unchanged: `parse(format(x))` equals `parse(x)`
//!   up to spans; [`format_source`] checks this itself and refuses
//!   (returns an internal-error diagnostic) rather than change a program;
//! - idempotent: `format(format(x)) == format(x)`;
//! - every comment's text appears in the output, in source order (`//`
//!   comments without trailing whitespace);
//! - a program with syntax errors is not formatted: its diagnostics are
//!   returned instead.

mod expr;
mod layout;
mod wrap;

pub use layout::canonical_comment;

use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::{self, ast::Program};

/// Which entry point of the parser the text needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A whole program (`.stan`, `.bat`).
    Program,
    /// A standalone functions file (`.stanfunctions`).
    Functions,
}

/// Format a whole program.
pub fn format_program(source: &str) -> Result<String, Vec<Diagnostic>> {
    format_source(source, SourceKind::Program)
}

/// Format `source`; on syntax errors, returns them (errors only, in source
/// order) and formats nothing.
pub fn format_source(source: &str, kind: SourceKind) -> Result<String, Vec<Diagnostic>> {
    let program = parse_clean(source, kind)?;
    let formatted = layout::Layout::new(source, &program.comments)
        .program(&program, kind == SourceKind::Functions);
    // Never hand back a program that means something else.
    let reparsed = parse_clean(&formatted, kind).ok();
    let same = reparsed.as_ref().is_some_and(|again| {
        erase_spans(again) == erase_spans(&program)
            && again.comments.len() == program.comments.len()
    });
    if !same {
        return Err(vec![Diagnostic::error(
            Kind::Syntax,
            "E0000",
            "internal error: formatting would change this program, so it was left as is (please report it)",
            Span::new(0, 0),
        )]);
    }
    Ok(formatted)
}

fn parse_clean(source: &str, kind: SourceKind) -> Result<Program, Vec<Diagnostic>> {
    let (program, diagnostics) = match kind {
        SourceKind::Program => syntax::parse(source),
        SourceKind::Functions => syntax::parse_functions_only(source),
    };
    let errors: Vec<Diagnostic> = diagnostics
        .into_iter()
        .filter(|d| d.is_error() && d.kind == Kind::Syntax)
        .collect();
    if errors.is_empty() {
        Ok(program)
    } else {
        Err(errors)
    }
}

/// The program's blocks as text with every span removed: two programs are
/// the same tree exactly when these are equal (comments not included).
pub fn erase_spans(program: &Program) -> String {
    let text = format!("{:?}", program.blocks);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    const SPAN: &str = "Span { start: ";
    while let Some(at) = rest.find(SPAN) {
        out.push_str(&rest[..at]);
        out.push_str("Span");
        let after = &rest[at..];
        let close = after.find('}').map_or(after.len(), |i| i + 1);
        rest = &after[close..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(source: &str) -> String {
        format_program(source).unwrap_or_else(|d| panic!("{}", d[0].message))
    }

    #[test]
    fn empty_and_comment_only_programs() {
        assert_eq!(fmt(""), "");
        assert_eq!(fmt("  \n\n"), "");
        assert_eq!(fmt("// only\n\n\n/* this */"), "// only\n\n/* this */\n");
    }

    #[test]
    fn empty_blocks_and_statements() {
        assert_eq!(
            fmt("model{}generated quantities{;{}}"),
            "model {\n}\ngenerated quantities {\n  ;\n  {\n  }\n}\n"
        );
    }

    #[test]
    fn crlf_input_gives_lf_output_and_comments_lose_trailing_space() {
        let source = "model {\r\n  // note  \r\n  target += 1;\r\n}\r\n";
        assert_eq!(fmt(source), "model {\n  // note\n  target += 1;\n}\n");
    }

    #[test]
    fn nothing_follows_a_line_comment_on_its_line() {
        let source = "model { target += 1; // one\n/* two */ }";
        assert_eq!(
            fmt(source),
            "model {\n  target += 1; // one\n  /* two */\n}\n"
        );
        let source = "model { target += 1; /* a */ // b\n}";
        assert_eq!(fmt(source), "model {\n  target += 1; /* a */ // b\n}\n");
    }
}
