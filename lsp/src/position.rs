//! Byte offsets ↔ LSP positions.
//!
//! The compiler speaks byte offsets into UTF-8 text; LSP positions are
//! (line, character) pairs where "character" counts UTF-16 code units unless
//! client and server agreed on UTF-8 at initialisation. This module is the
//! only place that knows about either encoding.
//!
//! Lines end at `\n`, `\r\n` or a lone `\r`, as the protocol defines; a
//! position never falls between the `\r` and `\n` of one line break.

use language::Span;
use tower_lsp::lsp_types::{Position, Range};

/// How the `character` of an LSP position is counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-16 code units: the LSP default, and what VS Code uses.
    #[default]
    Utf16,
    /// Bytes of UTF-8, when the client offers `positionEncoding: "utf-8"`.
    Utf8,
}

/// Byte offsets where lines start, with LSP's line breaks.
#[derive(Clone, Debug)]
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (i, &b) in bytes.iter().enumerate() {
            let ends_line = b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
            if ends_line {
                starts.push(i + 1);
            }
        }
        Lines { starts }
    }

    fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    fn line_start(&self, line: usize) -> usize {
        self.starts[line]
    }

    fn line_count(&self) -> usize {
        self.starts.len()
    }
}

/// A text with its line index, converting between offsets and positions.
#[derive(Clone, Debug)]
pub struct PositionMap {
    lines: Lines,
    encoding: Encoding,
}

impl PositionMap {
    pub fn new(text: &str, encoding: Encoding) -> PositionMap {
        PositionMap {
            lines: Lines::new(text),
            encoding,
        }
    }

    /// The 0-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.lines.line_of(offset)
    }

    /// The LSP position of byte `offset` (clamped to the text, and moved back
    /// to a character boundary if it falls inside a character).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = floor_char_boundary(text, offset.min(text.len()));
        // Between the `\r` and `\n` of one break: the end of the line.
        if offset > 0 && text.as_bytes()[offset - 1] == b'\r' && text[offset..].starts_with('\n') {
            offset -= 1;
        }
        let line = self.lines.line_of(offset);
        let prefix = &text[self.lines.line_start(line)..offset];
        let character = match self.encoding {
            Encoding::Utf16 => prefix.encode_utf16().count(),
            Encoding::Utf8 => prefix.len(),
        };
        Position::new(line as u32, character as u32)
    }

    pub fn range(&self, text: &str, span: Span) -> Range {
        Range::new(
            self.position(text, span.start as usize),
            self.position(text, span.end as usize),
        )
    }

    /// The byte offset of an LSP position. A line past the end maps to the
    /// end of the text and a character past the end of its line to the end
    /// of that line (before the line break), as the protocol asks.
    pub fn offset(&self, text: &str, position: Position) -> usize {
        let line = position.line as usize;
        if line >= self.lines.line_count() {
            return text.len();
        }
        let start = self.lines.line_start(line);
        let end = if line + 1 < self.lines.line_count() {
            self.lines.line_start(line + 1)
        } else {
            text.len()
        };
        let with_break = &text[start..end];
        let line_text = with_break
            .strip_suffix("\r\n")
            .or_else(|| with_break.strip_suffix(['\n', '\r']))
            .unwrap_or(with_break);
        let wanted = position.character as usize;
        let mut units = 0;
        for (byte, ch) in line_text.char_indices() {
            if units >= wanted {
                return start + byte;
            }
            units += match self.encoding {
                Encoding::Utf16 => ch.len_utf16(),
                Encoding::Utf8 => ch.len_utf8(),
            };
        }
        start + line_text.len()
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every char boundary survives offset → position → offset, and the
    /// UTF-16 column equals the number of UTF-16 units before it on its line
    /// (computed independently from `char::len_utf16`).
    #[test]
    fn round_trips_every_boundary_in_mixed_text() {
        let text = "data {\n  real σ; // é😀 x\r\n  int n;\n}\n";
        for encoding in [Encoding::Utf16, Encoding::Utf8] {
            let map = PositionMap::new(text, encoding);
            for (offset, _) in text.char_indices().chain([(text.len(), ' ')]) {
                // Inside "\r\n" is not a position: both are one line break.
                if text[..offset].ends_with('\r') {
                    continue;
                }
                let pos = map.position(text, offset);
                assert_eq!(map.offset(text, pos), offset, "{encoding:?} at {offset}");
                let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
                let expected: usize = text[line_start..offset]
                    .chars()
                    .map(|c| match encoding {
                        Encoding::Utf16 => c.len_utf16(),
                        Encoding::Utf8 => c.len_utf8(),
                    })
                    .sum();
                assert_eq!(pos.character as usize, expected);
                assert_eq!(pos.line as usize, text[..offset].matches('\n').count());
            }
        }
    }

    #[test]
    fn astral_character_counts_two_utf16_units() {
        let text = "//😀x";
        let map = PositionMap::new(text, Encoding::Utf16);
        let x = text.find('x').unwrap();
        assert_eq!(map.position(text, x), Position::new(0, 4));
        // A position inside the surrogate pair resolves to the character's end.
        assert_eq!(map.offset(text, Position::new(0, 3)), x);
    }

    #[test]
    fn a_lone_carriage_return_ends_a_line() {
        let text = "a\rb\r\nc\nd";
        let map = PositionMap::new(text, Encoding::Utf16);
        let at = |c: char| text.find(c).unwrap();
        assert_eq!(map.position(text, at('b')), Position::new(1, 0));
        assert_eq!(map.position(text, at('c')), Position::new(2, 0));
        assert_eq!(map.position(text, at('d')), Position::new(3, 0));
        assert_eq!(map.offset(text, Position::new(1, 9)), at('b') + 1);
        assert_eq!(map.offset(text, Position::new(0, 9)), 1);
    }

    #[test]
    fn out_of_range_positions_clamp() {
        let text = "ab\r\ncd";
        let map = PositionMap::new(text, Encoding::Utf16);
        assert_eq!(map.offset(text, Position::new(0, 99)), 2);
        assert_eq!(map.offset(text, Position::new(7, 0)), text.len());
        assert_eq!(map.position(text, 999), Position::new(1, 2));
    }
}
