//! Variable declarations: sizes, bounds, block rules, initial values.

use super::SymbolKind;
use super::codes;
use super::compat::{contains_int, promotion_cost};
use super::context::Checker;
use super::env::Origin;
use crate::span::Span;
use crate::syntax::ast::{
    BlockKind, Bounds, ConstrainedKind, Expr, SizedType, SizedTypeKind, UnsizedType,
    UnsizedTypeKind, VarDecl,
};
use crate::types::Type;

/// The unsized type of a declaration's type.
pub fn sized_to_type(t: &SizedType) -> Type {
    match &t.kind {
        SizedTypeKind::Int(_) => Type::Int,
        SizedTypeKind::Real(_) => Type::Real,
        SizedTypeKind::Complex => Type::Complex,
        SizedTypeKind::Vector { .. } => Type::Vector,
        SizedTypeKind::RowVector { .. } => Type::RowVector,
        SizedTypeKind::Matrix { .. } => Type::Matrix,
        SizedTypeKind::ComplexVector { .. } => Type::ComplexVector,
        SizedTypeKind::ComplexRowVector { .. } => Type::ComplexRowVector,
        SizedTypeKind::ComplexMatrix { .. } => Type::ComplexMatrix,
        SizedTypeKind::Constrained { kind, .. } => match kind {
            ConstrainedKind::Simplex
            | ConstrainedKind::UnitVector
            | ConstrainedKind::SumToZeroVector
            | ConstrainedKind::Ordered
            | ConstrainedKind::PositiveOrdered => Type::Vector,
            _ => Type::Matrix,
        },
        SizedTypeKind::Array { dims, elem } => Type::array_of(sized_to_type(elem), dims.len()),
        SizedTypeKind::Tuple(ts) => Type::Tuple(ts.iter().map(sized_to_type).collect()),
    }
}

/// The type of a function argument or return type.
pub fn unsized_to_type(t: &UnsizedType) -> Type {
    match &t.kind {
        UnsizedTypeKind::Int => Type::Int,
        UnsizedTypeKind::Real => Type::Real,
        UnsizedTypeKind::Complex => Type::Complex,
        UnsizedTypeKind::Vector => Type::Vector,
        UnsizedTypeKind::RowVector => Type::RowVector,
        UnsizedTypeKind::Matrix => Type::Matrix,
        UnsizedTypeKind::ComplexVector => Type::ComplexVector,
        UnsizedTypeKind::ComplexRowVector => Type::ComplexRowVector,
        UnsizedTypeKind::ComplexMatrix => Type::ComplexMatrix,
        UnsizedTypeKind::Array { dims, elem } => Type::array_of(unsized_to_type(elem), *dims),
        UnsizedTypeKind::Tuple(ts) => Type::Tuple(ts.iter().map(unsized_to_type).collect()),
    }
}

/// The declared type for hover, e.g. `array[,] vector<lower=…>`.
pub fn describe_sized(t: &SizedType) -> String {
    fn bounds(b: &Bounds) -> &'static str {
        match b {
            Bounds::None => "",
            Bounds::Lower(_) => "<lower=…>",
            Bounds::Upper(_) => "<upper=…>",
            Bounds::LowerUpper(..) => "<lower=…, upper=…>",
            Bounds::Offset(_) => "<offset=…>",
            Bounds::Multiplier(_) => "<multiplier=…>",
            Bounds::OffsetMultiplier(..) => "<offset=…, multiplier=…>",
        }
    }
    match &t.kind {
        SizedTypeKind::Int(b) => format!("int{}", bounds(b)),
        SizedTypeKind::Real(b) => format!("real{}", bounds(b)),
        SizedTypeKind::Vector { bounds: b, .. } => format!("vector{}", bounds(b)),
        SizedTypeKind::RowVector { bounds: b, .. } => format!("row_vector{}", bounds(b)),
        SizedTypeKind::Matrix { bounds: b, .. } => format!("matrix{}", bounds(b)),
        SizedTypeKind::Constrained { kind, .. } => kind.keyword().to_string(),
        SizedTypeKind::Array { dims, elem } => {
            format!(
                "array[{}] {}",
                ",".repeat(dims.len().saturating_sub(1)),
                describe_sized(elem)
            )
        }
        SizedTypeKind::Tuple(ts) => {
            let parts: Vec<String> = ts.iter().map(describe_sized).collect();
            format!("tuple({})", parts.join(", "))
        }
        _ => sized_to_type(t).to_string(),
    }
}

impl Checker {
    pub fn var_decl(&mut self, decl: &VarDecl, global: bool, stmt_span: Span, scope: Span) {
        let was_toplevel = self.in_toplevel_decl;
        self.in_toplevel_decl = global;
        self.sizes(&decl.ty);
        self.in_toplevel_decl = was_toplevel;
        let ty = sized_to_type(&decl.ty);
        let has_transform = self.transforms(&decl.ty, &ty, global, stmt_span);
        if !global && has_transform {
            self.error(
                codes::BAD_BOUNDS,
                "Local variables cannot have constraints, bounds, offsets or multipliers.",
                decl.ty.span,
            );
        }
        let name = &decl.name;
        self.report_reserved(&name.name, name.span);
        let fresh = self.verify_fresh_var(&name.name, name.span);
        let kind = match (global, self.block) {
            (true, Origin::Block(b)) => SymbolKind::BlockVar(b),
            _ => SymbolKind::Local,
        };
        if fresh {
            let origin = self.block;
            self.declare_var(
                &name.name,
                name.span,
                kind,
                ty.clone(),
                describe_sized(&decl.ty),
                scope,
                false,
                origin,
            );
        }
        if let Some(init) = &decl.init {
            let (rt, _) = self.expr(init);
            if mentions(init, &name.name) {
                self.warning(
                    codes::WARN_OTHER,
                    "Assignment of variable to itself during declaration. This is almost \
                     certainly a bug.",
                    stmt_span,
                );
            }
            if promotion_cost(&ty, &rt, true).is_none() || matches!(rt, Type::Function(_)) {
                self.error(
                    codes::BAD_ASSIGNMENT_TYPE,
                    format!(
                        "Ill-typed arguments supplied to assignment operator =: lhs has type {ty} \
                         and rhs has type {rt}."
                    ),
                    stmt_span,
                );
            }
        }
        if global
            && matches!(
                self.block,
                Origin::Block(BlockKind::Parameters | BlockKind::TransformedParameters)
            )
            && contains_int(&ty)
        {
            let which = if self.block.is(BlockKind::Parameters) {
                "Parameters"
            } else {
                "Transformed parameters"
            };
            self.error(
                codes::INT_PARAMETER,
                format!("{which} cannot be integers."),
                stmt_span,
            )
            .help = Some("declare it as `real`, or move it to the data blocks".into());
        }
    }

    /// Size expressions must be ints (and data-only at the top level,
    /// enforced while typing variables).
    fn sizes(&mut self, t: &SizedType) {
        let size = |c: &mut Checker, e: &Expr, what: &str| {
            c.int_expr(e, what);
        };
        match &t.kind {
            SizedTypeKind::Vector { size: e, .. } => size(self, e, "Vector sizes"),
            SizedTypeKind::RowVector { size: e, .. } => size(self, e, "Row vector sizes"),
            SizedTypeKind::Matrix { rows, cols, .. } => {
                size(self, rows, "Matrix row size");
                size(self, cols, "Matrix column size");
            }
            SizedTypeKind::ComplexVector { size: e } => size(self, e, "Complex vector sizes"),
            SizedTypeKind::ComplexRowVector { size: e } => {
                size(self, e, "Complex row vector sizes")
            }
            SizedTypeKind::ComplexMatrix { rows, cols } => {
                size(self, rows, "Complex matrix row size");
                size(self, cols, "Complex matrix column size");
            }
            SizedTypeKind::Constrained { sizes, kind } => {
                for e in sizes {
                    size(self, e, &format!("{} sizes", kind.keyword()));
                }
            }
            SizedTypeKind::Array { dims, elem } => {
                self.sizes(elem);
                for e in dims {
                    size(self, e, "Array sizes");
                }
            }
            SizedTypeKind::Tuple(ts) => ts.iter().for_each(|t| self.sizes(t)),
            SizedTypeKind::Int(_) | SizedTypeKind::Real(_) | SizedTypeKind::Complex => {}
        }
    }

    /// Check bound / offset / multiplier expressions; returns whether the
    /// type has any transform.
    fn transforms(&mut self, t: &SizedType, whole: &Type, global: bool, stmt_span: Span) -> bool {
        match &t.kind {
            SizedTypeKind::Int(b) => {
                let kinds = self.bounds(b, whole);
                if global && kinds.contains(&Type::Real) {
                    self.error(
                        codes::BAD_BOUNDS,
                        "Bounds of integer variable must be of type int. Found type real.",
                        stmt_span,
                    );
                }
                !matches!(b, Bounds::None)
            }
            SizedTypeKind::Real(b)
            | SizedTypeKind::Vector { bounds: b, .. }
            | SizedTypeKind::RowVector { bounds: b, .. }
            | SizedTypeKind::Matrix { bounds: b, .. } => {
                self.bounds(b, whole);
                !matches!(b, Bounds::None)
            }
            SizedTypeKind::Constrained { .. } => true,
            SizedTypeKind::Array { elem, .. } => self.transforms(elem, whole, global, stmt_span),
            SizedTypeKind::Tuple(ts) => {
                let mut any = false;
                for t in ts {
                    let ty = sized_to_type(t);
                    any |= self.transforms(t, &ty, global, stmt_span);
                }
                any
            }
            _ => false,
        }
    }

    /// Each bound must be a scalar or of the declared (unsized) type;
    /// returns the bound types.
    fn bounds(&mut self, b: &Bounds, whole: &Type) -> Vec<Type> {
        let exprs: Vec<(&Expr, &str)> = match b {
            Bounds::None => vec![],
            Bounds::Lower(e) => vec![(e, "Lower bound")],
            Bounds::Upper(e) => vec![(e, "Upper bound")],
            Bounds::LowerUpper(l, u) => vec![(l, "Lower bound"), (u, "Upper bound")],
            Bounds::Offset(e) => vec![(e, "Offset")],
            Bounds::Multiplier(e) => vec![(e, "Multiplier")],
            Bounds::OffsetMultiplier(o, m) => vec![(o, "Offset"), (m, "Multiplier")],
        };
        exprs
            .into_iter()
            .map(|(e, what)| {
                let (t, _) = self.expr(e);
                let ok = matches!(t, Type::Int | Type::Real | Type::Error) || &t == whole;
                if !ok {
                    self.error(
                        codes::BAD_BOUNDS,
                        format!(
                            "{what} must be a scalar or of type {whole}. Instead found type {t}."
                        ),
                        e.span,
                    );
                }
                t
            })
            .collect()
    }
}

/// Does `e` mention the variable `name`?
fn mentions(e: &Expr, name: &str) -> bool {
    use crate::syntax::ast::{ExprKind, Index};
    let m = |x: &Expr| mentions(x, name);
    match &e.kind {
        ExprKind::Var(id) => id.name == name,
        ExprKind::Unary(_, a)
        | ExprKind::Paren(a)
        | ExprKind::Transpose(a)
        | ExprKind::TupleProj(a, _) => m(a),
        ExprKind::Binary(_, a, b) => m(a) || m(b),
        ExprKind::Cond(a, b, c) => m(a) || m(b) || m(c),
        ExprKind::Call { args, .. }
        | ExprKind::ArrayLit(args)
        | ExprKind::RowVectorLit(args)
        | ExprKind::TupleLit(args) => args.iter().any(m),
        ExprKind::Index(base, idx) => {
            m(base)
                || idx.iter().any(|i| match i {
                    Index::All(_) => false,
                    Index::Single(x) | Index::Upfrom(x) | Index::Downto(x) => m(x),
                    Index::Between(a, b) => m(a) || m(b),
                })
        }
        _ => false,
    }
}
