//! Single-token repairs after a parse that lalrpop could not finish.
//!
//! lalrpop's `!` recovery resyncs at `;` (statements) or `}` (functions),
//! but some very common slips leave it nowhere to resync: a missing `;`
//! before `}`, a missing `)` before `{`, an unclosed block at end of file,
//! a misspelled block name. Then the whole parse fails and editors would
//! get no tree at all. For those, we insert the missing closer (or replace
//! the misspelled block name) at the first such error and parse again, a
//! bounded number of times. Every repaired error is still reported.

use crate::diagnostic::Diagnostic;
use crate::syntax::ast::Program;
use crate::syntax::grammar::ProgramParser;
use crate::syntax::lexer::{Spanned, Token};
use lalrpop_util::{ErrorRecovery, ParseError};

/// How many repairs to try before giving up on a tree.
const MAX_REPAIRS: usize = 8;

pub type Recovery<'s> = ErrorRecovery<usize, Token<'s>, &'static str>;
type Failure<'s> = ParseError<usize, Token<'s>, &'static str>;

/// The result of parsing with repairs.
pub struct Parsed<'s> {
    /// Empty if even the repaired token stream could not be parsed.
    pub program: Program,
    /// Every parse error: those repaired, then those of the final parse.
    pub errors: Vec<Recovery<'s>>,
    /// Diagnostics raised by grammar actions of the final parse.
    pub problems: Vec<Diagnostic>,
}

/// How one parse attempt went wrong.
enum Outcome<'s> {
    /// lalrpop gave up.
    Failed(Failure<'s>),
    /// lalrpop finished, but ignored the input after a top-level error.
    Truncated(Program),
}

/// Parse `tokens`, repairing and re-parsing up to [`MAX_REPAIRS`] times.
pub fn parse_with_repairs(mut tokens: Vec<Spanned<'_>>, source_len: usize) -> Parsed<'_> {
    let mut repaired: Vec<Recovery<'_>> = Vec::new();
    loop {
        let mut recovered = Vec::new();
        let mut problems = Vec::new();
        let input = tokens
            .iter()
            .map(|t| Ok::<_, &'static str>((t.start, t.token, t.end)));
        let result = ProgramParser::new().parse(&mut recovered, &mut problems, input);
        let outcome = match result {
            Ok(program) if !recovered.iter().any(|r| lost_input(&r.error)) => {
                repaired.append(&mut recovered);
                return Parsed {
                    program,
                    errors: repaired,
                    problems,
                };
            }
            Ok(program) => Outcome::Truncated(program),
            Err(failure) => Outcome::Failed(failure),
        };
        let failure = match &outcome {
            Outcome::Failed(failure) => Some(failure),
            Outcome::Truncated(_) => None,
        };
        let edit = (repaired.len() < MAX_REPAIRS)
            .then(|| find_edit(&tokens, failure, &recovered))
            .flatten();
        if let Some((edit, fixed)) = edit {
            edit.apply(&mut tokens, source_len);
            repaired.push(ErrorRecovery {
                error: at_end_if_eof(fixed, source_len),
                dropped_tokens: Vec::new(),
            });
            continue;
        }
        let program = match outcome {
            Outcome::Truncated(program) => program,
            Outcome::Failed(failure) => {
                // Running out of input after earlier errors is usually
                // their echo (e.g. `while` read as a loop keyword).
                let echo = matches!(failure, ParseError::UnrecognizedEof { .. })
                    && !(repaired.is_empty() && recovered.is_empty());
                if !echo {
                    recovered.push(ErrorRecovery {
                        error: at_end_if_eof(failure, source_len),
                        dropped_tokens: Vec::new(),
                    });
                }
                Program::default()
            }
        };
        repaired.append(&mut recovered);
        return Parsed {
            program,
            errors: repaired,
            problems,
        };
    }
}

/// stanc3 reports an unexpected end of input at the very end of the text.
fn at_end_if_eof<'s>(failure: Failure<'s>, end: usize) -> Failure<'s> {
    match failure {
        ParseError::UnrecognizedEof { expected, .. } => ParseError::UnrecognizedEof {
            location: end,
            expected,
        },
        other => other,
    }
}

/// One token edit at an index of the token vector.
enum Edit<'s> {
    Insert(usize, Token<'s>),
    Replace(usize, Token<'s>),
}

impl<'s> Edit<'s> {
    fn apply(&self, tokens: &mut Vec<Spanned<'s>>, source_len: usize) {
        match *self {
            Edit::Insert(index, token) => {
                let at = tokens.get(index).map_or(source_len, |t| t.start);
                tokens.insert(
                    index,
                    Spanned {
                        token,
                        start: at,
                        end: at,
                    },
                );
            }
            Edit::Replace(index, token) => tokens[index].token = token,
        }
    }
}

/// The edit that fixes the earliest repairable error: the final failure
/// first (it stopped the parse), then the recovered errors in order.
fn find_edit<'s>(
    tokens: &[Spanned<'s>],
    failure: Option<&Failure<'s>>,
    recovered: &[Recovery<'s>],
) -> Option<(Edit<'s>, Failure<'s>)> {
    failure
        .into_iter()
        .chain(recovered.iter().map(|r| &r.error))
        .find_map(|error| edit_for(tokens, error).map(|edit| (edit, error.clone())))
}

fn edit_for<'s>(tokens: &[Spanned<'s>], error: &Failure<'s>) -> Option<Edit<'s>> {
    let (index, found, expected) = match error {
        ParseError::UnrecognizedToken {
            token: (start, found, _),
            expected,
        } => (
            tokens
                .iter()
                .position(|t| t.start == *start && t.token == *found)?,
            Some(*found),
            expected,
        ),
        ParseError::UnrecognizedEof { expected, .. } => (tokens.len(), None, expected),
        _ => return None,
    };
    let expects = |name: &str| expected.iter().any(|e| e.trim_matches('"') == name);
    // Where a statement may start, `;` is just an empty statement: it
    // would not close anything.
    let semicolon_closes = !expects("for");
    // Never stack two synthetic `;` (a repair that did not help).
    let after_synthetic_semicolon = index > 0
        && tokens[index - 1].token == Token::Semi
        && tokens[index - 1].start == tokens[index - 1].end;
    if let Some(Token::Ident(word)) = found
        && let Some(block) = block_keyword(word).filter(|_| expects("model"))
    {
        return Some(Edit::Replace(index, block));
    }
    let closer = [
        (";", Token::Semi),
        (")", Token::RParen),
        ("]", Token::RBracket),
        ("}", Token::RBrace),
    ]
    .into_iter()
    .find(|(name, _)| {
        expects(name) && (*name != ";" || (semicolon_closes && !after_synthetic_semicolon))
    })?;
    Some(Edit::Insert(index, closer.1))
}

/// The one-word block keyword a misspelled identifier most likely means.
fn block_keyword(word: &str) -> Option<Token<'static>> {
    [
        ("functions", Token::Functions),
        ("data", Token::Data),
        ("parameters", Token::Parameters),
        ("model", Token::Model),
    ]
    .into_iter()
    .map(|(name, token)| (strsim::levenshtein(word, name), name, token))
    .filter(|(distance, name, _)| *distance <= (name.len() / 3).max(1))
    .min_by_key(|(distance, _, _)| *distance)
    .map(|(_, _, token)| token)
}

/// A recovered error after which lalrpop's own recovery loses input worth
/// keeping: one between program blocks (the parse then ends early), or a
/// block keyword inside a block (the next block would be skipped).
fn lost_input(error: &Failure<'_>) -> bool {
    let block_keyword_inside = matches!(
        error,
        ParseError::UnrecognizedToken {
            token: (
                _,
                Token::Functions
                    | Token::Data
                    | Token::TransformedData
                    | Token::Parameters
                    | Token::TransformedParameters
                    | Token::Model
                    | Token::GeneratedQuantities,
                _
            ),
            ..
        }
    );
    block_keyword_inside || is_top_level(error)
}

/// An error between program blocks (lalrpop then ends the parse early).
fn is_top_level(error: &Failure<'_>) -> bool {
    const BLOCKS: [&str; 7] = [
        "functions",
        "data",
        "transformed data",
        "parameters",
        "transformed parameters",
        "model",
        "generated quantities",
    ];
    match error {
        ParseError::UnrecognizedToken { expected, .. } => {
            expected.is_empty()
                || expected
                    .iter()
                    .any(|e| BLOCKS.contains(&e.trim_matches('"')))
        }
        ParseError::ExtraToken { .. } => true,
        _ => false,
    }
}
