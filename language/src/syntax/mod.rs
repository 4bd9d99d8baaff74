//! Lexing and parsing: source text → [`ast::Program`] + diagnostics.
//!
//! Pipeline:
//! 1. [`lexer::lex`] (logos): tokens + comments; bad characters become
//!    error tokens, reported once here;
//! 2. `nesting`: refuses absurdly deep input (brackets > 256, prefix or `^`
//!    runs > 256, > 1,000 operators in one statement) with one diagnostic,
//!    so later recursive passes cannot overflow the stack;
//! 3. the lalrpop grammar (`grammar.lalrpop`) with `!` recovery that
//!    resyncs at `;` (statements) and `}` (function definitions);
//! 4. `repair`: when lalrpop cannot finish (missing `;` before `}`,
//!    missing `)` or `}`, misspelled block name), insert the missing token
//!    or fix the block name and parse again (at most 8 times), so a tree is
//!    still produced; every repaired error is still reported;
//! 5. `validate`: rules stanc3 encodes in its grammar but bat checks on
//!    the tree (constraints only on top-level declarations, only
//!    declarations in `data`/`parameters`, lvalue shapes, call statements).
//!
//! All diagnostics are sorted by position; the first is where stanc3
//! reports its (single) syntax error.
//!
//! # Syntax diagnostic codes
//!
//! | code | meaning |
//! |---|---|
//! | `E0001` | unexpected token (the parser expected something else) |
//! | `E0002` | unexpected end of input |
//! | `E0003` | invalid character, unterminated string or comment, `#include` |
//! | `E0004` | nesting too deep (brackets, blocks, or chained unary operators) |
//! | `E0005` | misplaced declaration or statement (e.g. statements in `data`, constraints on a local variable) |
//! | `E0006` | not an assignable expression / expression statement that is not a call |
//! | `E0007` | tuple component number too large |
//! | `E0008` | bounds on a complex type (kind: semantic, as in stanc3) |

pub mod ast;
mod builders;
mod errors;
pub mod lexer;
mod nesting;
mod printer;
mod repair;
mod validate;

pub use lexer::lex;
pub use printer::{
    expr_to_string, print_ast, sized_type as sized_type_to_string,
    unsized_type as unsized_type_to_string,
};

use crate::diagnostic::Diagnostic;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, unused_parens, unused_imports, dead_code)]
    grammar,
    "/syntax/grammar.rs"
);

/// Stable codes of syntax diagnostics (documented in the module docs).
pub mod codes {
    pub const UNEXPECTED_TOKEN: &str = "E0001";
    pub const UNEXPECTED_EOF: &str = "E0002";
    pub const INVALID_CHARACTER: &str = "E0003";
    pub const TOO_DEEP: &str = "E0004";
    pub const MISPLACED: &str = "E0005";
    pub const NOT_ASSIGNABLE: &str = "E0006";
    pub const BAD_TUPLE_INDEX: &str = "E0007";
    pub const COMPLEX_BOUNDS: &str = "E0008";
}

/// Parse a whole program. Never panics; on bad input returns a partial
/// program (with `Error` nodes) and at least one syntax diagnostic.
pub fn parse(source: &str) -> (ast::Program, Vec<Diagnostic>) {
    parse_with(source, false)
}

/// Parse a standalone functions file (`.stanfunctions`): function
/// definitions only, without the `functions { }` wrapper. The result has
/// one `functions` block.
pub fn parse_functions_only(source: &str) -> (ast::Program, Vec<Diagnostic>) {
    parse_with(source, true)
}

fn parse_with(source: &str, functions_only: bool) -> (ast::Program, Vec<Diagnostic>) {
    let (mut tokens, comments) = lexer::lex(source);
    let mut diagnostics = errors::lexical_errors(source, &tokens, &comments);
    // Reported above; the rest of the file is still parsed.
    tokens.retain(|t| !matches!(t.token, lexer::Token::Include(_)));
    let comments = comments
        .iter()
        .map(|c| ast::Comment {
            text: source[c.start..c.end].to_string(),
            span: crate::span::Span::new(c.start, c.end),
        })
        .collect();

    if let Some(too_deep) = nesting::check(&tokens) {
        diagnostics.push(too_deep);
        let program = ast::Program {
            blocks: Vec::new(),
            comments,
            span: crate::span::Span::new(0, source.len()),
        };
        return (program, diagnostics);
    }

    if functions_only {
        tokens.insert(
            0,
            lexer::Spanned {
                token: lexer::Token::StartFunctionsOnly,
                start: 0,
                end: 0,
            },
        );
    }
    let original_tokens = tokens.clone();
    let parsed = repair::parse_with_repairs(tokens, source.len());
    let mut program = parsed.program;
    program.comments = comments;
    program.span = crate::span::Span::new(0, source.len());

    diagnostics.extend(errors::parse_errors(
        source,
        &original_tokens,
        parsed.errors,
    ));
    diagnostics.extend(parsed.problems);
    diagnostics.extend(validate::validate(&program, source));
    diagnostics.sort_by_key(|d| (d.primary.span.start, d.primary.span.end));
    (program, diagnostics)
}
