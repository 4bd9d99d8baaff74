//! One open document and the compiler's results for its current text.

use language::check::CheckedProgram;
use language::syntax::ast::Program;
use language::{Diagnostic, FrontEnd};

use crate::position::{Encoding, PositionMap};
use crate::symbols::{OutlineItem, outline};

/// Which entry point of the front end a file needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A whole program (`.bat`, `.stan`).
    Program,
    /// A standalone functions file (`.stanfunctions`): definitions only.
    Functions,
}

impl SourceKind {
    /// Decided by the file name, as `bat check` does.
    pub fn of_path(path: &str) -> SourceKind {
        if path.ends_with(".stanfunctions") {
            SourceKind::Functions
        } else {
            SourceKind::Program
        }
    }
}

/// A document's text and everything the compiler found in it. Rebuilt on
/// every change: the front end is fast enough (well under a millisecond per
/// kilobyte) that incremental analysis is not worth its complexity.
pub struct Document {
    pub text: String,
    pub version: i32,
    pub positions: PositionMap,
    pub program: Program,
    /// `None` when the text has syntax errors (checking did not run).
    pub checked: Option<CheckedProgram>,
    pub diagnostics: Vec<Diagnostic>,
    /// Names declared by the last text that checked (kept while the user
    /// is mid-edit and the text does not parse), for completion.
    pub last_good_names: Vec<(String, language::check::SymbolKind)>,
    /// The outline of this text, or of the last text whose parse kept its
    /// blocks (the parser gives up on some errors, e.g. a truncated file),
    /// so the outline does not vanish while the user types.
    pub outline: Vec<OutlineItem>,
}

impl Document {
    pub fn new(text: String, version: i32, kind: SourceKind, encoding: Encoding) -> Document {
        let front = compile(&text, kind);
        let positions = PositionMap::new(&text, encoding);
        let last_good_names = front
            .checked
            .as_ref()
            .map(declared_names)
            .unwrap_or_default();
        let outline = outline(&front.program, &text);
        Document {
            text,
            version,
            positions,
            program: front.program,
            checked: front.checked,
            diagnostics: front.diagnostics,
            last_good_names,
            outline,
        }
    }

    /// Like [`Document::new`], but a panic in the compiler (a bug) becomes
    /// one error diagnostic instead of taking the server down.
    pub fn new_guarded(
        text: String,
        version: i32,
        kind: SourceKind,
        encoding: Encoding,
    ) -> Document {
        let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Document::new(text.clone(), version, kind, encoding)
        }));
        attempt.unwrap_or_else(|_| {
            let diagnostic = Diagnostic::error(
                language::Kind::Syntax,
                "E0000",
                "internal error: the compiler panicked on this text (please report it)",
                language::Span::new(0, 0),
            );
            Document {
                positions: PositionMap::new(&text, encoding),
                text,
                version,
                program: Program::default(),
                checked: None,
                diagnostics: vec![diagnostic],
                last_good_names: Vec::new(),
                outline: Vec::new(),
            }
        })
    }

    /// Replace the text, keeping the names of the last good text if the new
    /// one does not check.
    pub fn update(&mut self, text: String, version: i32, kind: SourceKind, encoding: Encoding) {
        self.replace_with(Document::new_guarded(text, version, kind, encoding));
    }

    /// Become `next` (an analysis of newer text), keeping the names and
    /// outline of the last good text as [`Document::update`] does.
    pub fn replace_with(&mut self, next: Document) {
        let previous_names = std::mem::take(&mut self.last_good_names);
        let previous_outline = std::mem::take(&mut self.outline);
        *self = next;
        if self.checked.is_none() {
            self.last_good_names = previous_names;
        }
        if self.program.blocks.is_empty() {
            self.outline = previous_outline;
        }
    }

    /// `offset` clamped to the text and moved back to a character boundary,
    /// so every query is safe whatever offset it is given.
    pub fn clamp(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// The identifier-like word touching byte `offset`, with its span.
    pub fn word_at(&self, offset: usize) -> Option<(usize, usize)> {
        word_at(&self.text, offset)
    }
}

fn declared_names(checked: &CheckedProgram) -> Vec<(String, language::check::SymbolKind)> {
    checked
        .symbols
        .iter()
        .map(|s| (s.name.clone(), s.kind.clone()))
        .collect()
}

fn compile(text: &str, kind: SourceKind) -> FrontEnd {
    match kind {
        SourceKind::Program => language::compile_front_end(text),
        SourceKind::Functions => {
            let (program, mut diagnostics) = language::syntax::parse_functions_only(text);
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
    }
}

pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Byte range of the identifier-like word containing or ending at `offset`.
pub fn word_at(text: &str, offset: usize) -> Option<(usize, usize)> {
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_ident_char(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = offset
        + text[offset..]
            .char_indices()
            .find(|(_, c)| !is_ident_char(*c))
            .map_or(text.len() - offset, |(i, _)| i);
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_at_finds_identifier_around_offset() {
        let text = "y ~ normal(mu, sigma);";
        let mu = text.find("mu").unwrap();
        assert_eq!(word_at(text, mu), Some((mu, mu + 2)));
        assert_eq!(word_at(text, mu + 1), Some((mu, mu + 2)));
        assert_eq!(word_at(text, mu + 2), Some((mu, mu + 2)));
        assert_eq!(word_at(text, text.find('~').unwrap()), None);
    }

    #[test]
    fn names_survive_a_syntax_error() {
        let good = "data { real alpha_value; }";
        let mut doc = Document::new(good.into(), 1, SourceKind::Program, Encoding::Utf16);
        assert!(doc.checked.is_some());
        doc.update(
            "data { real alpha_value; } model { y ~ }".into(),
            2,
            SourceKind::Program,
            Encoding::Utf16,
        );
        assert!(doc.checked.is_none());
        assert!(doc.last_good_names.iter().any(|(n, _)| n == "alpha_value"));
    }
}
