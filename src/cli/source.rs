//! Loading source files: I/O errors and encoding problems become messages
//! or diagnostics, never panics and never silent lossy conversion.

use language::{Diagnostic, Kind, LineIndex, Span};
use std::path::Path;

/// Bytes that are not UTF-8 are an invalid character to the lexer too.
const INVALID_UTF8: &str = language::syntax::codes::INVALID_CHARACTER;

/// A program text and the name it is reported under.
pub struct SourceFile {
    pub name: String,
    pub text: String,
    /// A standalone functions file (`.stanfunctions`): function
    /// definitions without the `functions { }` wrapper.
    pub functions_only: bool,
}

pub enum LoadFailure {
    /// The file could not be read at all; the message names file and reason.
    Unreadable(String),
    /// The bytes are not valid UTF-8. `file.text` is a display-only copy
    /// (invalid bytes replaced) that `diagnostic` points into.
    InvalidUtf8 {
        file: SourceFile,
        diagnostic: Box<Diagnostic>,
    },
}

pub fn load(path: &Path) -> Result<SourceFile, LoadFailure> {
    let name = path.display().to_string();
    let functions_only = path.extension().is_some_and(|ext| ext == "stanfunctions");
    let bytes = std::fs::read(path)
        .map_err(|err| LoadFailure::Unreadable(format!("cannot read `{name}`: {err}")))?;
    // Spans are u32 byte offsets; a larger text cannot be addressed.
    if bytes.len() > u32::MAX as usize {
        return Err(LoadFailure::Unreadable(format!(
            "cannot check `{name}`: file is {} bytes, more than the {} bytes bat can address",
            bytes.len(),
            u32::MAX
        )));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile {
            name,
            text,
            functions_only,
        }),
        Err(err) => {
            let valid_up_to = err.utf8_error().valid_up_to();
            let bad_byte = err.as_bytes()[valid_up_to];
            let display = String::from_utf8_lossy(err.as_bytes()).into_owned();
            Err(LoadFailure::InvalidUtf8 {
                diagnostic: Box::new(invalid_utf8_diagnostic(&display, valid_up_to, bad_byte)),
                file: SourceFile {
                    name,
                    text: display,
                    functions_only,
                },
            })
        }
    }
}

/// The text before the first invalid byte is identical in the lossy copy,
/// so `offset` there is the replacement character standing for that byte.
fn invalid_utf8_diagnostic(display: &str, offset: usize, bad_byte: u8) -> Diagnostic {
    let replacement_len = char::REPLACEMENT_CHARACTER.len_utf8();
    let (line, column) = LineIndex::new(display).line_col(display, offset);
    Diagnostic::error(
        Kind::Syntax,
        INVALID_UTF8,
        format!("file is not valid UTF-8: byte 0x{bad_byte:02X} at line {line}, column {column}"),
        Span::new(offset, offset + replacement_len),
    )
    .with_label("invalid UTF-8 here")
    .with_help("Stan programs must be UTF-8 text; re-save the file as UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_byte_after_multibyte_chars_is_located_in_characters() {
        let display = "ab\ncé\u{FFFD}z";
        let offset = display.find('\u{FFFD}').unwrap();
        let d = invalid_utf8_diagnostic(display, offset, 0xE9);
        assert!(d.message.contains("line 2, column 3"), "{}", d.message);
        assert!(d.message.contains("0xE9"));
        assert_eq!(&display[d.primary.span.range()], "\u{FFFD}");
    }
}
