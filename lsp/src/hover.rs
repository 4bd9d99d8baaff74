//! Hover: what a name is (declaration, block, comment), what a built-in
//! does (description and the signature the call resolved to), or the type
//! of the expression under the cursor.

use language::Span;
use language::builtins;
use language::check::{Callee, CheckedProgram, Symbol, SymbolKind};
use language::syntax::ast::{BlockKind, Program, Stmt, StmtKind};
use language::types::AdLevel;

use crate::document::Document;

/// Markdown to show and the span it is about.
#[derive(Debug, PartialEq, Eq)]
pub struct HoverInfo {
    pub markdown: String,
    pub span: Span,
}

/// At most this many built-in signatures are listed when no call resolved.
const MAX_LISTED_SIGNATURES: usize = 12;

pub fn hover(document: &Document, offset: usize) -> Option<HoverInfo> {
    let offset = document.clamp(offset);
    let checked = document.checked.as_ref()?;
    let word = document.word_at(offset);
    if let Some(id) = checked.symbol_at(offset) {
        let symbol = &checked.symbols[id];
        let span = word.map_or(symbol.def_span, |(s, e)| Span::new(s, e));
        return Some(HoverInfo {
            markdown: describe_symbol(document, symbol),
            span,
        });
    }
    if let Some((start, end)) = word {
        let name = &document.text[start..end];
        if let Some(markdown) = describe_builtin(document, checked, name, Span::new(start, end)) {
            return Some(HoverInfo {
                markdown,
                span: Span::new(start, end),
            });
        }
    }
    expression_type(checked, offset)
}

fn stan_block(code: &str) -> String {
    format!("```stan\n{code}\n```")
}

fn describe_symbol(document: &Document, symbol: &Symbol) -> String {
    let code = match symbol.kind {
        SymbolKind::Function { .. } => symbol.declared.clone(),
        _ => {
            let ty = written_type(&document.program, &document.text, symbol.def_span)
                .unwrap_or_else(|| symbol.declared.clone());
            format!("{ty} {}", symbol.name)
        }
    };
    let mut text = stan_block(&code);
    text.push_str("\n\n");
    text.push_str(&role(symbol));
    let obviously_data = matches!(
        symbol.kind,
        SymbolKind::Function { .. }
            | SymbolKind::BlockVar(BlockKind::Data | BlockKind::TransformedData)
    );
    if symbol.ad == AdLevel::DataOnly && !obviously_data {
        text.push_str(" (data only)");
    }
    if let Some(comment) = attached_comment(document, symbol.def_span) {
        text.push_str("\n\n---\n\n");
        text.push_str(&comment);
    }
    text
}

/// The type of the declaration (variable or function argument) whose name
/// is at `name_span`, as written in the source: `array[J] real<lower=0>`.
fn written_type(program: &Program, text: &str, name_span: Span) -> Option<String> {
    fn in_stmts(stmts: &[Stmt], text: &str, name_span: Span) -> Option<String> {
        stmts.iter().find_map(|s| in_stmt(s, text, name_span))
    }
    fn in_stmt(stmt: &Stmt, text: &str, name_span: Span) -> Option<String> {
        if !stmt.span.contains(name_span.start as usize) {
            return None;
        }
        match &stmt.kind {
            StmtKind::Decl(decl) if decl.name.span == name_span => {
                text.get(decl.ty.span.range()).map(str::to_owned)
            }
            StmtKind::FunDef(def) => def
                .args
                .iter()
                .find(|a| a.name.span == name_span)
                .and_then(|a| text.get(a.span.start as usize..a.name.span.start as usize))
                .map(|t| t.trim().to_owned())
                .or_else(|| {
                    def.body
                        .as_deref()
                        .and_then(|b| in_stmt(b, text, name_span))
                }),
            StmtKind::Block(body) | StmtKind::Profile { body, .. } => {
                in_stmts(body, text, name_span)
            }
            StmtKind::If {
                then, otherwise, ..
            } => in_stmt(then, text, name_span).or_else(|| {
                otherwise
                    .as_deref()
                    .and_then(|o| in_stmt(o, text, name_span))
            }),
            StmtKind::While { body, .. }
            | StmtKind::For { body, .. }
            | StmtKind::ForEach { body, .. } => in_stmt(body, text, name_span),
            _ => None,
        }
    }
    program
        .blocks
        .iter()
        .find_map(|b| in_stmts(&b.stmts, text, name_span))
}

fn role(symbol: &Symbol) -> String {
    match &symbol.kind {
        SymbolKind::BlockVar(block) => match block {
            BlockKind::Data => "data variable".to_owned(),
            BlockKind::Parameters => "parameter".to_owned(),
            BlockKind::TransformedParameters => "transformed parameter".to_owned(),
            BlockKind::GeneratedQuantities => "generated quantity".to_owned(),
            other => format!("variable of `{}`", other.keyword()),
        },
        SymbolKind::Local => "local variable".to_owned(),
        SymbolKind::FunArg => "function argument".to_owned(),
        SymbolKind::LoopVar => "loop variable".to_owned(),
        SymbolKind::Function { defined: true } => "user-defined function".to_owned(),
        SymbolKind::Function { defined: false } => {
            "user-defined function (declared, no body)".to_owned()
        }
    }
}

/// A comment on the line(s) right above the declaration, or at the end of
/// its line, as written by the user, without comment markers.
fn attached_comment(document: &Document, def_span: Span) -> Option<String> {
    let text = &document.text;
    let lines = language::LineIndex::new(text);
    let line_of = |offset: u32| lines.line_of(offset as usize);
    let decl_line = line_of(def_span.start);
    let comments = &document.program.comments;
    if let Some(trailing) = comments
        .iter()
        .find(|c| c.span.start >= def_span.end && line_of(c.span.start) == decl_line)
    {
        return Some(strip_markers(&trailing.text));
    }
    // Walk upwards over a contiguous run of comment lines.
    let mut lines = Vec::new();
    let mut want_line = decl_line;
    for comment in comments
        .iter()
        .rev()
        .filter(|c| c.span.end <= def_span.start)
    {
        let end_line = line_of(comment.span.end.saturating_sub(1));
        let starts_line = text[..comment.span.start as usize]
            .rsplit('\n')
            .next()
            .is_some_and(|before| before.trim().is_empty());
        if want_line == 0 || end_line != want_line - 1 || !starts_line {
            break;
        }
        lines.push(strip_markers(&comment.text));
        want_line = line_of(comment.span.start);
    }
    lines.reverse();
    let joined = lines.join("\n");
    (!joined.trim().is_empty()).then_some(joined)
}

fn strip_markers(comment: &str) -> String {
    let body = if let Some(inner) = comment.strip_prefix("/*") {
        inner.strip_suffix("*/").unwrap_or(inner)
    } else {
        comment.trim_start_matches('/').trim_start_matches('#')
    };
    body.lines()
        .map(|l| l.trim().trim_start_matches('*').trim())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

fn describe_builtin(
    document: &Document,
    checked: &CheckedProgram,
    name: &str,
    word: Span,
) -> Option<String> {
    let resolved = resolved_builtin_call(document, checked, word);
    let (shown_name, signatures): (String, Vec<builtins::Signature>) = if builtins::is_builtin(name)
    {
        (name.to_owned(), builtins::signatures(name))
    } else if let Some(dist) = builtins::distribution(name) {
        // A family after `~`: the density it stands for.
        let suffix = if dist.is_discrete() { "_lpmf" } else { "_lpdf" };
        let full = format!("{name}{suffix}");
        let sigs = builtins::signatures(&full);
        (full, sigs)
    } else {
        return None;
    };
    let mut text = String::new();
    match resolved {
        Some(sig) => text.push_str(&stan_block(&builtins::display_named_signature(
            &shown_name,
            &sig,
        ))),
        None if !signatures.is_empty() => {
            let listed: Vec<String> = signatures
                .iter()
                .take(MAX_LISTED_SIGNATURES)
                .map(|s| builtins::display_named_signature(&shown_name, s))
                .collect();
            text.push_str(&stan_block(&listed.join("\n")));
            if signatures.len() > MAX_LISTED_SIGNATURES {
                text.push_str(&format!(
                    "\n\n(and {} more signatures)",
                    signatures.len() - MAX_LISTED_SIGNATURES
                ));
            }
        }
        None => text.push_str(&stan_block(&shown_name)),
    }
    let doc = builtins::doc(&shown_name).or_else(|| builtins::doc(name));
    if let Some(doc) = doc {
        text.push_str("\n\n");
        text.push_str(doc);
    }
    text.push_str("\n\nbuilt-in function");
    Some(text)
}

/// The signature chosen for the call (or `~` statement) whose function
/// name is `word`: the smallest call span that begins with the name, or a
/// `~` statement whose distribution it is.
fn resolved_builtin_call(
    document: &Document,
    checked: &CheckedProgram,
    word: Span,
) -> Option<builtins::Signature> {
    let text = &document.text;
    checked
        .calls
        .iter()
        .filter(|(span, _)| span.start <= word.start && word.end <= span.end)
        .filter(|(span, _)| {
            span.start == word.start || {
                let between = &text[span.start as usize..word.start as usize];
                between
                    .rsplit_once('~')
                    .is_some_and(|(_, after)| after.trim().is_empty())
            }
        })
        .min_by_key(|(span, _)| span.end - span.start)
        .and_then(|(_, callee)| match callee {
            Callee::Builtin(sig) => Some(sig.clone()),
            Callee::User(_) => None,
        })
}

/// The type of the smallest expression containing `offset`.
fn expression_type(checked: &CheckedProgram, offset: usize) -> Option<HoverInfo> {
    let (span, (ty, ad)) = checked
        .expr_types
        .iter()
        .filter(|(span, _)| span.contains(offset) && !span.is_empty())
        .min_by_key(|(span, _)| (span.end - span.start, span.start))?;
    if ty.is_error() {
        return None;
    }
    let level = match ad {
        AdLevel::DataOnly => "data",
        AdLevel::AutoDiff => "autodiff",
    };
    Some(HoverInfo {
        markdown: format!("{}\n\nexpression ({level})", stan_block(&ty.to_string())),
        span: *span,
    })
}
