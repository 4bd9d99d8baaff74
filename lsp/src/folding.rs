//! Folding ranges: program blocks, braced bodies (functions, loops, `if`
//! branches, nested blocks, `profile`), block comments over several lines
//! and runs of `//` comments on consecutive lines.
//!
//! A braced region folds from the line of its keyword or `{` to the line
//! before its `}`, so the closing brace stays visible when folded (as VS
//! Code's own indentation folding does); regions of fewer than two lines
//! are not reported. Lines are the protocol's (see [`crate::position`]).

use language::syntax::ast::{Stmt, StmtKind};

use crate::document::Document;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldKind {
    Region,
    Comment,
}

/// A fold over 0-based lines `start_line..=end_line`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fold {
    pub start_line: usize,
    pub end_line: usize,
    pub kind: FoldKind,
}

pub fn folding_ranges(doc: &Document) -> Vec<Fold> {
    let lines = &doc.positions;
    let mut folds = Vec::new();
    let braced = |start: usize, close: usize, folds: &mut Vec<Fold>| {
        let start_line = lines.line_of(start.min(doc.text.len()));
        let close_line = lines.line_of(close.min(doc.text.len()));
        if close_line > start_line + 1 {
            folds.push(Fold {
                start_line,
                end_line: close_line - 1,
                kind: FoldKind::Region,
            });
        }
    };
    for block in &doc.program.blocks {
        // A functions file has a synthetic block with no braces.
        let end = block.span.end as usize;
        if doc.text.as_bytes().get(end.wrapping_sub(1)) == Some(&b'}') {
            braced(block.span.start as usize, end - 1, &mut folds);
        }
        for stmt in &block.stmts {
            stmt_folds(doc, stmt, &mut |s, c| braced(s, c, &mut folds));
        }
    }
    comment_folds(doc, &mut folds);
    folds.sort_by_key(|f| (f.start_line, std::cmp::Reverse(f.end_line)));
    folds.dedup();
    folds
}

fn stmt_folds(doc: &Document, stmt: &Stmt, fold: &mut dyn FnMut(usize, usize)) {
    let (start, end) = (stmt.span.start as usize, stmt.span.end as usize);
    match &stmt.kind {
        StmtKind::Block(stmts) => {
            if doc.text.as_bytes().get(start) == Some(&b'{') && end > start {
                fold(start, end - 1);
            }
            stmts.iter().for_each(|s| stmt_folds(doc, s, fold));
        }
        StmtKind::Profile { body, .. } => {
            if end > start {
                fold(start, end - 1);
            }
            body.iter().for_each(|s| stmt_folds(doc, s, fold));
        }
        StmtKind::If {
            then, otherwise, ..
        } => {
            stmt_folds(doc, then, fold);
            if let Some(other) = otherwise {
                stmt_folds(doc, other, fold);
            }
        }
        StmtKind::While { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::ForEach { body, .. } => stmt_folds(doc, body, fold),
        StmtKind::FunDef(def) => {
            if let Some(body) = &def.body {
                // Fold from the signature, not just from the `{`.
                let body_end = body.span.end as usize;
                if body_end > start {
                    fold(start, body_end - 1);
                }
                if let StmtKind::Block(stmts) = &body.kind {
                    stmts.iter().for_each(|s| stmt_folds(doc, s, fold));
                }
            }
        }
        _ => {}
    }
}

fn comment_folds(doc: &Document, folds: &mut Vec<Fold>) {
    let lines = &doc.positions;
    // (first line, last line) of the current run of line comments.
    let mut run: Option<(usize, usize)> = None;
    let flush = |run: Option<(usize, usize)>, folds: &mut Vec<Fold>| {
        if let Some((first, last)) = run
            && last > first
        {
            folds.push(Fold {
                start_line: first,
                end_line: last,
                kind: FoldKind::Comment,
            });
        }
    };
    for comment in &doc.program.comments {
        let (start, end) = (comment.span.start as usize, comment.span.end as usize);
        let first = lines.line_of(start);
        let last = lines.line_of(end.saturating_sub(1).max(start));
        if comment.text.starts_with("//") {
            let line_start = doc.text[..start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
            let alone = doc.text[line_start..start].trim().is_empty();
            run = match run {
                Some((f, l)) if alone && first == l + 1 => Some((f, first)),
                other => {
                    flush(other, folds);
                    alone.then_some((first, first))
                }
            };
        } else {
            flush(run.take(), folds);
            if last > first {
                folds.push(Fold {
                    start_line: first,
                    end_line: last,
                    kind: FoldKind::Comment,
                });
            }
        }
    }
    flush(run, folds);
}
