//! `print_ast`: a readable, deterministic dump of the AST for
//! `bat ir FILE --emit ast` and snapshot tests.
//!
//! Statements are printed one per line, indented by nesting; expressions
//! are printed as fully parenthesised prefix forms so precedence and
//! associativity are visible: `a + b * c` prints as `(+ a (* b c))`,
//! `-a^b` as `(neg (^ a b))`. Spans are not printed.

use crate::syntax::ast::*;
use std::fmt::Write;

pub fn print_ast(program: &Program) -> String {
    let mut p = Printer { out: String::new() };
    p.line(0, "program");
    for block in &program.blocks {
        p.line(1, &format!("block {}", block.kind.keyword()));
        for stmt in &block.stmts {
            p.stmt(2, stmt);
        }
    }
    p.out
}

/// An expression as a prefix form (also used by tests).
pub fn expr_to_string(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, e);
    s
}

struct Printer {
    out: String,
}

impl Printer {
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn stmt(&mut self, depth: usize, stmt: &Stmt) {
        let e = expr_to_string;
        match &stmt.kind {
            StmtKind::Decl(decl) => {
                let mut text = format!("decl {} {}", sized_type(&decl.ty), decl.name.name);
                if let Some(init) = &decl.init {
                    let _ = write!(text, " = {}", e(init));
                }
                self.line(depth, &text);
            }
            StmtKind::Assign { lhs, op, rhs } => self.line(
                depth,
                &format!("assign {} {} {}", e(lhs), op.symbol(), e(rhs)),
            ),
            StmtKind::Tilde {
                lhs,
                dist,
                args,
                truncation,
            } => {
                let mut text = format!("tilde {} ~ {}({})", e(lhs), dist.name, list(args));
                if let Some(t) = truncation {
                    let bound = |b: &Option<Expr>| b.as_ref().map(e).unwrap_or_default();
                    let _ = write!(text, " T[{}, {}]", bound(&t.lower), bound(&t.upper));
                }
                self.line(depth, &text);
            }
            StmtKind::TargetPlus(x) => self.line(depth, &format!("target += {}", e(x))),
            StmtKind::JacobianPlus(x) => self.line(depth, &format!("jacobian += {}", e(x))),
            StmtKind::Expr(x) => self.line(depth, &format!("expr {}", e(x))),
            StmtKind::Break => self.line(depth, "break"),
            StmtKind::Continue => self.line(depth, "continue"),
            StmtKind::Return(None) => self.line(depth, "return"),
            StmtKind::Return(Some(x)) => self.line(depth, &format!("return {}", e(x))),
            StmtKind::Print(items) => self.line(depth, &format!("print({})", list(items))),
            StmtKind::Reject(items) => self.line(depth, &format!("reject({})", list(items))),
            StmtKind::FatalError(items) => {
                self.line(depth, &format!("fatal_error({})", list(items)))
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.line(depth, &format!("if {}", e(cond)));
                self.line(depth + 1, "then");
                self.stmt(depth + 2, then);
                if let Some(other) = otherwise {
                    self.line(depth + 1, "else");
                    self.stmt(depth + 2, other);
                }
            }
            StmtKind::While { cond, body } => {
                self.line(depth, &format!("while {}", e(cond)));
                self.stmt(depth + 1, body);
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                self.line(
                    depth,
                    &format!("for {} in {} : {}", var.name, e(lower), e(upper)),
                );
                self.stmt(depth + 1, body);
            }
            StmtKind::ForEach { var, iter, body } => {
                self.line(depth, &format!("foreach {} in {}", var.name, e(iter)));
                self.stmt(depth + 1, body);
            }
            StmtKind::Block(stmts) => {
                self.line(depth, "block");
                for s in stmts {
                    self.stmt(depth + 1, s);
                }
            }
            StmtKind::Profile { name, body } => {
                self.line(depth, &format!("profile {name:?}"));
                for s in body {
                    self.stmt(depth + 1, s);
                }
            }
            StmtKind::FunDef(def) => {
                let args: Vec<String> = def
                    .args
                    .iter()
                    .map(|a| {
                        let data = if a.data_only { "data " } else { "" };
                        format!("{data}{} {}", unsized_type(&a.ty), a.name.name)
                    })
                    .collect();
                let ret = match &def.return_type {
                    ReturnType::Void(_) => "void".to_string(),
                    ReturnType::Type(t) => unsized_type(t),
                };
                let kind = if def.body.is_some() {
                    "fundef"
                } else {
                    "fundecl"
                };
                self.line(
                    depth,
                    &format!("{kind} {ret} {}({})", def.name.name, args.join(", ")),
                );
                if let Some(body) = &def.body {
                    self.stmt(depth + 1, body);
                }
            }
            StmtKind::Skip => self.line(depth, "skip"),
            StmtKind::Error => self.line(depth, "<error>"),
        }
    }
}

fn list(items: &[Expr]) -> String {
    items
        .iter()
        .map(expr_to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_expr(s: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::IntLit(t) | ExprKind::RealLit(t) => s.push_str(t),
        ExprKind::ImagLit(t) => {
            s.push_str(t);
            s.push('i');
        }
        ExprKind::StrLit(t) => {
            let _ = write!(s, "\"{t}\"");
        }
        ExprKind::Var(v) => s.push_str(&v.name),
        ExprKind::Unary(op, x) => {
            let name = match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Plus => "pos",
                UnaryOp::Not => "!",
            };
            let _ = write!(s, "({name} ");
            write_expr(s, x);
            s.push(')');
        }
        ExprKind::Binary(op, a, b) => {
            let _ = write!(s, "({} ", op.symbol());
            write_expr(s, a);
            s.push(' ');
            write_expr(s, b);
            s.push(')');
        }
        ExprKind::Cond(c, t, f) => {
            s.push_str("(?: ");
            write_expr(s, c);
            s.push(' ');
            write_expr(s, t);
            s.push(' ');
            write_expr(s, f);
            s.push(')');
        }
        ExprKind::Call {
            name,
            args,
            conditional,
        } => {
            let _ = write!(s, "(call {}", name.name);
            for (i, a) in args.iter().enumerate() {
                s.push_str(if i == 1 && *conditional { " | " } else { " " });
                write_expr(s, a);
            }
            if *conditional && args.len() == 1 {
                s.push_str(" |");
            }
            s.push(')');
        }
        ExprKind::Index(base, indexes) => {
            s.push_str("(index ");
            write_expr(s, base);
            for index in indexes {
                s.push(' ');
                match index {
                    Index::All(_) => s.push(':'),
                    Index::Single(x) => write_expr(s, x),
                    Index::Upfrom(x) => {
                        s.push_str("(: ");
                        write_expr(s, x);
                        s.push_str(" _)");
                    }
                    Index::Downto(x) => {
                        s.push_str("(: _ ");
                        write_expr(s, x);
                        s.push(')');
                    }
                    Index::Between(a, b) => {
                        s.push_str("(: ");
                        write_expr(s, a);
                        s.push(' ');
                        write_expr(s, b);
                        s.push(')');
                    }
                }
            }
            s.push(')');
        }
        ExprKind::TupleProj(x, n) => {
            s.push_str("(proj ");
            write_expr(s, x);
            let _ = write!(s, " {n})");
        }
        ExprKind::Transpose(x) => {
            s.push_str("(' ");
            write_expr(s, x);
            s.push(')');
        }
        ExprKind::ArrayLit(items) => seq(s, "array", items),
        ExprKind::RowVectorLit(items) => seq(s, "rowvec", items),
        ExprKind::TupleLit(items) => seq(s, "tuple", items),
        ExprKind::Paren(x) => {
            s.push_str("(paren ");
            write_expr(s, x);
            s.push(')');
        }
        ExprKind::Error => s.push_str("<error>"),
    }
}

fn seq(s: &mut String, name: &str, items: &[Expr]) {
    s.push('(');
    s.push_str(name);
    for item in items {
        s.push(' ');
        write_expr(s, item);
    }
    s.push(')');
}

fn bounds(b: &Bounds) -> String {
    let e = expr_to_string;
    match b {
        Bounds::None => String::new(),
        Bounds::Lower(x) => format!("<lower={}>", e(x)),
        Bounds::Upper(x) => format!("<upper={}>", e(x)),
        Bounds::LowerUpper(a, b) => format!("<lower={}, upper={}>", e(a), e(b)),
        Bounds::Offset(x) => format!("<offset={}>", e(x)),
        Bounds::Multiplier(x) => format!("<multiplier={}>", e(x)),
        Bounds::OffsetMultiplier(a, b) => format!("<offset={}, multiplier={}>", e(a), e(b)),
    }
}

/// A sized type in Stan notation, with expressions in prefix form.
pub fn sized_type(ty: &SizedType) -> String {
    let e = expr_to_string;
    match &ty.kind {
        SizedTypeKind::Int(b) => format!("int{}", bounds(b)),
        SizedTypeKind::Real(b) => format!("real{}", bounds(b)),
        SizedTypeKind::Complex => "complex".to_string(),
        SizedTypeKind::Vector { bounds: b, size } => format!("vector{}[{}]", bounds(b), e(size)),
        SizedTypeKind::RowVector { bounds: b, size } => {
            format!("row_vector{}[{}]", bounds(b), e(size))
        }
        SizedTypeKind::Matrix {
            bounds: b,
            rows,
            cols,
        } => format!("matrix{}[{}, {}]", bounds(b), e(rows), e(cols)),
        SizedTypeKind::ComplexVector { size } => format!("complex_vector[{}]", e(size)),
        SizedTypeKind::ComplexRowVector { size } => format!("complex_row_vector[{}]", e(size)),
        SizedTypeKind::ComplexMatrix { rows, cols } => {
            format!("complex_matrix[{}, {}]", e(rows), e(cols))
        }
        SizedTypeKind::Constrained { kind, sizes } => {
            format!("{}[{}]", kind.keyword(), list(sizes))
        }
        SizedTypeKind::Array { dims, elem } => {
            format!("array[{}] {}", list(dims), sized_type(elem))
        }
        SizedTypeKind::Tuple(elems) => {
            let parts: Vec<String> = elems.iter().map(sized_type).collect();
            if parts.len() == 1 {
                format!("tuple({},)", parts[0])
            } else {
                format!("tuple({})", parts.join(", "))
            }
        }
    }
}

/// An unsized type in Stan notation (`array[,] real`).
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
        UnsizedTypeKind::Array { dims, elem } => {
            format!(
                "array[{}] {}",
                ",".repeat(dims.saturating_sub(1)),
                unsized_type(elem)
            )
        }
        UnsizedTypeKind::Tuple(elems) => {
            let parts: Vec<String> = elems.iter().map(unsized_type).collect();
            if parts.len() == 1 {
                format!("tuple({},)", parts[0])
            } else {
                format!("tuple({})", parts.join(", "))
            }
        }
    }
}
