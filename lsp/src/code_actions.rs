//! Quick fixes from the compiler's "did you mean 'x'?" help: replace the
//! misspelled name with the suggestion.

use language::{Diagnostic, Span};

use crate::document::{Document, is_ident_char};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuickFix {
    pub title: String,
    /// Index of the diagnostic it fixes in `Document::diagnostics`.
    pub diagnostic: usize,
    pub span: Span,
    pub replacement: String,
}

/// Fixes for the diagnostics whose primary span overlaps `range`.
pub fn quick_fixes(document: &Document, range: Span) -> Vec<QuickFix> {
    document
        .diagnostics
        .iter()
        .enumerate()
        .filter(|(_, d)| d.primary.span.start <= range.end && range.start <= d.primary.span.end)
        .filter_map(|(index, d)| {
            let suggestion = suggestion(d)?;
            let span = misspelled_word(&document.text, d.primary.span, &suggestion)?;
            Some(QuickFix {
                title: format!("Replace with '{suggestion}'"),
                diagnostic: index,
                span,
                replacement: suggestion,
            })
        })
        .collect()
}

/// The name in "did you mean 'x'?" (checker) or "did you mean `x`?" (parser).
fn suggestion(d: &Diagnostic) -> Option<String> {
    let help = d.help.as_deref()?;
    let rest = &help[help.find("did you mean ")? + "did you mean ".len()..];
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '`')?;
    let inner = &rest[1..];
    let name = &inner[..inner.find(quote)?];
    (!name.is_empty() && name.chars().all(is_ident_char)).then(|| name.to_owned())
}

/// The identifier inside `span` closest to `suggestion` (the primary span
/// may cover a whole `~` statement), if it is plausibly a misspelling.
fn misspelled_word(text: &str, span: Span, suggestion: &str) -> Option<Span> {
    let region = text.get(span.range())?;
    let mut best: Option<(usize, Span)> = None;
    let mut start = None;
    for (i, c) in region.char_indices().chain([(region.len(), ' ')]) {
        match (is_ident_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let word = &region[s..i];
                let distance = strsim::levenshtein(word, suggestion);
                if word != suggestion && best.is_none_or(|(d, _)| distance < d) {
                    let at = span.start as usize;
                    best = Some((distance, Span::new(at + s, at + i)));
                }
                start = None;
            }
            _ => {}
        }
    }
    let (distance, found) = best?;
    (distance <= suggestion.len().div_ceil(2).max(2)).then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::SourceKind;
    use crate::position::Encoding;

    fn fixes(text: &str) -> Vec<(String, String)> {
        let document = Document::new(text.to_owned(), 1, SourceKind::Program, Encoding::Utf16);
        quick_fixes(&document, Span::new(0, text.len()))
            .into_iter()
            .map(|f| (text[f.span.range()].to_owned(), f.replacement))
            .collect()
    }

    #[test]
    fn applying_the_fixes_makes_the_program_check() {
        let text =
            "parameters { real sigma; }\nmodel { sigma ~ nromal(0, 1); target += lgo(sigm); }";
        let document = Document::new(text.to_owned(), 1, SourceKind::Program, Encoding::Utf16);
        let found = quick_fixes(&document, Span::new(0, text.len()));
        let words: Vec<&str> = found.iter().map(|f| &text[f.span.range()]).collect();
        assert!(
            words.contains(&"nromal") && words.contains(&"sigm"),
            "{words:?}"
        );
        let edits: Vec<(Span, String)> =
            found.into_iter().map(|f| (f.span, f.replacement)).collect();
        let fixed = crate::navigation::apply_edits(text, &edits);
        let after = Document::new(fixed.clone(), 2, SourceKind::Program, Encoding::Utf16);
        assert!(
            after.diagnostics.is_empty(),
            "{fixed}: {:?}",
            after.diagnostics
        );
    }

    #[test]
    fn no_fix_without_a_suggestion() {
        assert!(fixes("model { x ~ qqqqqqqqqq(0, 1); }").is_empty());
    }
}
