//! Guard against pathological nesting before parsing.
//!
//! The parser itself is table driven, but every later phase recurses over
//! the tree, so absurd nesting (10,000 parentheses) must stop here with a
//! clear diagnostic instead of overflowing a stack later.

use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::codes;
use crate::syntax::lexer::{Spanned, Token};

/// Deepest allowed nesting of `(`/`[`/`{` (stanc3 programs stay far below).
pub const MAX_BRACKET_DEPTH: usize = 256;
/// Longest allowed run of prefix operators / `^` chains (`- - - x`).
pub const MAX_OPERATOR_RUN: usize = 256;

/// The first place where nesting exceeds the limits, as a diagnostic.
pub fn check(tokens: &[Spanned<'_>]) -> Option<Diagnostic> {
    let mut depth = 0usize;
    let mut operator_run = 0usize;
    for t in tokens {
        match t.token {
            Token::LParen | Token::LBracket | Token::LBrace => {
                depth += 1;
                if depth > MAX_BRACKET_DEPTH {
                    return Some(too_deep(
                        t,
                        format!("brackets nested more than {MAX_BRACKET_DEPTH} deep"),
                    ));
                }
            }
            Token::RParen | Token::RBracket | Token::RBrace => depth = depth.saturating_sub(1),
            _ => {}
        }
        // Operators that nest to the right without brackets.
        match t.token {
            Token::Minus | Token::Plus | Token::Bang | Token::Hat | Token::EltPow => {
                operator_run += 1;
                if operator_run > MAX_OPERATOR_RUN {
                    return Some(too_deep(
                        t,
                        format!("more than {MAX_OPERATOR_RUN} chained prefix or `^` operators"),
                    ));
                }
            }
            // `a ^ b ^ c ...` alternates operands and operators.
            Token::Ident(_) | Token::IntLit(_) | Token::RealLit(_) | Token::DotNumber(_)
                if operator_run > 0 => {}
            _ => operator_run = 0,
        }
    }
    None
}

fn too_deep(token: &Spanned<'_>, what: String) -> Diagnostic {
    Diagnostic::error(
        Kind::Syntax,
        codes::TOO_DEEP,
        format!("nesting too deep: {what}"),
        Span::new(token.start, token.end),
    )
    .with_label("nesting limit exceeded here")
    .with_note("split the expression or block into smaller pieces")
}
