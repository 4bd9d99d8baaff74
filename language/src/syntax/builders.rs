//! Small constructors used by the grammar's actions, so grammar.lalrpop
//! stays about syntax.

use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::ast::*;
use crate::syntax::codes;

pub fn ident(name: &str, l: usize, r: usize) -> Ident {
    Ident {
        name: name.to_string(),
        span: Span::new(l, r),
    }
}

pub fn expr(kind: ExprKind, l: usize, r: usize) -> Expr {
    Expr {
        kind,
        span: Span::new(l, r),
    }
}

pub fn binary(op: BinaryOp, lhs: Expr, rhs: Expr, l: usize, r: usize) -> Expr {
    expr(ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), l, r)
}

pub fn stmt(kind: StmtKind, l: usize, r: usize) -> Stmt {
    Stmt {
        kind,
        span: Span::new(l, r),
    }
}

pub fn sized_type(kind: SizedTypeKind, l: usize, r: usize) -> SizedType {
    SizedType {
        kind,
        span: Span::new(l, r),
    }
}

pub fn unsized_type(kind: UnsizedTypeKind, l: usize, r: usize) -> UnsizedType {
    UnsizedType {
        kind,
        span: Span::new(l, r),
    }
}

pub fn prepend<T>(first: T, rest: Vec<T>) -> Vec<T> {
    let mut all = Vec::with_capacity(rest.len() + 1);
    all.push(first);
    all.extend(rest);
    all
}

/// String literal contents without the surrounding quotes.
pub fn unquote(literal: &str) -> String {
    literal
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(literal)
        .to_string()
}

/// `e.N`: the dot-number token `.N` read as a tuple component.
pub fn projection(
    tuple: Expr,
    dot_number: &str,
    l: usize,
    r: usize,
    problems: &mut Vec<Diagnostic>,
) -> Expr {
    let digits: String = dot_number[1..].chars().filter(|c| *c != '_').collect();
    let index = match digits.parse::<usize>() {
        Ok(index) => index,
        Err(_) => {
            let start = r - dot_number.len();
            problems.push(
                Diagnostic::error(
                    Kind::Syntax,
                    codes::BAD_TUPLE_INDEX,
                    format!("tuple component number `{}` is too large", &dot_number[1..]),
                    Span::new(start, r),
                )
                .with_label("not a valid component number"),
            );
            0
        }
    };
    expr(ExprKind::TupleProj(Box::new(tuple), index), l, r)
}

/// One `Decl` statement per declared name; all share the type and span.
pub fn decls(ty: SizedType, names: Vec<(Ident, Option<Expr>)>, l: usize, r: usize) -> Vec<Stmt> {
    names
        .into_iter()
        .map(|(name, init)| {
            stmt(
                StmtKind::Decl(VarDecl {
                    ty: ty.clone(),
                    name,
                    init,
                }),
                l,
                r,
            )
        })
        .collect()
}

pub fn block(kind: BlockKind, stmts: Vec<Stmt>, l: usize, kr: usize, r: usize) -> ProgramBlock {
    ProgramBlock {
        kind,
        keyword_span: Span::new(l, kr),
        stmts,
        span: Span::new(l, r),
    }
}

pub fn program(blocks: Vec<Option<ProgramBlock>>, l: usize, r: usize) -> Program {
    Program {
        blocks: blocks.into_iter().flatten().collect(),
        comments: Vec::new(),
        span: Span::new(l, r),
    }
}

/// A standalone functions file: one implicit `functions` block.
pub fn functions_file(functions: Vec<Stmt>, l: usize, r: usize) -> Program {
    let block = ProgramBlock {
        kind: BlockKind::Functions,
        keyword_span: Span::new(l, l),
        stmts: functions,
        span: Span::new(l, r),
    };
    Program {
        blocks: vec![block],
        comments: Vec::new(),
        span: Span::new(l, r),
    }
}

pub fn if_stmt(cond: Expr, then: Stmt, otherwise: Option<Stmt>, l: usize, r: usize) -> Stmt {
    stmt(
        StmtKind::If {
            cond,
            then: Box::new(then),
            otherwise: otherwise.map(Box::new),
        },
        l,
        r,
    )
}

/// The `for (...)` header, before the body is known.
pub enum ForHead {
    Range(Ident, Expr, Expr),
    Each(Ident, Expr),
}

pub fn for_stmt(head: ForHead, body: Stmt, l: usize, r: usize) -> Stmt {
    let body = Box::new(body);
    let kind = match head {
        ForHead::Range(var, lower, upper) => StmtKind::For {
            var,
            lower,
            upper,
            body,
        },
        ForHead::Each(var, iter) => StmtKind::ForEach { var, iter, body },
    };
    stmt(kind, l, r)
}

/// A declaration used as the body of `if`/`while`/`for`: one statement, or
/// a block holding all names of `real a, b;`.
pub fn decl_body(mut decls: Vec<Stmt>, l: usize, r: usize) -> Stmt {
    if decls.len() == 1 {
        decls.remove(0)
    } else {
        stmt(StmtKind::Block(decls), l, r)
    }
}

/// Complex types take no bounds; stanc3's parser accepts them and its type
/// checker rejects them, so this is a semantic diagnostic.
pub fn complex_type(
    kind: SizedTypeKind,
    bounds: Option<Bounds>,
    l: usize,
    r: usize,
    problems: &mut Vec<Diagnostic>,
) -> SizedTypeKind {
    if bounds.is_some() {
        problems.push(
            Diagnostic::error(
                Kind::Semantic,
                codes::COMPLEX_BOUNDS,
                "complex types cannot have bounds or an offset/multiplier",
                Span::new(l, r),
            )
            .with_label("bounds on a complex type"),
        );
    }
    kind
}
