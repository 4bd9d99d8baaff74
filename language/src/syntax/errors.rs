//! Turning lexer error tokens and lalrpop parse errors into diagnostics
//! with readable token names.

use crate::diagnostic::{Diagnostic, Kind};
use crate::span::Span;
use crate::syntax::codes;
use crate::syntax::lexer::{Spanned, Token};
use lalrpop_util::{ErrorRecovery, ParseError};

const BLOCK_NAMES: [&str; 7] = [
    "functions",
    "data",
    "transformed data",
    "parameters",
    "transformed parameters",
    "model",
    "generated quantities",
];

/// Terminals that can start an expression; collapsed to "an expression".
const EXPRESSION_STARTS: [&str; 14] = [
    "identifier",
    "integer",
    "real number",
    "dot number",
    "imaginary number",
    "(",
    "[",
    "{",
    "-",
    "+",
    "!",
    "target",
    "T",
    "string",
];

/// Terminals that start a type; collapsed to "a type".
const TYPE_STARTS: [&str; 23] = [
    "int",
    "real",
    "complex",
    "vector",
    "row_vector",
    "matrix",
    "complex_vector",
    "complex_row_vector",
    "complex_matrix",
    "ordered",
    "positive_ordered",
    "simplex",
    "unit_vector",
    "sum_to_zero_vector",
    "sum_to_zero_matrix",
    "cholesky_factor_corr",
    "cholesky_factor_cov",
    "corr_matrix",
    "cov_matrix",
    "column_stochastic_matrix",
    "row_stochastic_matrix",
    "array",
    "tuple",
];

/// Diagnostics for characters the lexer could not read and for unterminated
/// block comments.
pub fn lexical_errors(
    source: &str,
    tokens: &[Spanned<'_>],
    comments: &[Spanned<'_>],
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    let mut previous_error_end = None;
    for t in tokens.iter().filter(|t| t.token == Token::Error) {
        // A run of adjacent bad characters is one problem.
        if previous_error_end == Some(t.start) {
            previous_error_end = Some(t.end);
            if let Some(last) = out.last_mut() {
                last.primary.span.end = t.end as u32;
            }
            continue;
        }
        previous_error_end = Some(t.end);
        let text = &source[t.start..t.end];
        let span = Span::new(t.start, t.end);
        let diagnostic = match text.chars().next() {
            Some('"') => Diagnostic::error(
                Kind::Syntax,
                codes::INVALID_CHARACTER,
                "unterminated string literal",
                span,
            )
            .with_label("this string is not closed on the same line")
            .with_note("string literals cannot span lines"),
            Some('#') => Diagnostic::error(
                Kind::Syntax,
                codes::INVALID_CHARACTER,
                "`#` comments are not Stan syntax",
                span,
            )
            .with_label("unexpected `#`")
            .with_help("use `//` or `/* ... */` for comments (`#` was removed in Stan 2.33)"),
            Some(c) => Diagnostic::error(
                Kind::Syntax,
                codes::INVALID_CHARACTER,
                if c.is_control() || c.is_whitespace() {
                    format!("invalid character `{}`", c.escape_unicode())
                } else {
                    format!("invalid character `{c}`")
                },
                span,
            )
            .with_label("this character cannot appear here"),
            None => continue,
        };
        out.push(diagnostic);
    }
    for t in tokens {
        if let Token::Include(directive) = t.token {
            out.push(
                Diagnostic::error(
                    Kind::Syntax,
                    codes::INVALID_CHARACTER,
                    "`#include` is not supported",
                    Span::new(t.start, t.end),
                )
                .with_label(format!("`{}`", directive.trim_end()))
                .with_help("paste the included file's contents here"),
            );
        }
    }
    for c in comments {
        let text = &source[c.start..c.end];
        if text.starts_with("/*") && !(text.len() >= 4 && text.ends_with("*/")) {
            out.push(
                Diagnostic::error(
                    Kind::Syntax,
                    codes::INVALID_CHARACTER,
                    "unterminated block comment",
                    Span::new(c.start, c.start + 2),
                )
                .with_label("this comment is never closed with `*/`"),
            );
        }
    }
    out
}

type Recovery<'s> = ErrorRecovery<usize, Token<'s>, &'static str>;

/// Diagnostics for the parse errors the parser recovered from (and the
/// final one, if it gave up).
pub fn parse_errors(
    source: &str,
    tokens: &[Spanned<'_>],
    recovered: Vec<Recovery<'_>>,
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for recovery in recovered {
        let diagnostic = match recovery.error {
            ParseError::UnrecognizedToken {
                token: (start, token, end),
                expected,
            } => {
                // The lexer already reported its error tokens.
                if token == Token::Error {
                    continue;
                }
                unexpected_token(source, tokens, token, start, end, &expected)
            }
            ParseError::ExtraToken {
                token: (start, token, end),
            } => unexpected_token(source, tokens, token, start, end, &[]),
            ParseError::UnrecognizedEof { location, expected } => {
                let what = describe_expected(&expected);
                Diagnostic::error(
                    Kind::Syntax,
                    codes::UNEXPECTED_EOF,
                    match what {
                        Some(what) => format!("unexpected end of input; expected {what}"),
                        None => "unexpected end of input".to_string(),
                    },
                    Span::new(location, location),
                )
                .with_label("the program ends here")
            }
            ParseError::InvalidToken { location } => Diagnostic::error(
                Kind::Syntax,
                codes::INVALID_CHARACTER,
                "invalid token",
                Span::new(location, location),
            ),
            ParseError::User { error } => Diagnostic::error(
                Kind::Syntax,
                codes::UNEXPECTED_TOKEN,
                error,
                Span::new(0, 0),
            ),
        };
        // Recovery can report the same place twice; keep the first.
        if !out
            .iter()
            .any(|d| d.primary.span == diagnostic.primary.span)
        {
            out.push(diagnostic);
        }
    }
    out
}

fn unexpected_token(
    source: &str,
    tokens: &[Spanned<'_>],
    token: Token<'_>,
    start: usize,
    end: usize,
    expected: &[String],
) -> Diagnostic {
    let span = Span::new(start, end);
    let names: Vec<String> = expected.iter().map(|e| terminal_name(e)).collect();
    let found = token.describe();
    let at_top_level = names.is_empty() || names.iter().any(|n| BLOCK_NAMES.contains(&n.as_str()));

    // Blocks in the wrong order, or a misspelled block name.
    if at_top_level {
        if let Some(block) = token.fixed_text().filter(|t| BLOCK_NAMES.contains(t)) {
            return Diagnostic::error(
                Kind::Syntax,
                codes::UNEXPECTED_TOKEN,
                format!("block `{block}` is out of order or repeated"),
                span,
            )
            .with_label("unexpected block")
            .with_note(format!(
                "program blocks must appear at most once, in this order: {}",
                BLOCK_NAMES.join(", ")
            ));
        }
        let mut diagnostic = Diagnostic::error(
            Kind::Syntax,
            codes::UNEXPECTED_TOKEN,
            format!("expected a program block, found {found}"),
            span,
        )
        .with_label("expected a block such as `model {`");
        if let Token::Ident(word) = token {
            // Two-word names: `transformed paramters`, `generated quantity`.
            let following = tokens.get(tokens.partition_point(|t| t.start < end));
            let phrase = match following.map(|t| t.token) {
                Some(Token::Ident(second)) => Some(format!("{word} {second}")),
                _ => None,
            };
            let best = phrase
                .as_deref()
                .and_then(closest_block_name)
                .filter(|best| best.contains(' '))
                .or_else(|| closest_block_name(word));
            if let Some(best) = best {
                diagnostic = diagnostic.with_help(format!("did you mean `{best}`?"));
            }
        }
        return diagnostic;
    }

    // A reserved word where a name is expected.
    let keyword = token
        .fixed_text()
        .filter(|t| t.chars().all(|c| c.is_alphabetic() || c == '_'));
    // Only where a name is expected, not anywhere an expression may start.
    let name_expected = names.iter().any(|n| n == "identifier")
        && names
            .iter()
            .all(|n| !EXPRESSION_STARTS.contains(&n.as_str()) || n == "identifier" || n == "T");
    if let Some(word) = keyword.filter(|_| name_expected) {
        return Diagnostic::error(
            Kind::Syntax,
            codes::UNEXPECTED_TOKEN,
            format!("expected an identifier, found reserved word `{word}`"),
            span,
        )
        .with_label("reserved word")
        .with_note(format!(
            "`{word}` is a reserved word in Stan and cannot be used as a name"
        ));
    }

    if let Some(diagnostic) = unknown_type(tokens, token, start, &names) {
        return diagnostic;
    }

    let what = describe_expected(expected);
    let message = match &what {
        Some(what) => format!("expected {what}, found {found}"),
        None => format!("unexpected {found}"),
    };
    let mut diagnostic = Diagnostic::error(Kind::Syntax, codes::UNEXPECTED_TOKEN, message, span)
        .with_label(match &what {
            Some(what) if what.len() < 40 => format!("expected {what}"),
            _ => "unexpected token".to_string(),
        });

    // Hints for syntax removed in Stan 2.33 and other common slips.
    // Tokens are sorted by position.
    let next_index = tokens.partition_point(|t| t.start < end);
    let next = tokens.get(next_index).map(|t| t.token);
    let expects = |name: &str| names.iter().any(|n| n == name);
    let is_block_keyword = token
        .fixed_text()
        .is_some_and(|text| BLOCK_NAMES.contains(&text));
    if is_block_keyword && expects("}") {
        diagnostic = diagnostic.with_help("is a `}` missing to close the previous block?");
    } else if token == Token::LBracket && expects(";") && expects("=") {
        diagnostic = diagnostic.with_help(
            "array declarations are written `array[N] real x;` (the `real x[N]` form was removed in Stan 2.33)",
        );
    } else if token == Token::Lt && next == Some(Token::Minus) && source[end..].starts_with('-') {
        diagnostic =
            diagnostic.with_help("assignment is written `=` (`<-` was removed in Stan 2.33)");
    } else if expects(";") {
        let previous = tokens[..tokens.partition_point(|t| t.end <= start)].last();
        // Only when the statement plausibly ended at a line break.
        let line_break_between = previous.is_some_and(|p| source[p.end..start].contains('\n'));
        if let Some(previous) = previous.filter(|_| line_break_between) {
            diagnostic = diagnostic.with_secondary(
                Span::new(previous.end, previous.end),
                "perhaps a `;` is missing here",
            );
        }
    }
    diagnostic
}

/// `double y;`: an identifier where a type was meant. Reported at the
/// would-be type, where stanc3 points.
fn unknown_type(
    tokens: &[Spanned<'_>],
    token: Token<'_>,
    start: usize,
    expected: &[String],
) -> Option<Diagnostic> {
    let Token::Ident(name) = token else {
        return None;
    };
    let index = tokens.partition_point(|t| t.start < start);
    let previous = tokens.get(index.checked_sub(1)?)?;
    let Token::Ident(type_name) = previous.token else {
        return None;
    };
    let statement_start = index < 2
        || matches!(
            tokens[index - 2].token,
            Token::Semi | Token::LBrace | Token::RBrace
        );
    if !statement_start || !expected.iter().any(|e| e == "~") {
        return None;
    }
    let known_types = [
        "int",
        "real",
        "complex",
        "vector",
        "row_vector",
        "matrix",
        "array",
        "tuple",
        "simplex",
        "ordered",
    ];
    let help = match type_name {
        "double" | "float" => Some("Stan's floating-point type is `real`".to_string()),
        "integer" | "long" | "bool" => Some("Stan's integer type is `int`".to_string()),
        _ => known_types
            .iter()
            .find(|t| strsim::levenshtein(type_name, t) <= 2)
            .map(|t| format!("did you mean `{t}`?")),
    };
    let mut diagnostic = Diagnostic::error(
        Kind::Syntax,
        codes::UNEXPECTED_TOKEN,
        format!("unknown type `{type_name}` in the declaration of `{name}`"),
        Span::new(previous.start, previous.end),
    )
    .with_label("not a Stan type");
    if let Some(help) = help {
        diagnostic = diagnostic.with_help(help);
    }
    Some(diagnostic)
}

/// The grammar's name for a terminal, as lalrpop lists it (`"\";\""`).
fn terminal_name(expected: &str) -> String {
    let inner = expected
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(expected);
    inner.replace("\\\"", "\"").replace("\\\\", "\\")
}

/// Statement keywords, summarised as "a statement".
const STATEMENT_STARTS: [&str; 11] = [
    "for",
    "while",
    "if",
    "break",
    "continue",
    "return",
    "print",
    "reject",
    "fatal_error",
    "profile",
    "jacobian",
];

/// Infix and postfix operators, summarised as "an operator".
const OPERATORS: [&str; 22] = [
    "+", "-", "*", "/", "%", "\\", "%/%", "^", ".^", ".*", "./", "'", "||", "&&", "==", "!=", "<",
    "<=", ">", ">=", "?", "[",
];

/// Compound assignments, summarised with `=` as "an assignment operator".
const COMPOUND_ASSIGNMENTS: [&str; 6] = ["+=", "-=", "*=", "/=", ".*=", "./="];

/// Closing punctuation, listed first: it is what users most often forget.
const CLOSERS: [&str; 5] = [";", ")", "]", "}", ","];

/// A readable summary of what the parser expected: "`;` or `,`",
/// "one of `)`, `,`, an operator", ... or None if nothing useful can be
/// said.
fn describe_expected(expected: &[String]) -> Option<String> {
    let names: Vec<String> = expected.iter().map(|e| terminal_name(e)).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    let statement = has("for") && has("while");
    let expression = has("identifier") && has("integer");
    let types = has("int") && has("real") && has("vector");
    let operators = names
        .iter()
        .filter(|n| OPERATORS.contains(&n.as_str()))
        .count()
        >= 4;
    let assignment = has("=") && has("+=");

    let mut parts: Vec<String> = Vec::new();
    // In statement position `;` (empty statement) and `}` read better
    // after "a statement".
    for closer in CLOSERS {
        if has(closer) && !(statement && (closer == ";" || closer == "}")) {
            parts.push(format!("`{closer}`"));
        }
    }
    if statement {
        parts.push("a statement".to_string());
        if has("}") {
            parts.push("`}`".to_string());
        }
    }
    if types {
        parts.push(if statement { "a declaration" } else { "a type" }.to_string());
    }
    if expression && !statement {
        parts.push("an expression".to_string());
    }
    if operators {
        parts.push("an operator".to_string());
    }
    for name in &names {
        let n = name.as_str();
        let summarised = CLOSERS.contains(&n)
            || (statement && (STATEMENT_STARTS.contains(&n) || n == "{"))
            || (types && TYPE_STARTS.contains(&n))
            || (expression && EXPRESSION_STARTS.contains(&n))
            || (operators && OPERATORS.contains(&n))
            || (assignment && COMPOUND_ASSIGNMENTS.contains(&n))
            // `.N` (tuple component) and `T` (an identifier) are noise.
            || (n == "dot number" && names.len() > 1)
            || (n == "T" && has("identifier"))
            || n == "start of functions file";
        if summarised {
            continue;
        }
        let shown = match n {
            "identifier" => "an identifier".to_string(),
            "integer" | "real number" | "dot number" | "imaginary number" => "a number".to_string(),
            "string" => "a string".to_string(),
            "=" if assignment => "an assignment operator".to_string(),
            "T" => "a truncation `T[...]`".to_string(),
            other => format!("`{other}`"),
        };
        if !parts.contains(&shown) {
            parts.push(shown);
        }
    }
    match parts.len() {
        0 => None,
        1 => Some(parts.remove(0)),
        2 => Some(format!("{} or {}", parts[0], parts[1])),
        n if n <= 8 => Some(format!("one of {}", parts.join(", "))),
        _ => Some(format!("one of {}, ...", parts[..8].join(", "))),
    }
}

fn closest_block_name(word: &str) -> Option<&'static str> {
    BLOCK_NAMES
        .iter()
        .copied()
        .map(|name| (strsim::levenshtein(word, name), name))
        .filter(|(distance, name)| *distance <= (name.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}
