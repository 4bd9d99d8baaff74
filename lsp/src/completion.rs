//! Completion candidates for a cursor position, chosen by context:
//! distribution families after `~`, block headers between blocks, and
//! otherwise names in scope, built-in functions, types and keywords.

use language::builtins;
use language::check::SymbolKind;
use language::syntax::ast::{BlockKind, FunDef, StmtKind};

use crate::document::{Document, is_ident_char};

/// What a candidate is, for the editor's icon.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CandidateKind {
    Variable,
    Function,
    Distribution,
    Type,
    Keyword,
    Block,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub label: String,
    pub kind: CandidateKind,
    /// One line shown beside the label (a type or a signature).
    pub detail: Option<String>,
    /// Longer markdown documentation.
    pub documentation: Option<String>,
    /// Snippet text to insert instead of the label (LSP snippet syntax).
    pub snippet: Option<String>,
}

impl Candidate {
    fn new(label: impl Into<String>, kind: CandidateKind) -> Candidate {
        Candidate {
            label: label.into(),
            kind,
            detail: None,
            documentation: None,
            snippet: None,
        }
    }
}

pub const TYPES: &[&str] = &[
    "int",
    "real",
    "complex",
    "vector",
    "row_vector",
    "matrix",
    "complex_vector",
    "complex_row_vector",
    "complex_matrix",
    "array",
    "tuple",
    "simplex",
    "unit_vector",
    "sum_to_zero_vector",
    "sum_to_zero_matrix",
    "ordered",
    "positive_ordered",
    "cholesky_factor_corr",
    "cholesky_factor_cov",
    "corr_matrix",
    "cov_matrix",
    "column_stochastic_matrix",
    "row_stochastic_matrix",
    "void",
];

pub const KEYWORDS: &[&str] = &[
    "for",
    "in",
    "while",
    "if",
    "else",
    "break",
    "continue",
    "return",
    "target",
    "jacobian",
    "print",
    "reject",
    "fatal_error",
    "profile",
    "lower",
    "upper",
    "offset",
    "multiplier",
    "data",
];

pub fn complete(document: &Document, offset: usize) -> Vec<Candidate> {
    let offset = document.clamp(offset);
    let text = &document.text;
    let prefix_start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_ident_char(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let prefix = &text[prefix_start..offset];
    let before = text[..prefix_start].trim_end();

    let mut candidates = if before.ends_with('~') {
        distributions(document)
    } else if !inside_any_block(document, offset) {
        block_headers(document, offset)
    } else {
        let mut all = names_in_scope(document, offset);
        all.extend(builtin_functions(prefix));
        all.extend(
            TYPES
                .iter()
                .map(|t| Candidate::new(*t, CandidateKind::Type)),
        );
        all.extend(
            KEYWORDS
                .iter()
                .map(|k| Candidate::new(*k, CandidateKind::Keyword)),
        );
        all
    };
    candidates.retain(|c| c.label.starts_with(prefix) || c.kind == CandidateKind::Block);
    let mut seen = std::collections::HashSet::new();
    candidates.retain(|c| seen.insert((c.label.clone(), c.kind)));
    candidates
}

/// Whether `offset` is inside braces, by a lexical scan (so it works on
/// text the parser gave up on), skipping comments and strings.
fn inside_any_block(document: &Document, offset: usize) -> bool {
    let text = document.text.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    while i < offset.min(text.len()) {
        match (text[i], text.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < text.len() && text[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i + 1 < text.len() && !(text[i] == b'*' && text[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            (b'"', _) => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += 1;
                }
            }
            (b'{', _) => depth += 1,
            (b'}', _) => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    depth > 0
}

/// Block headers that may still be written at `offset`: not yet present,
/// and in Stan's block order relative to the blocks around the cursor.
fn block_headers(document: &Document, offset: usize) -> Vec<Candidate> {
    let blocks = &document.program.blocks;
    let after = blocks
        .iter()
        .filter(|b| (b.span.end as usize) <= offset)
        .map(|b| b.kind)
        .max();
    let before = blocks
        .iter()
        .filter(|b| (b.span.start as usize) >= offset)
        .map(|b| b.kind)
        .min();
    BlockKind::ALL
        .into_iter()
        .filter(|k| after.is_none_or(|a| *k > a) && before.is_none_or(|b| *k < b))
        .map(|k| Candidate {
            snippet: Some(format!("{} {{\n\t$0\n}}", k.keyword())),
            ..Candidate::new(k.keyword(), CandidateKind::Block)
        })
        .collect()
}

/// Distribution families: built-in ones and user `_lpdf` / `_lpmf` functions.
fn distributions(document: &Document) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = builtins::distribution_families()
        .map(|family| {
            let dist = builtins::distribution(family);
            let density = match dist.as_ref().is_some_and(|d| d.is_discrete()) {
                true => format!("{family}_lpmf"),
                false => format!("{family}_lpdf"),
            };
            Candidate {
                detail: builtins::signatures_ref(&density)
                    .first()
                    .map(|s| builtins::display_named_signature(&density, s)),
                documentation: builtins::doc(&density).map(str::to_owned),
                ..Candidate::new(family, CandidateKind::Distribution)
            }
        })
        .collect();
    let mut names: Vec<&str> = user_functions(document)
        .map(|d| d.name.name.as_str())
        .collect();
    if document.checked.is_none() {
        names.extend(
            document
                .last_good_names
                .iter()
                .filter(|(_, kind)| matches!(kind, SymbolKind::Function { .. }))
                .map(|(name, _)| name.as_str()),
        );
    }
    for name in names {
        if let Some(family) = name
            .strip_suffix("_lpdf")
            .or_else(|| name.strip_suffix("_lpmf"))
        {
            out.push(Candidate {
                detail: Some(format!("user-defined {name}")),
                ..Candidate::new(family, CandidateKind::Distribution)
            });
        }
    }
    out
}

/// Function definitions in the parsed text (present even when it does not
/// check).
fn user_functions(document: &Document) -> impl Iterator<Item = &FunDef> {
    document
        .program
        .blocks
        .iter()
        .flat_map(|b| &b.stmts)
        .filter_map(|stmt| match &stmt.kind {
            StmtKind::FunDef(def) => Some(def),
            _ => None,
        })
}

/// Variables visible at `offset` and all user functions.
fn names_in_scope(document: &Document, offset: usize) -> Vec<Candidate> {
    let Some(checked) = &document.checked else {
        return document
            .last_good_names
            .iter()
            .map(|(name, kind)| Candidate::new(name.clone(), candidate_kind(kind)))
            .collect();
    };
    checked
        .symbols
        .iter()
        .filter(|s| match s.kind {
            SymbolKind::Function { .. } => true,
            _ => s.scope_span.contains(offset) && (s.def_span.end as usize) <= offset,
        })
        .map(|s| {
            let detail = match s.kind {
                SymbolKind::Function { .. } => s.declared.clone(),
                _ => format!("{} {}", s.declared, s.name),
            };
            Candidate {
                detail: Some(detail),
                ..Candidate::new(s.name.clone(), candidate_kind(&s.kind))
            }
        })
        .collect()
}

fn candidate_kind(kind: &SymbolKind) -> CandidateKind {
    match kind {
        SymbolKind::Function { .. } => CandidateKind::Function,
        _ => CandidateKind::Variable,
    }
}

/// Built-in functions starting with `prefix`, with their first signature.
fn builtin_functions(prefix: &str) -> Vec<Candidate> {
    builtins::names()
        .filter(|name| name.starts_with(prefix))
        .map(|name| {
            let sigs = builtins::signatures_ref(name);
            let detail = sigs.first().map(|s| {
                let shown = builtins::display_named_signature(name, s);
                match sigs.len() {
                    1 => shown,
                    n => format!("{shown} (+{} overloads)", n - 1),
                }
            });
            Candidate {
                detail,
                documentation: builtins::doc(name).map(str::to_owned),
                ..Candidate::new(name, CandidateKind::Function)
            }
        })
        .collect()
}
