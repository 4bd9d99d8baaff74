//! Guard against pathological nesting before parsing.
//!
//! The parser itself is table driven, but every later phase recurses over
//! the tree, so absurd nesting (10,000 parentheses, `- - - ... x`, a
//! 100,000-term sum) must stop here with a clear diagnostic instead of
//! overflowing a stack later.

use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::codes;
use crate::syntax::lexer::{Spanned, Token};

/// Deepest allowed nesting of `(`/`[`/`{` (stanc3 programs stay far below).
pub const MAX_BRACKET_DEPTH: usize = 256;
/// Longest allowed run of prefix operators or `^` chain (each nests).
pub const MAX_OPERATOR_RUN: usize = 256;
/// Most operators in one statement: left-associative chains (`a + b + ...`)
/// nest as deep as they are long, and prefix runs between brackets add up.
/// With the bracket limit this bounds any expression tree's depth by
/// about 1,300, which recursive passes handle on a 2 MiB thread stack.
pub const MAX_OPERATORS_PER_STATEMENT: usize = 1_000;

/// The first place where nesting exceeds the limits, as a diagnostic.
pub fn check(tokens: &[Spanned<'_>]) -> Option<Diagnostic> {
    let mut depth = 0usize;
    let mut prefix_run = 0usize;
    let mut power_run = 0usize;
    let mut operators = 0usize;
    let mut previous_ends_operand = false;
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
        let is_prefix =
            matches!(t.token, Token::Minus | Token::Plus | Token::Bang) && !previous_ends_operand;
        prefix_run = if is_prefix { prefix_run + 1 } else { 0 };
        if prefix_run > MAX_OPERATOR_RUN {
            return Some(too_deep(
                t,
                format!("more than {MAX_OPERATOR_RUN} prefix operators in a row"),
            ));
        }
        match t.token {
            Token::Hat | Token::EltPow => {
                power_run += 1;
                if power_run > MAX_OPERATOR_RUN {
                    return Some(too_deep(
                        t,
                        format!("more than {MAX_OPERATOR_RUN} chained `^` operators"),
                    ));
                }
            }
            Token::Semi | Token::LBrace | Token::RBrace => {
                power_run = 0;
                operators = 0;
            }
            _ => {}
        }
        if is_prefix || (is_binary_operator(t.token) && previous_ends_operand) {
            operators += 1;
            if operators > MAX_OPERATORS_PER_STATEMENT {
                return Some(too_deep(
                    t,
                    format!("more than {MAX_OPERATORS_PER_STATEMENT} operators in one statement"),
                ));
            }
        }
        // Only operands and `^` keep a `^` chain going.
        if !matches!(
            t.token,
            Token::Hat
                | Token::EltPow
                | Token::Ident(_)
                | Token::IntLit(_)
                | Token::RealLit(_)
                | Token::DotNumber(_)
                | Token::ImagLit(_)
                | Token::Minus
                | Token::Plus
                | Token::Bang
        ) {
            power_run = 0;
        }
        previous_ends_operand = matches!(
            t.token,
            Token::Ident(_)
                | Token::Truncate
                | Token::IntLit(_)
                | Token::RealLit(_)
                | Token::DotNumber(_)
                | Token::ImagLit(_)
                | Token::RParen
                | Token::RBracket
                | Token::RBrace
                | Token::Quote
        );
    }
    None
}

fn is_binary_operator(token: Token<'_>) -> bool {
    use Token::*;
    matches!(
        token,
        Plus | Minus
            | Star
            | Slash
            | Percent
            | Backslash
            | IntDiv
            | Hat
            | EltPow
            | EltMul
            | EltDiv
            | AndAnd
            | OrOr
            | EqEq
            | NotEq
            | Lt
            | Leq
            | Gt
            | Geq
            | Question
    )
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
