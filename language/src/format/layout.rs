//! Statements, blocks and comments laid out as lines.
//!
//! Comments are not in the tree; they are placed by their byte offsets:
//! - a comment before a statement (or before a block's `}`) goes on its own
//!   line above it, at the statement's indentation;
//! - a comment after a statement or an opening `{` on the same source line
//!   stays at the end of that line;
//! - a comment inside a simple statement (between its tokens) cannot stay
//!   there, as the statement's line breaks are the formatter's: it moves to
//!   its own line just above the statement, text unchanged;
//! - a comment inside a statement's header (`for (...) /* here */ {`) ends
//!   the header's line.
//!
//! A blank line between two statements or comments in the source is kept
//! (several become one); none are kept right after `{` or before `}`.

use crate::syntax::ast::*;

use super::expr::{expr, joined, list, range, sized_type, unsized_type};
use super::wrap;

const INDENT: &str = "  ";

pub struct Layout<'s> {
    source: &'s str,
    comments: &'s [Comment],
    next_comment: usize,
    out: String,
    depth: usize,
    /// The current, unfinished output line (without indentation).
    line: String,
    /// Comments to append to the current line when it ends.
    trailing: Vec<&'s str>,
    /// Source offset up to which everything has been emitted.
    emitted_to: usize,
    /// Right after a `{` (or at the top of the file): no blank line here.
    at_block_start: bool,
}

impl<'s> Layout<'s> {
    pub fn new(source: &'s str, comments: &'s [Comment]) -> Layout<'s> {
        Layout {
            source,
            comments,
            next_comment: 0,
            out: String::with_capacity(source.len() + source.len() / 4),
            depth: 0,
            line: String::new(),
            trailing: Vec::new(),
            emitted_to: 0,
            at_block_start: true,
        }
    }

    pub fn program(mut self, program: &Program, functions_only: bool) -> String {
        for block in &program.blocks {
            if functions_only {
                self.items(&block.stmts);
                continue;
            }
            let start = block.span.start as usize;
            self.comments_before(start);
            self.blank_line_before(start);
            self.line.push_str(block.kind.keyword());
            self.line.push(' ');
            let open = self.find_char(block.keyword_span.end as usize, '{');
            self.open_brace(open);
            self.items(&block.stmts);
            self.close_brace(block.span.end as usize - 1);
            self.trailing_comments(block.span.end as usize);
            self.end_line();
        }
        self.comments_before(usize::MAX);
        self.end_line();
        if self.out.is_empty() {
            return self.out;
        }
        while self.out.ends_with("\n\n") {
            self.out.pop();
        }
        self.out
    }

    // ------------------------------------------------------------ statements

    /// A list of statements; declarations written together (`real a, b;`,
    /// which the parser splits into statements with one span) stay together.
    fn items(&mut self, stmts: &[Stmt]) {
        let mut i = 0;
        while i < stmts.len() {
            let group = stmts[i..]
                .iter()
                .take_while(|s| matches!(s.kind, StmtKind::Decl(_)) && s.span == stmts[i].span)
                .count();
            if group > 1 {
                self.declarations(&stmts[i..i + group]);
                i += group;
            } else {
                self.stmt(&stmts[i]);
                i += 1;
            }
        }
    }

    fn declarations(&mut self, decls: &[Stmt]) {
        let mut text = String::new();
        for (i, stmt) in decls.iter().enumerate() {
            let StmtKind::Decl(decl) = &stmt.kind else {
                continue;
            };
            if i == 0 {
                text.push_str(&sized_type(&decl.ty));
                text.push(' ');
            } else {
                text.push_str(", ");
            }
            text.push_str(&declarator(decl));
        }
        text.push(';');
        self.simple(decls[0].span, &text);
    }

    fn stmt(&mut self, stmt: &Stmt) {
        let text = match &stmt.kind {
            StmtKind::Decl(decl) => format!("{} {};", sized_type(&decl.ty), declarator(decl)),
            StmtKind::Assign { lhs, op, rhs } => {
                format!("{} {} {};", expr(lhs), op.symbol(), expr(rhs))
            }
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                let mut text = format!("{} ~ {}({})", expr(lhs), dist.name, list(args));
                if let Some(t) = truncation {
                    let bound = |b: &Option<Expr>| b.as_ref().map(expr).unwrap_or_default();
                    text.push_str(&format!(" T[{}, {}]", bound(&t.lower), bound(&t.upper)));
                }
                text.push(';');
                text
            }
            StmtKind::TargetPlus(x) => format!("target += {};", expr(x)),
            StmtKind::JacobianPlus(x) => format!("jacobian += {};", expr(x)),
            StmtKind::Expr(x) => format!("{};", expr(x)),
            StmtKind::Break => "break;".to_string(),
            StmtKind::Continue => "continue;".to_string(),
            StmtKind::Return(None) => "return;".to_string(),
            StmtKind::Return(Some(x)) => format!("return {};", expr(x)),
            StmtKind::Print(items) => format!("print({});", list(items)),
            StmtKind::Reject(items) => format!("reject({});", list(items)),
            StmtKind::FatalError(items) => format!("fatal_error({});", list(items)),
            StmtKind::Skip => ";".to_string(),
            // Not formatted (syntax errors refuse formatting); kept verbatim.
            StmtKind::Error => self.source[stmt.span.range()].to_string(),
            StmtKind::Block(stmts) if !self.is_braced(stmt) => {
                // `if (c) real a, b;`: a declaration list as a body.
                self.items(stmts);
                return;
            }
            _ => {
                self.compound(stmt);
                return;
            }
        };
        self.simple(stmt.span, &text);
    }

    /// A simple statement (broken into lines by [`wrap`] if long).
    fn simple(&mut self, span: crate::span::Span, text: &str) {
        let (start, end) = (span.start as usize, span.end as usize);
        self.comments_before(start);
        self.blank_line_before(start);
        // Comments between the statement's tokens move above it.
        self.comments_before(end);
        self.push_code(text);
        self.emitted_to = end;
        self.trailing_comments(end);
        self.end_line();
    }

    fn compound(&mut self, stmt: &Stmt) {
        let start = stmt.span.start as usize;
        self.comments_before(start);
        self.blank_line_before(start);
        self.emitted_to = start;
        match &stmt.kind {
            StmtKind::If { .. } => self.if_chain(stmt),
            StmtKind::While { cond, body } => {
                self.push_code(&format!("while ({})", expr(cond)));
                self.body(body);
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let head = format!("for ({} in {})", var.name, range(lower, upper));
                self.push_code(&head);
                self.body(body);
            }
            StmtKind::ForEach { var, iter, body } => {
                self.push_code(&format!("for ({} in {})", var.name, expr(iter)));
                self.body(body);
            }
            StmtKind::Block(stmts) => self.braced(stmt.span, stmts),
            StmtKind::Profile { name, body } => {
                self.push_code(&format!("profile(\"{name}\") "));
                let open = self.find_char(start, '{');
                let span = crate::span::Span::new(open, stmt.span.end as usize);
                self.braced(span, body);
            }
            StmtKind::FunDef(def) => {
                self.push_code(&signature(def));
                match &def.body {
                    Some(body) => self.body(body),
                    None => {
                        self.comments_before(stmt.span.end as usize);
                        self.line.push(';');
                    }
                }
            }
            _ => unreachable!("simple statements are printed by `stmt`"),
        }
        // A braced body leaves its `}` on the open line.
        if !self.line.is_empty() {
            let end = stmt.span.end as usize;
            self.emitted_to = end;
            self.trailing_comments(end);
            self.end_line();
        }
    }

    /// `if (c) ... else if (d) ... else ...` with `else` after a `}` on the
    /// same line.
    fn if_chain(&mut self, stmt: &Stmt) {
        let StmtKind::If {
            cond,
            then,
            otherwise,
        } = &stmt.kind
        else {
            return;
        };
        self.push_code(&format!("if ({})", expr(cond)));
        self.body(then);
        let Some(other) = otherwise else {
            return;
        };
        let other_start = other.span.start as usize;
        if self.line.is_empty() {
            // After an unbraced `then` on its own line.
            self.comments_before(other_start);
            self.line.push_str("else");
        } else {
            self.line.push_str(" else");
        }
        if matches!(other.kind, StmtKind::If { .. }) {
            self.comments_before(other_start);
            self.line.push(' ');
            self.if_chain(other);
        } else {
            self.body(other);
        }
    }

    /// The body of a loop, `if` or function: ` {` on the header's line, or
    /// an unbraced statement indented on the next line.
    fn body(&mut self, body: &Stmt) {
        if let StmtKind::Block(stmts) = &body.kind
            && self.is_braced(body)
        {
            self.line.push(' ');
            self.braced(body.span, stmts);
            return;
        }
        // Comments in the header stay on its line.
        self.comments_before(body.span.start as usize);
        self.end_line();
        self.depth += 1;
        self.at_block_start = true;
        self.stmt(body);
        self.depth -= 1;
    }

    /// `{ stmts }` where `span` runs from `{` to after `}`; leaves the `}`
    /// on the open line.
    fn braced(&mut self, span: crate::span::Span, stmts: &[Stmt]) {
        self.open_brace(span.start as usize);
        self.items(stmts);
        self.close_brace(span.end as usize - 1);
    }

    fn open_brace(&mut self, at: usize) {
        // Comments between the header and `{` end the header's line.
        self.comments_before(at);
        self.line.push('{');
        self.emitted_to = at + 1;
        self.trailing_comments(at + 1);
        let overflow = self.finish_line();
        self.depth += 1;
        // Comments after a `//` on the `{` line belong inside the block.
        for comment in overflow {
            self.write_line(comment);
        }
        self.at_block_start = true;
    }

    fn close_brace(&mut self, at: usize) {
        self.comments_before(at);
        self.end_line();
        self.depth -= 1;
        self.line.push('}');
        self.emitted_to = at + 1;
    }

    /// Append marked code to the current line, broken to fit the width.
    fn push_code(&mut self, marked: &str) {
        let current = self
            .line
            .rsplit('\n')
            .next()
            .map_or(0, |l| l.chars().count());
        let start = self.depth * INDENT.len() + current;
        self.line.push_str(&wrap::render(marked, start));
    }

    fn is_braced(&self, stmt: &Stmt) -> bool {
        self.source.as_bytes().get(stmt.span.start as usize) == Some(&b'{')
    }

    // ------------------------------------------------------------ comments and lines

    /// Emit every comment that starts before `pos`: on its own line when
    /// the current line is empty, else at the end of the current line.
    fn comments_before(&mut self, pos: usize) {
        while let Some(comment) = self.comments.get(self.next_comment) {
            let start = comment.span.start as usize;
            if start >= pos {
                break;
            }
            self.next_comment += 1;
            let text = canonical_comment(&comment.text);
            if self.line.is_empty() && self.trailing.is_empty() {
                self.blank_line_before(start);
                self.write_line(text);
            } else {
                self.trailing.push(text);
            }
            self.emitted_to = self.emitted_to.max(comment.span.end as usize);
        }
    }

    /// Attach the comments that follow `end` on the same source line.
    fn trailing_comments(&mut self, mut end: usize) {
        while let Some(comment) = self.comments.get(self.next_comment) {
            let start = comment.span.start as usize;
            let gap = self.source.get(end..start).unwrap_or("\n");
            if start < end || gap.contains('\n') || !gap.trim().is_empty() {
                break;
            }
            self.next_comment += 1;
            self.trailing.push(canonical_comment(&comment.text));
            end = comment.span.end as usize;
            self.emitted_to = self.emitted_to.max(end);
        }
    }

    /// One blank line if the source had at least one right before `pos`.
    fn blank_line_before(&mut self, pos: usize) {
        let before = &self.source[self.emitted_to.min(pos)..pos.min(self.source.len())];
        let gap = &before[before.trim_end().len()..];
        let blank = gap.matches('\n').count() >= 2;
        if blank && !self.at_block_start && self.line.is_empty() {
            self.out.push('\n');
        }
        self.at_block_start = false;
    }

    fn end_line(&mut self) {
        for comment in self.finish_line() {
            self.write_line(comment);
        }
    }

    /// Write the current line with as many trailing comments as fit (none
    /// after a `//` comment); returns the rest, for the caller to place.
    fn finish_line(&mut self) -> Vec<&'s str> {
        if self.line.is_empty() && self.trailing.is_empty() {
            return Vec::new();
        }
        let mut line = std::mem::take(&mut self.line);
        let trailing = std::mem::take(&mut self.trailing);
        let mut rest = trailing.into_iter();
        for comment in rest.by_ref() {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(comment);
            // Nothing can follow a line comment on its line.
            if comment.starts_with("//") {
                break;
            }
        }
        self.write_line(&line);
        self.at_block_start = false;
        rest.collect()
    }

    fn write_line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str(INDENT);
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Offset of the first `ch` at or after `from` outside comments and
    /// strings (the `{` after a block keyword or `profile(...)`).
    fn find_char(&self, from: usize, ch: char) -> usize {
        let bytes = self.source.as_bytes();
        let mut i = from;
        while i < bytes.len() {
            if let Ok(k) = self
                .comments
                .binary_search_by_key(&i, |c| c.span.start as usize)
            {
                i = self.comments[k].span.end as usize;
                continue;
            }
            match bytes[i] {
                b'"' => {
                    i += 1;
                    while i < bytes.len() && bytes[i] != b'"' {
                        i += 1;
                    }
                }
                b if b == ch as u8 => return i,
                _ => {}
            }
            i += 1;
        }
        from
    }
}

/// A `//` comment without trailing whitespace (or the `\r` of a CRLF
/// file, whose lines all become `\n`); block comments verbatim.
pub fn canonical_comment(text: &str) -> &str {
    if text.starts_with("//") {
        text.trim_end()
    } else {
        text
    }
}

fn declarator(decl: &VarDecl) -> String {
    match &decl.init {
        Some(init) => format!("{} = {}", decl.name.name, expr(init)),
        None => decl.name.name.clone(),
    }
}

fn signature(def: &FunDef) -> String {
    let ret = match &def.return_type {
        ReturnType::Void(_) => "void".to_string(),
        ReturnType::Type(t) => unsized_type(t),
    };
    let args: Vec<String> = def
        .args
        .iter()
        .map(|a| {
            let data = if a.data_only { "data " } else { "" };
            format!("{data}{} {}", unsized_type(&a.ty), a.name.name)
        })
        .collect();
    format!("{ret} {}({})", def.name.name, joined(&args))
}
