//! Go to definition, find references, highlights and rename — all read off
//! the checker's symbol table (`CheckedProgram::{symbols, references}`).

use std::collections::HashMap;

use language::Span;
use language::check::{CheckedProgram, SymbolId, SymbolKind};

use crate::document::{Document, SourceKind};
use crate::position::Encoding;

/// The user symbol named or declared at `offset`.
pub fn symbol_at(document: &Document, offset: usize) -> Option<SymbolId> {
    document.checked.as_ref()?.symbol_at(offset)
}

/// Where the symbol at `offset` is declared.
pub fn definition(document: &Document, offset: usize) -> Option<Span> {
    let checked = document.checked.as_ref()?;
    let id = checked.symbol_at(offset)?;
    Some(checked.symbols[id].def_span)
}

/// Every span naming the symbol(s) at `offset`, declaration first when
/// `include_declaration`. A function's overloads count as one name, since
/// Stan resolves calls among them by argument types.
pub fn references(document: &Document, offset: usize, include_declaration: bool) -> Vec<Span> {
    let Some(checked) = document.checked.as_ref() else {
        return Vec::new();
    };
    let Some(id) = checked.symbol_at(offset) else {
        return Vec::new();
    };
    let ids = same_name_group(checked, id);
    let mut spans: Vec<Span> = Vec::new();
    if include_declaration {
        spans.extend(ids.iter().map(|&i| checked.symbols[i].def_span));
    }
    spans.extend(
        checked
            .references
            .iter()
            .filter(|(_, target)| ids.contains(target))
            .map(|(span, _)| *span),
    );
    spans.sort();
    spans.dedup();
    spans
}

/// The symbol and, for a function, its other overloads.
fn same_name_group(checked: &CheckedProgram, id: SymbolId) -> Vec<SymbolId> {
    let symbol = &checked.symbols[id];
    if !matches!(symbol.kind, SymbolKind::Function { .. }) {
        return vec![id];
    }
    checked
        .symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name == symbol.name && matches!(s.kind, SymbolKind::Function { .. }))
        .map(|(i, _)| i)
        .collect()
}

/// Why a rename was refused; shown to the user as the request's error.
#[derive(Debug, PartialEq, Eq)]
pub struct RenameError(pub String);

/// Suffixes that make a function a density / CDF / RNG; renaming must keep
/// them, because uses such as `y ~ foo(...)` or `foo_lupdf(...)` name the
/// function by its family.
const SUFFIXES: &[&str] = &[
    "_lpdf",
    "_lupdf",
    "_lpmf",
    "_lupmf",
    "_lcdf",
    "_lccdf",
    "_cdf",
    "_rng",
    "_lp",
    "_jacobian",
];

fn suffix_of(name: &str) -> Option<&'static str> {
    SUFFIXES.iter().copied().find(|s| name.ends_with(s))
}

/// The range that a rename at `offset` would change (for prepareRename).
pub fn rename_range(document: &Document, offset: usize) -> Option<Span> {
    let checked = document.checked.as_ref()?;
    let id = checked.symbol_at(offset)?;
    let target = checked.symbols[id]
        .def_span
        .contains(offset)
        .then_some(checked.symbols[id].def_span);
    target.or_else(|| {
        checked
            .references
            .iter()
            .find(|(span, i)| *i == id && span.contains(offset))
            .map(|(span, _)| *span)
    })
}

/// Text edits renaming the symbol at `offset` to `new_name`, checked by
/// compiling the renamed text: a rename that would introduce a new error
/// (a clash with another name, a reserved word) is refused with that error.
pub fn rename(
    document: &Document,
    offset: usize,
    new_name: &str,
    kind: SourceKind,
) -> Result<Vec<(Span, String)>, RenameError> {
    let checked = document
        .checked
        .as_ref()
        .ok_or_else(|| RenameError("cannot rename while the file has syntax errors".into()))?;
    let id = checked
        .symbol_at(offset)
        .ok_or_else(|| RenameError("no user-defined name here".into()))?;
    let old_name = checked.symbols[id].name.clone();
    if !is_identifier(new_name) {
        return Err(RenameError(format!("'{new_name}' is not an identifier")));
    }
    let (old_stem, new_stem) = match suffix_of(&old_name) {
        Some(suffix) => {
            let new_stem = new_name
                .strip_suffix(suffix)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    RenameError(format!(
                        "'{old_name}' must keep its '{suffix}' suffix; try '{}{suffix}'",
                        new_name.trim_end_matches(suffix)
                    ))
                })?;
            (
                old_name
                    .strip_suffix(suffix)
                    .unwrap_or(&old_name)
                    .to_owned(),
                new_stem.to_owned(),
            )
        }
        None => (old_name.clone(), new_name.to_owned()),
    };
    let edits: Vec<(Span, String)> = references(document, offset, true)
        .into_iter()
        .map(|span| {
            let written = &document.text[span.range()];
            // `foo` in `~ foo(...)` or `foo_lupdf(...)` for `foo_lpdf`.
            let rest = written.strip_prefix(old_stem.as_str()).unwrap_or("");
            let replacement = if written == old_name {
                new_name.to_owned()
            } else {
                format!("{new_stem}{rest}")
            };
            (span, replacement)
        })
        .collect();
    check_rename(document, &edits, kind)?;
    Ok(edits)
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Refuse the edits if the renamed program has errors the original did
/// not have (compared by code and message, which carry no positions).
fn check_rename(
    document: &Document,
    edits: &[(Span, String)],
    kind: SourceKind,
) -> Result<(), RenameError> {
    let renamed = apply_edits(&document.text, edits);
    let after = Document::new(renamed, document.version, kind, Encoding::Utf16);
    let mut before: HashMap<(&str, &str), usize> = HashMap::new();
    for d in document.diagnostics.iter().filter(|d| d.is_error()) {
        *before.entry((d.code, d.message.as_str())).or_default() += 1;
    }
    for d in after.diagnostics.iter().filter(|d| d.is_error()) {
        match before.get_mut(&(d.code, d.message.as_str())) {
            Some(n) if *n > 0 => *n -= 1,
            _ => {
                return Err(RenameError(format!(
                    "the rename would cause an error: {}",
                    d.message
                )));
            }
        }
    }
    Ok(())
}

/// Apply non-overlapping edits to `text`.
pub fn apply_edits(text: &str, edits: &[(Span, String)]) -> String {
    let mut sorted: Vec<&(Span, String)> = edits.iter().collect();
    sorted.sort_by_key(|(span, _)| span.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (span, replacement) in sorted {
        out.push_str(&text[at..span.start as usize]);
        out.push_str(replacement);
        at = span.end as usize;
    }
    out.push_str(&text[at..]);
    out
}
