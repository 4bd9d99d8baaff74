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
    let mut out = Vec::new();
    for t in tokens.iter().filter(|t| t.token == Token::Error) {
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
                format!("invalid character `{}`", c.escape_default()),
                span,
            )
            .with_label("this character cannot appear here"),
            None => continue,
        };
        out.push(diagnostic);
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
        if let Token::Ident(word) = token
            && let Some(best) = closest_block_name(word)
        {
            diagnostic = diagnostic.with_help(format!("did you mean `{best}`?"));
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
    if token == Token::LBracket && expects(";") && expects("=") {
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

/// The grammar's name for a terminal, as lalrpop lists it (`"\";\""`).
fn terminal_name(expected: &str) -> String {
    let inner = expected
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(expected);
    inner.replace("\\\"", "\"").replace("\\\\", "\\")
}

/// "`;` or `,`", "one of `)`, `,`, an expression", ... or None if nothing
/// useful can be said.
fn describe_expected(expected: &[String]) -> Option<String> {
    let names: Vec<String> = expected.iter().map(|e| terminal_name(e)).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    let mut items: Vec<String> = Vec::new();
    let expression = has("identifier") && has("integer");
    let types = has("int") && has("real") && has("vector");
    for name in &names {
        if expression && EXPRESSION_STARTS.contains(&name.as_str()) {
            continue;
        }
        // `.N` (tuple component) and `T` (an identifier) are noise when
        // other choices exist.
        if (name == "dot number" && names.len() > 1) || (name == "T" && has("identifier")) {
            continue;
        }
        if name.ends_with('=') && name != "=" && has("=") && has("+=") {
            continue;
        }
        if types && TYPE_STARTS.contains(&name.as_str()) {
            continue;
        }
        let shown = match name.as_str() {
            "identifier" => "an identifier".to_string(),
            "integer" | "real number" | "dot number" | "imaginary number" => "a number".to_string(),
            "string" => "a string".to_string(),
            "=" if has("+=") => "an assignment operator".to_string(),
            "start of functions file" => continue,
            other => format!("`{other}`"),
        };
        if !items.contains(&shown) {
            items.push(shown);
        }
    }
    // Statement keywords and operators make long lists; summarise them.
    let statement = has("for") && has("while") && has("print");
    if statement {
        items.retain(|i| {
            !matches!(
                i.as_str(),
                "`for`"
                    | "`while`"
                    | "`if`"
                    | "`break`"
                    | "`continue`"
                    | "`return`"
                    | "`print`"
                    | "`reject`"
                    | "`fatal_error`"
                    | "`profile`"
                    | "`jacobian`"
                    | "`;`"
                    | "`{`"
                    | "`}`"
            )
        });
    }
    let operators = ["`+`", "`-`", "`*`", "`/`", "`^`", "`'`", "`||`", "`&&`"];
    let operator_heavy = items
        .iter()
        .filter(|i| operators.contains(&i.as_str()))
        .count()
        >= 4;
    if operator_heavy {
        items.retain(|i| {
            !matches!(
                i.as_str(),
                "`+`"
                    | "`-`"
                    | "`*`"
                    | "`/`"
                    | "`%`"
                    | "`\\`"
                    | "`%/%`"
                    | "`^`"
                    | "`.^`"
                    | "`.*`"
                    | "`./`"
                    | "`'`"
                    | "`||`"
                    | "`&&`"
                    | "`==`"
                    | "`!=`"
                    | "`<`"
                    | "`<=`"
                    | "`>`"
                    | "`>=`"
                    | "`?`"
                    | "`[`"
                    | "`dot number`"
            )
        });
    }
    let mut lead: Vec<String> = Vec::new();
    if statement {
        lead.push("a statement".to_string());
        if names.iter().any(|n| n == "}") {
            lead.push("`}`".to_string());
        }
    }
    if types {
        lead.push(if statement { "a declaration" } else { "a type" }.to_string());
    }
    if expression && !statement {
        lead.push("an expression".to_string());
    }
    // Punctuation the user most likely forgot comes first.
    items.sort_by_key(|i| match i.as_str() {
        "`;`" => 0,
        "`)`" | "`]`" | "`}`" => 1,
        "`,`" => 2,
        _ => 3,
    });
    let punctuation = items
        .iter()
        .take_while(|i| matches!(i.as_str(), "`;`" | "`)`" | "`]`" | "`}`" | "`,`"))
        .count();
    let rest = items.split_off(punctuation);
    let mut lead_then: Vec<String> = items;
    lead_then.extend(lead);
    let mut lead = lead_then;
    if operator_heavy {
        lead.push("an operator".to_string());
    }
    lead.extend(rest);
    match lead.len() {
        0 => None,
        1 => Some(lead.remove(0)),
        2 => Some(format!("{} or {}", lead[0], lead[1])),
        n if n <= 8 => Some(format!("one of {}", lead.join(", "))),
        _ => Some(format!("one of {}, ...", lead[..8].join(", "))),
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
