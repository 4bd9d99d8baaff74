//! Lexing and parsing: source text → [`ast::Program`] + diagnostics.
//!
//! Pipeline: [`lexer::lex`] (logos) → nesting-depth guard → the lalrpop
//! grammar (`grammar.lalrpop`, with statement-level error recovery) →
//! [`validate`] (restrictions that depend on where a construct appears).
//!
//! # Syntax diagnostic codes
//!
//! | code | meaning |
//! |---|---|
//! | `E0001` | unexpected token (the parser expected something else) |
//! | `E0002` | unexpected end of input |
//! | `E0003` | invalid character or unterminated string literal |
//! | `E0004` | nesting too deep (brackets, blocks, or chained unary operators) |
//! | `E0005` | misplaced declaration or statement (e.g. statements in `data`, constraints on a local variable) |
//! | `E0006` | not an assignable expression / expression statement that is not a call |
//! | `E0007` | tuple component number too large |
//! | `E0008` | empty or ill-formed literal or type (e.g. `{}`, nested `array`) |

pub mod ast;
mod builders;
mod errors;
pub mod lexer;
mod nesting;
mod printer;
mod validate;

pub use printer::print_ast;

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
    pub const ILL_FORMED: &str = "E0008";
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
    let mut diagnostics = errors::lexical_errors(source, &tokens);
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
    let mut recovered = Vec::new();
    let mut problems = Vec::new();
    let input = tokens
        .iter()
        .map(|t| Ok::<_, &'static str>((t.start, t.token, t.end)));
    let result = grammar::ProgramParser::new().parse(&mut recovered, &mut problems, input);
    let mut program = match result {
        Ok(program) => program,
        Err(error) => {
            recovered.push(lalrpop_util::ErrorRecovery {
                error,
                dropped_tokens: Vec::new(),
            });
            ast::Program::default()
        }
    };
    program.comments = comments;
    program.span = crate::span::Span::new(0, source.len());

    diagnostics.extend(errors::parse_errors(source, &tokens, recovered));
    diagnostics.extend(problems);
    if !diagnostics
        .iter()
        .any(|d| d.code == codes::UNEXPECTED_EOF || d.code == codes::UNEXPECTED_TOKEN)
    {
        diagnostics.extend(validate::validate(&program, functions_only));
    } else {
        diagnostics.extend(validate::validate(&program, functions_only));
    }
    diagnostics.sort_by_key(|d| (d.primary.span.start, d.primary.span.end));
    (program, diagnostics)
}
