//! The outline: program blocks with their top-level declarations and
//! function definitions.

use language::Span;
use language::syntax::ast::{Program, StmtKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutlineKind {
    Block,
    Variable,
    Function,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutlineItem {
    pub name: String,
    pub detail: Option<String>,
    pub kind: OutlineKind,
    /// The whole construct.
    pub span: Span,
    /// The name (or block keyword).
    pub name_span: Span,
    pub children: Vec<OutlineItem>,
}

/// Types and argument lists are shown as written in `text`.
pub fn outline(program: &Program, text: &str) -> Vec<OutlineItem> {
    program
        .blocks
        .iter()
        .map(|block| OutlineItem {
            name: block.kind.keyword().to_owned(),
            detail: None,
            kind: OutlineKind::Block,
            span: block.span,
            name_span: block.keyword_span,
            children: block
                .stmts
                .iter()
                .filter_map(|stmt| item(&stmt.kind, stmt.span, text))
                .collect(),
        })
        .collect()
}

fn item(kind: &StmtKind, span: Span, text: &str) -> Option<OutlineItem> {
    let written = |s: Span| text.get(s.range()).unwrap_or_default().to_owned();
    match kind {
        StmtKind::Decl(decl) => Some(OutlineItem {
            name: decl.name.name.clone(),
            detail: Some(written(decl.ty.span)),
            kind: OutlineKind::Variable,
            span,
            name_span: decl.name.span,
            children: Vec::new(),
        }),
        StmtKind::FunDef(def) => {
            let args = match (def.args.first(), def.args.last()) {
                (Some(first), Some(last)) => written(first.span.to(last.span)),
                _ => String::new(),
            };
            Some(OutlineItem {
                name: def.name.name.clone(),
                detail: Some(format!("({args})")),
                kind: OutlineKind::Function,
                span,
                name_span: def.name.span,
                children: Vec::new(),
            })
        }
        _ => None,
    }
}
