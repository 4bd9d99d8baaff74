//! The abstract syntax tree produced by the parser.
//!
//! Invariants:
//! - every node carries the byte [`Span`] of the text it was parsed from;
//! - the tree is exactly what was written (no desugaring): `(e)` is kept as
//!   [`ExprKind::Paren`] so the formatter and `--emit ast` can reproduce it;
//! - a region the parser could not make sense of becomes an `Error` node
//!   (and a syntax diagnostic), so later phases see the rest of the program;
//! - [`Ident`]s are unresolved names; resolution happens in `check`.

use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole program: the blocks in the order written (the grammar enforces
/// Stan's block order).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub blocks: Vec<ProgramBlock>,
    /// Comments with their spans, in source order, for the formatter.
    pub comments: Vec<Comment>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    Functions,
    Data,
    TransformedData,
    Parameters,
    TransformedParameters,
    Model,
    GeneratedQuantities,
}

impl BlockKind {
    pub const ALL: [BlockKind; 7] = [
        BlockKind::Functions,
        BlockKind::Data,
        BlockKind::TransformedData,
        BlockKind::Parameters,
        BlockKind::TransformedParameters,
        BlockKind::Model,
        BlockKind::GeneratedQuantities,
    ];

    /// The block's keyword(s) as written in a program.
    pub fn keyword(self) -> &'static str {
        match self {
            BlockKind::Functions => "functions",
            BlockKind::Data => "data",
            BlockKind::TransformedData => "transformed data",
            BlockKind::Parameters => "parameters",
            BlockKind::TransformedParameters => "transformed parameters",
            BlockKind::Model => "model",
            BlockKind::GeneratedQuantities => "generated quantities",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProgramBlock {
    pub kind: BlockKind,
    /// Span of the block keyword(s).
    pub keyword_span: Span,
    /// In `functions`, only [`StmtKind::FunDef`]s; elsewhere any statement.
    pub stmts: Vec<Stmt>,
    /// Whole block including braces.
    pub span: Span,
}

// ---------------------------------------------------------------- types

/// Bounds or affine transform on a scalar, vector, row_vector or matrix.
#[derive(Clone, Debug, PartialEq)]
pub enum Bounds {
    None,
    Lower(Expr),
    Upper(Expr),
    LowerUpper(Expr, Expr),
    Offset(Expr),
    Multiplier(Expr),
    OffsetMultiplier(Expr, Expr),
}

/// Constrained types whose transform is part of the type name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConstrainedKind {
    /// `simplex[K]`
    Simplex,
    /// `unit_vector[K]`
    UnitVector,
    /// `sum_to_zero_vector[K]`
    SumToZeroVector,
    /// `sum_to_zero_matrix[M, N]`
    SumToZeroMatrix,
    /// `ordered[K]`
    Ordered,
    /// `positive_ordered[K]`
    PositiveOrdered,
    /// `cholesky_factor_corr[K]`
    CholeskyFactorCorr,
    /// `cholesky_factor_cov[M]` or `cholesky_factor_cov[M, N]`
    CholeskyFactorCov,
    /// `corr_matrix[K]`
    CorrMatrix,
    /// `cov_matrix[K]`
    CovMatrix,
    /// `column_stochastic_matrix[M, N]`
    ColumnStochasticMatrix,
    /// `row_stochastic_matrix[M, N]`
    RowStochasticMatrix,
}

impl ConstrainedKind {
    pub fn keyword(self) -> &'static str {
        match self {
            ConstrainedKind::Simplex => "simplex",
            ConstrainedKind::UnitVector => "unit_vector",
            ConstrainedKind::SumToZeroVector => "sum_to_zero_vector",
            ConstrainedKind::SumToZeroMatrix => "sum_to_zero_matrix",
            ConstrainedKind::Ordered => "ordered",
            ConstrainedKind::PositiveOrdered => "positive_ordered",
            ConstrainedKind::CholeskyFactorCorr => "cholesky_factor_corr",
            ConstrainedKind::CholeskyFactorCov => "cholesky_factor_cov",
            ConstrainedKind::CorrMatrix => "corr_matrix",
            ConstrainedKind::CovMatrix => "cov_matrix",
            ConstrainedKind::ColumnStochasticMatrix => "column_stochastic_matrix",
            ConstrainedKind::RowStochasticMatrix => "row_stochastic_matrix",
        }
    }
}

/// A sized type in a variable declaration, as written.
#[derive(Clone, Debug, PartialEq)]
pub struct SizedType {
    pub kind: SizedTypeKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SizedTypeKind {
    Int(Bounds),
    Real(Bounds),
    Complex,
    Vector {
        bounds: Bounds,
        size: Expr,
    },
    RowVector {
        bounds: Bounds,
        size: Expr,
    },
    Matrix {
        bounds: Bounds,
        rows: Expr,
        cols: Expr,
    },
    ComplexVector {
        size: Expr,
    },
    ComplexRowVector {
        size: Expr,
    },
    ComplexMatrix {
        rows: Expr,
        cols: Expr,
    },
    /// `simplex[K]`, `cholesky_factor_cov[M, N]`, ...: the size expressions
    /// as written (one or two).
    Constrained {
        kind: ConstrainedKind,
        sizes: Vec<Expr>,
    },
    /// `array[d1, d2, ...] elem`
    Array {
        dims: Vec<Expr>,
        elem: Box<SizedType>,
    },
    Tuple(Vec<SizedType>),
}

/// An unsized type: function arguments and return types.
#[derive(Clone, Debug, PartialEq)]
pub struct UnsizedType {
    pub kind: UnsizedTypeKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum UnsizedTypeKind {
    Int,
    Real,
    Complex,
    Vector,
    RowVector,
    Matrix,
    ComplexVector,
    ComplexRowVector,
    ComplexMatrix,
    /// `array[]` has dims 1, `array[,]` 2, ...
    Array {
        dims: usize,
        elem: Box<UnsizedType>,
    },
    Tuple(Vec<UnsizedType>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ReturnType {
    Void(Span),
    Type(UnsizedType),
}

// ---------------------------------------------------------------- expressions

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-e`
    Neg,
    /// `+e`
    Plus,
    /// `!e`
    Not,
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Plus => "+",
            UnaryOp::Not => "!",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Neq,
    Lt,
    Leq,
    Gt,
    Geq,
    Add,
    Sub,
    Mul,
    Div,
    /// `%`
    Mod,
    /// `.*`
    EltMul,
    /// `./`
    EltDiv,
    /// `\`
    LeftDiv,
    /// `%/%`
    IntDiv,
    /// `^`
    Pow,
    /// `.^`
    EltPow,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Or => "||",
            And => "&&",
            Eq => "==",
            Neq => "!=",
            Lt => "<",
            Leq => "<=",
            Gt => ">",
            Geq => ">=",
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            EltMul => ".*",
            EltDiv => "./",
            LeftDiv => "\\",
            IntDiv => "%/%",
            Pow => "^",
            EltPow => ".^",
        }
    }

    /// Binding strength, higher binds tighter (Stan's table).
    pub fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Or => 1,
            And => 2,
            Eq | Neq => 3,
            Lt | Leq | Gt | Geq => 4,
            Add | Sub => 5,
            Mul | Div | Mod | EltMul | EltDiv => 6,
            LeftDiv | IntDiv => 7,
            // unary operators sit at 8
            Pow | EltPow => 9,
        }
    }

    pub fn is_right_assoc(self) -> bool {
        matches!(self, BinaryOp::Pow | BinaryOp::EltPow)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// Integer literal text as written (may exceed i32; the checker says so).
    IntLit(String),
    /// Real literal text as written, e.g. `1.5e-3`, `.5`, `3.`.
    RealLit(String),
    /// Imaginary literal text without the trailing `i`, e.g. `2.5` for `2.5i`.
    ImagLit(String),
    /// String literal contents without quotes (only in print/reject/fatal_error).
    StrLit(String),
    Var(Ident),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `cond ? then : else`
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `f(args)`; with `conditional`, `f(args[0] | args[1..])`.
    Call {
        name: Ident,
        args: Vec<Expr>,
        conditional: bool,
    },
    /// `e[idx, ...]`
    Index(Box<Expr>, Vec<Index>),
    /// `e.2` (1-based component number as written)
    TupleProj(Box<Expr>, usize),
    /// Postfix `e'`
    Transpose(Box<Expr>),
    /// `{ e, ... }`
    ArrayLit(Vec<Expr>),
    /// `[ e, ... ]` (a row vector, or a matrix when elements are row vectors)
    RowVectorLit(Vec<Expr>),
    /// `( e1, e2, ... )` with at least two components, or `(e,)`.
    TupleLit(Vec<Expr>),
    /// `( e )`
    Paren(Box<Expr>),
    /// Placeholder for text the parser could not read (a diagnostic exists).
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// `:` or an omitted index (`m[, 1]`).
    All(Span),
    /// `e` — a single index, or a multi-index when `e` is an int array.
    Single(Expr),
    /// `e:`
    Upfrom(Expr),
    /// `:e`
    Downto(Expr),
    /// `a:b`
    Between(Expr, Expr),
}

// ---------------------------------------------------------------- statements

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssignOp {
    /// `=`
    Assign,
    /// `+=`
    Add,
    /// `-=`
    Sub,
    /// `*=`
    Mul,
    /// `/=`
    Div,
    /// `.*=`
    EltMul,
    /// `./=`
    EltDiv,
}

impl AssignOp {
    pub fn symbol(self) -> &'static str {
        match self {
            AssignOp::Assign => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
            AssignOp::Div => "/=",
            AssignOp::EltMul => ".*=",
            AssignOp::EltDiv => "./=",
        }
    }

    /// The binary operator a compound assignment applies.
    pub fn binary_op(self) -> Option<BinaryOp> {
        match self {
            AssignOp::Assign => None,
            AssignOp::Add => Some(BinaryOp::Add),
            AssignOp::Sub => Some(BinaryOp::Sub),
            AssignOp::Mul => Some(BinaryOp::Mul),
            AssignOp::Div => Some(BinaryOp::Div),
            AssignOp::EltMul => Some(BinaryOp::EltMul),
            AssignOp::EltDiv => Some(BinaryOp::EltDiv),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub ty: SizedType,
    pub name: Ident,
    pub init: Option<Expr>,
}

/// `T[lo, hi]` after a `~` statement; either bound may be omitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    pub lower: Option<Expr>,
    pub upper: Option<Expr>,
    pub span: Span,
}

/// An item of `print`, `reject` or `fatal_error`: strings or expressions.
pub type Printable = Expr;

#[derive(Clone, Debug, PartialEq)]
pub struct FunArg {
    /// `data` qualifier present.
    pub data_only: bool,
    pub ty: UnsizedType,
    pub name: Ident,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunDef {
    pub return_type: ReturnType,
    pub name: Ident,
    pub args: Vec<FunArg>,
    /// `None` for a forward declaration (`real f(real x);`).
    pub body: Option<Box<Stmt>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// A declaration, one per declared name (`real a, b;` gives two).
    Decl(VarDecl),
    /// `lhs op rhs;` where lhs is an lvalue expression (variable, indexed,
    /// tuple projection, or a tuple of lvalues for unpacking). The parser
    /// accepts any expression on the left; the checker rejects non-lvalues.
    Assign {
        lhs: Expr,
        op: AssignOp,
        rhs: Expr,
    },
    /// `lhs ~ dist(args) T[..];`
    Tilde {
        lhs: Expr,
        dist: Ident,
        args: Vec<Expr>,
        truncation: Option<Truncation>,
    },
    /// `target += e;`
    TargetPlus(Expr),
    /// `jacobian += e;`
    JacobianPlus(Expr),
    /// An expression statement; only function calls are valid (checked).
    Expr(Expr),
    Break,
    Continue,
    Return(Option<Expr>),
    Print(Vec<Printable>),
    Reject(Vec<Printable>),
    FatalError(Vec<Printable>),
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    While {
        cond: Expr,
        body: Box<Stmt>,
    },
    /// `for (var in lo:hi) body`
    For {
        var: Ident,
        lower: Expr,
        upper: Expr,
        body: Box<Stmt>,
    },
    /// `for (var in container) body`
    ForEach {
        var: Ident,
        iter: Expr,
        body: Box<Stmt>,
    },
    /// `{ ... }`
    Block(Vec<Stmt>),
    /// `profile("name") { ... }`
    Profile {
        name: String,
        body: Vec<Stmt>,
    },
    FunDef(FunDef),
    /// `;`
    Skip,
    /// Text the parser could not read (a diagnostic exists).
    Error,
}
