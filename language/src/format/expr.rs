//! Expressions and types as canonical Stan text.
//!
//! The text is exactly the tree: parentheses appear where the source had
//! them ([`ExprKind::Paren`] is kept by the parser), so re-parsing the text
//! gives the same tree. Spacing: binary operators, `?`/`:` of the
//! conditional and `~` are surrounded by spaces; `,` is followed by one;
//! ranges in indexes and loops are `a:b`, or `a : b` when a bound is itself
//! an operator expression (`x[i + 1 : N]`), which reads unambiguously.
//!
//! The text carries line-break marks for [`super::wrap`]: [`OPEN`] and
//! [`CLOSE`] around each bracketed list and operator chain (continuation
//! lines align with where it starts), [`AFTER_COMMA`] where a list may
//! break, and [`BEFORE_OPERATOR`] where an operator chain may break (the
//! operator then starts the next line).

use crate::syntax::ast::*;

pub const OPEN: char = '\u{1}';
pub const CLOSE: char = '\u{2}';
pub const AFTER_COMMA: char = '\u{3}';
pub const BEFORE_OPERATOR: char = '\u{4}';

/// Items separated by `,` and a possible break, as one aligned group.
fn push_list(out: &mut String, items: &[Expr]) {
    out.push(OPEN);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
            out.push(AFTER_COMMA);
        }
        write_expr(out, item);
    }
    out.push(CLOSE);
}

/// `e` as canonical Stan source.
pub fn expr(e: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, e);
    out
}

/// Comma-separated expressions (one group that may break after commas).
pub fn list(items: &[Expr]) -> String {
    let mut out = String::new();
    push_list(&mut out, items);
    out
}

/// Strings joined as one group that may break after its commas.
pub fn joined(items: &[String]) -> String {
    let mut out = String::new();
    out.push(OPEN);
    out.push_str(&items.join(&format!(",{AFTER_COMMA}")));
    out.push(CLOSE);
    out
}

fn write_expr(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::IntLit(text) | ExprKind::RealLit(text) => out.push_str(text),
        ExprKind::ImagLit(text) => {
            out.push_str(text);
            out.push('i');
        }
        ExprKind::StrLit(text) => {
            out.push('"');
            out.push_str(text);
            out.push('"');
        }
        ExprKind::Var(v) => out.push_str(&v.name),
        ExprKind::Unary(op, x) => {
            out.push_str(op.symbol());
            write_expr(out, x);
        }
        ExprKind::Binary(op, a, b) => {
            out.push(OPEN);
            write_expr(out, a);
            out.push(BEFORE_OPERATOR);
            out.push_str(op.symbol());
            out.push(' ');
            write_expr(out, b);
            out.push(CLOSE);
        }
        ExprKind::Cond(c, t, f) => {
            out.push(OPEN);
            write_expr(out, c);
            out.push(BEFORE_OPERATOR);
            out.push_str("? ");
            write_expr(out, t);
            out.push(BEFORE_OPERATOR);
            out.push_str(": ");
            write_expr(out, f);
            out.push(CLOSE);
        }
        ExprKind::Call {
            name,
            args,
            conditional,
        } => {
            out.push_str(&name.name);
            out.push('(');
            if *conditional {
                // `f(y | a, b)`: the variate, then the parameters as a list.
                out.push(OPEN);
                write_expr(out, &args[0]);
                out.push_str(if args.len() == 1 { " |" } else { " | " });
                push_list(out, &args[1..]);
                out.push(CLOSE);
            } else {
                push_list(out, args);
            }
            out.push(')');
        }
        ExprKind::Index(base, indexes) => {
            write_expr(out, base);
            out.push('[');
            out.push(OPEN);
            for (i, index) in indexes.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push(AFTER_COMMA);
                }
                write_index(out, index);
            }
            out.push(CLOSE);
            out.push(']');
        }
        ExprKind::TupleProj(x, n) => {
            write_expr(out, x);
            out.push('.');
            out.push_str(&n.to_string());
        }
        ExprKind::Transpose(x) => {
            write_expr(out, x);
            out.push('\'');
        }
        ExprKind::ArrayLit(items) => {
            out.push('{');
            out.push_str(&list(items));
            out.push('}');
        }
        ExprKind::RowVectorLit(items) => {
            out.push('[');
            out.push_str(&list(items));
            out.push(']');
        }
        ExprKind::TupleLit(items) => {
            out.push('(');
            out.push_str(&list(items));
            if items.len() == 1 {
                out.push(',');
            }
            out.push(')');
        }
        ExprKind::Paren(x) => {
            out.push('(');
            out.push(OPEN);
            write_expr(out, x);
            out.push(CLOSE);
            out.push(')');
        }
        // Only in programs with syntax errors, which are not formatted.
        ExprKind::Error => out.push_str("<error>"),
    }
}

fn write_index(out: &mut String, index: &Index) {
    match index {
        Index::All(_) => out.push(':'),
        Index::Single(x) => write_expr(out, x),
        Index::Upfrom(x) => {
            write_expr(out, x);
            out.push(':');
        }
        Index::Downto(x) => {
            out.push(':');
            write_expr(out, x);
        }
        Index::Between(a, b) => out.push_str(&range(a, b)),
    }
}

/// `a:b`, spaced when either bound is an operator expression.
pub fn range(lower: &Expr, upper: &Expr) -> String {
    let compound = |e: &Expr| {
        matches!(
            e.kind,
            ExprKind::Binary(..) | ExprKind::Cond(..) | ExprKind::Unary(..)
        )
    };
    let separator = if compound(lower) || compound(upper) {
        " : "
    } else {
        ":"
    };
    format!("{}{separator}{}", expr(lower), expr(upper))
}

fn bounds(b: &Bounds) -> String {
    match b {
        Bounds::None => String::new(),
        Bounds::Lower(x) => format!("<lower={}>", expr(x)),
        Bounds::Upper(x) => format!("<upper={}>", expr(x)),
        Bounds::LowerUpper(lo, hi) => format!("<lower={}, upper={}>", expr(lo), expr(hi)),
        Bounds::Offset(x) => format!("<offset={}>", expr(x)),
        Bounds::Multiplier(x) => format!("<multiplier={}>", expr(x)),
        Bounds::OffsetMultiplier(o, m) => {
            format!("<offset={}, multiplier={}>", expr(o), expr(m))
        }
    }
}

/// A declaration's type: `vector<lower=0>[N]`, `array[N, M] real`.
pub fn sized_type(ty: &SizedType) -> String {
    match &ty.kind {
        SizedTypeKind::Int(b) => format!("int{}", bounds(b)),
        SizedTypeKind::Real(b) => format!("real{}", bounds(b)),
        SizedTypeKind::Complex => "complex".to_string(),
        SizedTypeKind::Vector { bounds: b, size } => {
            format!("vector{}[{}]", bounds(b), expr(size))
        }
        SizedTypeKind::RowVector { bounds: b, size } => {
            format!("row_vector{}[{}]", bounds(b), expr(size))
        }
        SizedTypeKind::Matrix {
            bounds: b,
            rows,
            cols,
        } => format!("matrix{}[{}, {}]", bounds(b), expr(rows), expr(cols)),
        SizedTypeKind::ComplexVector { size } => format!("complex_vector[{}]", expr(size)),
        SizedTypeKind::ComplexRowVector { size } => {
            format!("complex_row_vector[{}]", expr(size))
        }
        SizedTypeKind::ComplexMatrix { rows, cols } => {
            format!("complex_matrix[{}, {}]", expr(rows), expr(cols))
        }
        SizedTypeKind::Constrained { kind, sizes } => {
            format!("{}[{}]", kind.keyword(), list(sizes))
        }
        SizedTypeKind::Array { dims, elem } => {
            format!("array[{}] {}", list(dims), sized_type(elem))
        }
        SizedTypeKind::Tuple(elems) => {
            let parts: Vec<String> = elems.iter().map(sized_type).collect();
            tuple(&parts)
        }
    }
}

/// A function argument or return type: `array[,] real`, `tuple(int, real)`.
pub fn unsized_type(ty: &UnsizedType) -> String {
    match &ty.kind {
        UnsizedTypeKind::Int => "int".to_string(),
        UnsizedTypeKind::Real => "real".to_string(),
        UnsizedTypeKind::Complex => "complex".to_string(),
        UnsizedTypeKind::Vector => "vector".to_string(),
        UnsizedTypeKind::RowVector => "row_vector".to_string(),
        UnsizedTypeKind::Matrix => "matrix".to_string(),
        UnsizedTypeKind::ComplexVector => "complex_vector".to_string(),
        UnsizedTypeKind::ComplexRowVector => "complex_row_vector".to_string(),
        UnsizedTypeKind::ComplexMatrix => "complex_matrix".to_string(),
        UnsizedTypeKind::Array { dims, elem } => format!(
            "array[{}] {}",
            ",".repeat(dims.saturating_sub(1)),
            unsized_type(elem)
        ),
        UnsizedTypeKind::Tuple(elems) => {
            let parts: Vec<String> = elems.iter().map(unsized_type).collect();
            tuple(&parts)
        }
    }
}

fn tuple(parts: &[String]) -> String {
    if parts.len() == 1 {
        format!("tuple({},)", parts[0])
    } else {
        format!("tuple({})", parts.join(", "))
    }
}
