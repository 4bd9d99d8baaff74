//! Semantic tokens: what each name is, for highlighting beyond what a
//! grammar can tell — data (read-only) versus parameters, function
//! arguments, user-defined versus built-in functions.

use language::Span;
use language::check::{Callee, SymbolKind};
use language::syntax::ast::BlockKind;

use crate::document::{Document, word_at};

/// Token types, in the order announced in the server's legend.
pub const TOKEN_TYPES: &[&str] = &["variable", "parameter", "function"];
/// Modifier bits, in the order announced in the legend.
pub const TOKEN_MODIFIERS: &[&str] = &["declaration", "readonly", "defaultLibrary"];

const VARIABLE: u32 = 0;
const PARAMETER: u32 = 1;
const FUNCTION: u32 = 2;
const DECLARATION: u32 = 1 << 0;
const READONLY: u32 = 1 << 1;
const DEFAULT_LIBRARY: u32 = 1 << 2;

/// One classified name, in byte offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Token {
    pub span: Span,
    pub token_type: u32,
    pub modifiers: u32,
}

/// Every classified name in source order (empty until the text checks).
pub fn tokens(document: &Document) -> Vec<Token> {
    let Some(checked) = &document.checked else {
        return Vec::new();
    };
    let classify = |kind: &SymbolKind| match kind {
        SymbolKind::Function { .. } => (FUNCTION, 0),
        SymbolKind::FunArg => (PARAMETER, 0),
        SymbolKind::BlockVar(BlockKind::Data | BlockKind::TransformedData) => (VARIABLE, READONLY),
        _ => (VARIABLE, 0),
    };
    let mut out: Vec<Token> = Vec::new();
    for symbol in &checked.symbols {
        let (token_type, modifiers) = classify(&symbol.kind);
        out.push(Token {
            span: symbol.def_span,
            token_type,
            modifiers: modifiers | DECLARATION,
        });
    }
    for (span, id) in &checked.references {
        let (token_type, modifiers) = classify(&checked.symbols[*id].kind);
        out.push(Token {
            span: *span,
            token_type,
            modifiers,
        });
    }
    for (span, callee) in &checked.calls {
        if let Callee::Builtin(_) = callee
            && let Some(name) = builtin_name_span(&document.text, *span)
        {
            out.push(Token {
                span: name,
                token_type: FUNCTION,
                modifiers: DEFAULT_LIBRARY,
            });
        }
    }
    out.sort();
    // One token per span (a declaration is also recorded as a reference).
    out.dedup_by_key(|t| t.span);
    out.retain(|t| !t.span.is_empty() && !document.text[t.span.range()].contains('\n'));
    out
}

/// The function name of a call span (`f(...)`) or the distribution of a
/// `~` statement span (`y ~ normal(...)`).
fn builtin_name_span(text: &str, call: Span) -> Option<Span> {
    let region = text.get(call.range())?;
    // `~` never occurs inside an expression, so a span containing one is a
    // `~` statement.
    let at = match region.find('~') {
        Some(tilde) => {
            let after = &region[tilde + 1..];
            call.start as usize + tilde + 1 + (after.len() - after.trim_start().len())
        }
        _ => call.start as usize,
    };
    let (start, end) = word_at(text, at)?;
    (start == at).then(|| Span::new(start, end))
}

/// The LSP wire form: five numbers per token, positions relative to the
/// previous token.
pub fn encode(document: &Document, tokens: &[Token]) -> Vec<u32> {
    let mut data = Vec::with_capacity(tokens.len() * 5);
    let (mut last_line, mut last_char) = (0, 0);
    for token in tokens {
        let range = document.positions.range(&document.text, token.span);
        let (line, start) = (range.start.line, range.start.character);
        let delta_char = if line == last_line {
            start - last_char
        } else {
            start
        };
        data.extend([
            line - last_line,
            delta_char,
            range.end.character - start,
            token.token_type,
            token.modifiers,
        ]);
        (last_line, last_char) = (line, start);
    }
    data
}
