//! The Stan lexer: source text → tokens with byte spans.
//!
//! Built with logos. It never fails: a character that starts no token becomes
//! [`Token::Error`], which the parser turns into a syntax diagnostic.
//! Comments are returned as tokens too; [`lex`] moves them aside.

use logos::Logos;

/// Skips a `/* ... */` comment; an unterminated one runs to end of input.
fn block_comment<'s>(lex: &mut logos::Lexer<'s, Token<'s>>) -> &'s str {
    let rest = lex.remainder();
    let len = rest.find("*/").map_or(rest.len(), |i| i + 2);
    lex.bump(len);
    lex.slice()
}

#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\f\v]+")]
pub enum Token<'s> {
    // ------------------------------------------------------------ blocks
    #[token("functions")]
    Functions,
    #[token("data")]
    Data,
    #[regex(r"transformed[ \t\r\n]+data")]
    TransformedData,
    #[token("parameters")]
    Parameters,
    #[regex(r"transformed[ \t\r\n]+parameters")]
    TransformedParameters,
    #[token("model")]
    Model,
    #[regex(r"generated[ \t\r\n]+quantities")]
    GeneratedQuantities,

    // ------------------------------------------------------------ types
    #[token("int")]
    Int,
    #[token("real")]
    Real,
    #[token("complex")]
    Complex,
    #[token("vector")]
    Vector,
    #[token("row_vector")]
    RowVector,
    #[token("matrix")]
    Matrix,
    #[token("complex_vector")]
    ComplexVector,
    #[token("complex_row_vector")]
    ComplexRowVector,
    #[token("complex_matrix")]
    ComplexMatrix,
    #[token("ordered")]
    Ordered,
    #[token("positive_ordered")]
    PositiveOrdered,
    #[token("simplex")]
    Simplex,
    #[token("unit_vector")]
    UnitVector,
    #[token("sum_to_zero_vector")]
    SumToZeroVector,
    #[token("sum_to_zero_matrix")]
    SumToZeroMatrix,
    #[token("cholesky_factor_corr")]
    CholeskyFactorCorr,
    #[token("cholesky_factor_cov")]
    CholeskyFactorCov,
    #[token("corr_matrix")]
    CorrMatrix,
    #[token("cov_matrix")]
    CovMatrix,
    #[token("column_stochastic_matrix")]
    ColumnStochasticMatrix,
    #[token("row_stochastic_matrix")]
    RowStochasticMatrix,
    #[token("array")]
    Array,
    #[token("tuple")]
    Tuple,
    #[token("void")]
    Void,
    #[token("lower")]
    Lower,
    #[token("upper")]
    Upper,
    #[token("offset")]
    Offset,
    #[token("multiplier")]
    Multiplier,

    // ------------------------------------------------------------ statements
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("while")]
    While,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    #[token("return")]
    Return,
    #[token("print")]
    Print,
    #[token("reject")]
    Reject,
    #[token("fatal_error")]
    FatalError,
    #[token("target")]
    Target,
    #[token("jacobian")]
    Jacobian,
    #[token("profile")]
    Profile,
    /// `T`: truncation after `~`, an ordinary identifier elsewhere.
    #[token("T", priority = 5)]
    Truncate,

    // ------------------------------------------------------------ punctuation
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token("|")]
    Bar,
    #[token("?")]
    Question,
    #[token(":")]
    Colon,
    #[token("~")]
    Tilde,

    // ------------------------------------------------------------ operators
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("\\")]
    Backslash,
    #[token("%/%")]
    IntDiv,
    #[token("^")]
    Hat,
    #[token(".^")]
    EltPow,
    #[token(".*")]
    EltMul,
    #[token("./")]
    EltDiv,
    #[token("'")]
    Quote,
    #[token("!")]
    Bang,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Leq,
    #[token(">")]
    Gt,
    #[token(">=")]
    Geq,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusAssign,
    #[token("-=")]
    MinusAssign,
    #[token("*=")]
    StarAssign,
    #[token("/=")]
    SlashAssign,
    #[token(".*=")]
    EltMulAssign,
    #[token("./=")]
    EltDivAssign,

    // ------------------------------------------------------------ literals
    #[regex(r"[a-zA-Z][a-zA-Z0-9_]*", |lex| lex.slice())]
    Ident(&'s str),
    #[regex(r"[0-9]+(_[0-9]+)*", |lex| lex.slice())]
    IntLit(&'s str),
    /// `1.5`, `1.`, `1e3`, `.5e3` (but not plain `.5`: see `DotNumber`).
    #[regex(
        r"[0-9]+(_[0-9]+)*\.([0-9]+(_[0-9]+)*)?([eE][+-]?[0-9]+(_[0-9]+)*)?",
        |lex| lex.slice()
    )]
    #[regex(r"[0-9]+(_[0-9]+)*[eE][+-]?[0-9]+(_[0-9]+)*", |lex| lex.slice())]
    #[regex(r"\.[0-9]+(_[0-9]+)*[eE][+-]?[0-9]+(_[0-9]+)*", |lex| lex.slice())]
    RealLit(&'s str),
    /// `.5`: a real literal, or tuple component 5 after a postfix
    /// expression (`x.5`); the grammar decides.
    #[regex(r"\.[0-9]+(_[0-9]+)*", |lex| lex.slice())]
    DotNumber(&'s str),
    /// `2i`, `1.5i`, `.5i`, `1e3i`
    #[regex(
        r"([0-9]+(_[0-9]+)*(\.([0-9]+(_[0-9]+)*)?)?|\.[0-9]+(_[0-9]+)*)([eE][+-]?[0-9]+(_[0-9]+)*)?i",
        |lex| lex.slice()
    )]
    ImagLit(&'s str),
    /// String literal including its quotes; no newline inside.
    #[regex(r#""[^"\n\r]*""#, |lex| lex.slice())]
    StringLit(&'s str),

    // ------------------------------------------------------------ trivia
    #[regex(r"//[^\n]*", |lex| lex.slice(), allow_greedy = true)]
    LineComment(&'s str),
    #[token("/*", block_comment)]
    BlockComment(&'s str),

    /// `#include "file"`: stanc3 splices the file in; bat reports it and
    /// parses the rest (see `parse`).
    #[regex(r"#include[^\n]*", |lex| lex.slice(), allow_greedy = true)]
    Include(&'s str),

    /// Synthetic first token of a standalone `.stanfunctions` file.
    StartFunctionsOnly,
    /// A character that starts no token.
    Error,
}

/// A token with its byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spanned<'s> {
    pub token: Token<'s>,
    pub start: usize,
    pub end: usize,
}

/// Lex `source` into tokens (comments removed) and comments.
pub fn lex(source: &str) -> (Vec<Spanned<'_>>, Vec<Spanned<'_>>) {
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let mut lexer = Token::lexer(source);
    while let Some(result) = lexer.next() {
        let span = lexer.span();
        let token = result.unwrap_or(Token::Error);
        let item = Spanned {
            token,
            start: span.start,
            end: span.end,
        };
        match token {
            Token::LineComment(_) | Token::BlockComment(_) => comments.push(item),
            _ => tokens.push(item),
        }
    }
    (tokens, comments)
}

impl Token<'_> {
    /// How the token is named in diagnostics.
    pub fn describe(&self) -> String {
        match self {
            Token::Ident(s) => format!("identifier `{s}`"),
            Token::IntLit(s) | Token::RealLit(s) | Token::DotNumber(s) | Token::ImagLit(s) => {
                format!("number `{s}`")
            }
            Token::StringLit(s) => format!("string {s}"),
            Token::LineComment(_) | Token::BlockComment(_) => "a comment".to_string(),
            Token::StartFunctionsOnly => "start of file".to_string(),
            Token::Include(_) => "an `#include` directive".to_string(),
            Token::Error => "an invalid character".to_string(),
            other => format!("`{}`", other.fixed_text().unwrap_or("?")),
        }
    }

    /// The text of a keyword or punctuation token.
    pub fn fixed_text(&self) -> Option<&'static str> {
        use Token::*;
        Some(match self {
            Functions => "functions",
            Data => "data",
            TransformedData => "transformed data",
            Parameters => "parameters",
            TransformedParameters => "transformed parameters",
            Model => "model",
            GeneratedQuantities => "generated quantities",
            Int => "int",
            Real => "real",
            Complex => "complex",
            Vector => "vector",
            RowVector => "row_vector",
            Matrix => "matrix",
            ComplexVector => "complex_vector",
            ComplexRowVector => "complex_row_vector",
            ComplexMatrix => "complex_matrix",
            Ordered => "ordered",
            PositiveOrdered => "positive_ordered",
            Simplex => "simplex",
            UnitVector => "unit_vector",
            SumToZeroVector => "sum_to_zero_vector",
            SumToZeroMatrix => "sum_to_zero_matrix",
            CholeskyFactorCorr => "cholesky_factor_corr",
            CholeskyFactorCov => "cholesky_factor_cov",
            CorrMatrix => "corr_matrix",
            CovMatrix => "cov_matrix",
            ColumnStochasticMatrix => "column_stochastic_matrix",
            RowStochasticMatrix => "row_stochastic_matrix",
            Array => "array",
            Tuple => "tuple",
            Void => "void",
            Lower => "lower",
            Upper => "upper",
            Offset => "offset",
            Multiplier => "multiplier",
            For => "for",
            In => "in",
            While => "while",
            If => "if",
            Else => "else",
            Break => "break",
            Continue => "continue",
            Return => "return",
            Print => "print",
            Reject => "reject",
            FatalError => "fatal_error",
            Target => "target",
            Jacobian => "jacobian",
            Profile => "profile",
            Truncate => "T",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Comma => ",",
            Semi => ";",
            Bar => "|",
            Question => "?",
            Colon => ":",
            Tilde => "~",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            Percent => "%",
            Backslash => "\\",
            IntDiv => "%/%",
            Hat => "^",
            EltPow => ".^",
            EltMul => ".*",
            EltDiv => "./",
            Quote => "'",
            Bang => "!",
            AndAnd => "&&",
            OrOr => "||",
            EqEq => "==",
            NotEq => "!=",
            Lt => "<",
            Leq => "<=",
            Gt => ">",
            Geq => ">=",
            Assign => "=",
            PlusAssign => "+=",
            MinusAssign => "-=",
            StarAssign => "*=",
            SlashAssign => "/=",
            EltMulAssign => ".*=",
            EltDivAssign => "./=",
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Token<'_>> {
        lex(src).0.into_iter().map(|t| t.token).collect()
    }

    #[test]
    fn numbers() {
        use Token::*;
        assert_eq!(
            kinds("1 1. .5 1e-3 1.5E+2 2i 1.5i .5i 1_000 3.e2"),
            vec![
                IntLit("1"),
                RealLit("1."),
                DotNumber(".5"),
                RealLit("1e-3"),
                RealLit("1.5E+2"),
                ImagLit("2i"),
                ImagLit("1.5i"),
                ImagLit(".5i"),
                IntLit("1_000"),
                RealLit("3.e2"),
            ]
        );
    }

    #[test]
    fn tuple_projection_lexes_as_dot_numbers() {
        use Token::*;
        assert_eq!(
            kinds("x.1.2"),
            vec![Ident("x"), DotNumber(".1"), DotNumber(".2")]
        );
    }

    #[test]
    fn elementwise_after_real() {
        use Token::*;
        // `1.*x` is `1.` then `*`, as in stanc3.
        assert_eq!(kinds("1.*x"), vec![RealLit("1."), Star, Ident("x")]);
        assert_eq!(kinds("a.*b"), vec![Ident("a"), EltMul, Ident("b")]);
        assert_eq!(kinds("a%/%b"), vec![Ident("a"), IntDiv, Ident("b")]);
    }

    #[test]
    fn block_keywords_and_comments() {
        use Token::*;
        let (tokens, comments) =
            lex("transformed  data { // hi\n } /* a\n b */ generated\nquantities");
        let kinds: Vec<_> = tokens.iter().map(|t| t.token).collect();
        assert_eq!(
            kinds,
            vec![TransformedData, LBrace, RBrace, GeneratedQuantities]
        );
        assert_eq!(comments.len(), 2);
        assert_eq!(comments[0].token, LineComment("// hi"));
        assert_eq!(comments[1].token, BlockComment("/* a\n b */"));
    }

    #[test]
    fn bad_characters_become_error_tokens() {
        use Token::*;
        // An unterminated string is one error token from the quote on.
        let (tokens, _) = lex("a # b @ \"open");
        let kinds: Vec<_> = tokens.iter().map(|t| t.token).collect();
        assert_eq!(kinds, vec![Ident("a"), Error, Ident("b"), Error, Error]);
        assert_eq!(tokens[4].start, 8);
        // An unterminated block comment swallows the rest.
        let (tokens, comments) = lex("a /* b c");
        assert_eq!(tokens.len(), 1);
        assert_eq!(comments.len(), 1);
    }
}
