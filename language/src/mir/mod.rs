//! Model IR (MIR): the checked program, typed, desugared and split into the
//! pieces a sampler needs.
//!
//! A [`Program`] holds
//! - `data`: declarations read from the data file (sizes and bounds are
//!   expressions over earlier data);
//! - `transformed_data`: statements run once, after the data is read;
//! - `parameters`: the parameter transform — each parameter is read from the
//!   unconstrained vector at a fixed offset, constrained, and (when the
//!   Jacobian is on) its log |J| added to the target ([`Stmt::Constrain`]);
//! - `transformed_parameters` then `model`: together with the transform, the
//!   log density;
//! - `generated_quantities`: run once per draw with constrained values;
//! - `hoisted`: only in gradient programs ([`GradProgram`]): values
//!   computed from data, transformed data and constants alone, moved out
//!   of the per-evaluation body by `simplify` and computed once per model
//!   (the interpreter's `Model::globals_for`).
//!
//! # Invariants
//! - Every variable is a [`VarId`] into [`Program::vars`]; names are only
//!   for printing. Shadowing has been resolved.
//! - Every expression carries its semantic [`Type`] and whether it is
//!   data-only ([`AdLevel`]).
//! - There are no `~` statements, compound assignments, `foreach` loops,
//!   `profile` blocks or conditional-notation calls: `y ~ d(θ)` became
//!   `target += d_lupdf(y | θ)` expanded into primitives with the
//!   parameter-free terms dropped (Stan's `propto`), `x op= e` became
//!   `x = x op e`, `foreach` became an index loop.
//! - Library functions are either a primitive [`Prim`] (which has a
//!   derivative rule and a kernel in every backend) or expanded into
//!   primitives by [`library`]; a function that is neither is rejected at
//!   lowering with "not yet supported: NAME", never run wrongly.
//! - `&&` and `||` short-circuit and are expressed with [`ExprKind::Cond`].
//! - Densities carry Stan's argument checks as `check_*` primitives added
//!   to the density (value 0.0, derivative 0, evaluated even when `propto`
//!   drops every term); a failed check is a domain error, which rejects the
//!   proposal. Checks of literals that pass are omitted.
//! - `_rng` primitives appear only where Stan allows random numbers
//!   (transformed data, generated quantities, `_rng` functions); they have
//!   no derivative rule.
//! - ODE solver calls are [`ExprKind::Ode`] nodes; one with autodiff inputs
//!   names the reverse function of its right-hand side, which the AD
//!   generates right after lowering (`ad::attach_ode_sensitivities`, called
//!   by [`crate::lower_checked`]), so a compiled program's functions may
//!   include such generated reverse functions (with `Push`/`Pop`).
//!
//! A [`GradProgram`] is a program with its log density's forward and
//! reverse sweep as one body, written by `ad` and simplified by `simplify`.
//!
//! The reference semantics of every primitive and statement is the scalar
//! interpreter.
//!
//! The MIR is printable (`bat ir FILE --emit mir`, [`print::print_program`]).

use crate::span::Span;
use crate::types::{AdLevel, Type};

pub mod library;
mod lower;
pub mod ode;
mod prim;
pub mod print;
pub mod prints;
pub mod visit;

pub use lower::{NOT_YET_SUPPORTED, lower};
pub use ode::{OdeMethod, OdeSolve, SystemVjp};
pub use prim::Prim;

/// The gradient program of a model's log density.
#[derive(Clone, Debug)]
pub struct GradProgram {
    /// The model; its `vars` include the temporaries and adjoints the
    /// transformation introduced.
    pub program: Program,
    /// Forward sweep then reverse sweep. Reads the unconstrained input via
    /// `ReadParam`, accumulates the target, and writes the gradient via
    /// `ParamAdjoint`.
    pub body: Vec<Stmt>,
    /// Number of stacks used by `Push`/`Pop`.
    pub num_stacks: u32,
    /// The adjoint of the target (set to 1 where the reverse sweep starts).
    pub target_adjoint: VarId,
}

/// Index into [`Program::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Index into [`Program::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunId(pub u32);

#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    pub vars: Vec<VarInfo>,
    pub functions: Vec<Function>,
    pub data: Vec<DataDecl>,
    pub transformed_data: Vec<Stmt>,
    pub parameters: Vec<ParamDecl>,
    pub transformed_parameters: Vec<Stmt>,
    pub model: Vec<Stmt>,
    pub generated_quantities: Vec<Stmt>,
    /// Values computed once per model, in order, after transformed data
    /// (empty except in gradient programs; see [`Hoisted`]).
    pub hoisted: Vec<Hoisted>,
}

/// A value computed once per model instead of at every evaluation: `var`
/// (origin [`Origin::TransformedData`]) holds `value`, an expression over
/// data, transformed data, literals and earlier hoisted variables without
/// effects.
///
/// When `value` may fail (an argument check, a size mismatch, ...), `ok`
/// is an int variable set to 1 if it evaluated and 0 if not, and every use
/// reads `ok ? var : value`: a failure happens at the same place, with
/// the same error, at every evaluation that reaches it, exactly as before
/// hoisting. When `value` cannot fail, `ok` is `None` and uses read `var`.
#[derive(Clone, Debug, PartialEq)]
pub struct Hoisted {
    pub var: VarId,
    pub value: Expr,
    pub ok: Option<VarId>,
}

/// Where a variable was declared; decides who may read it and whether it is
/// written to the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    Data,
    TransformedData,
    Parameter,
    TransformedParameter,
    GeneratedQuantity,
    Local,
    FunctionArg,
    LoopVar,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    pub name: String,
    pub ty: Type,
    pub origin: Origin,
    pub span: Span,
}

/// A declared type with its size expressions, as in the source:
/// `array[N] vector[K]` is `Array(N, Vector(K))`.
#[derive(Clone, Debug, PartialEq)]
pub enum SizedType {
    Int,
    Real,
    Complex,
    Vector(Expr),
    RowVector(Expr),
    Matrix(Expr, Expr),
    ComplexVector(Expr),
    ComplexRowVector(Expr),
    ComplexMatrix(Expr, Expr),
    Array(Expr, Box<SizedType>),
    Tuple(Vec<SizedType>),
}

impl SizedType {
    /// Calls `f` on each size expression, in evaluation order (an array's
    /// size before its element type's).
    pub fn for_each_size<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        match self {
            SizedType::Vector(n)
            | SizedType::RowVector(n)
            | SizedType::ComplexVector(n)
            | SizedType::ComplexRowVector(n) => f(n),
            SizedType::Matrix(r, c) | SizedType::ComplexMatrix(r, c) => {
                f(r);
                f(c);
            }
            SizedType::Array(n, elem) => {
                f(n);
                elem.for_each_size(f);
            }
            SizedType::Tuple(items) => items.iter().for_each(|t| t.for_each_size(f)),
            SizedType::Int | SizedType::Real | SizedType::Complex => {}
        }
    }

    /// [`SizedType::for_each_size`] with mutable access.
    pub fn for_each_size_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        match self {
            SizedType::Vector(n)
            | SizedType::RowVector(n)
            | SizedType::ComplexVector(n)
            | SizedType::ComplexRowVector(n) => f(n),
            SizedType::Matrix(r, c) | SizedType::ComplexMatrix(r, c) => {
                f(r);
                f(c);
            }
            SizedType::Array(n, elem) => {
                f(n);
                elem.for_each_size_mut(f);
            }
            SizedType::Tuple(items) => items.iter_mut().for_each(|t| t.for_each_size_mut(f)),
            SizedType::Int | SizedType::Real | SizedType::Complex => {}
        }
    }

    /// The same type with every size expression replaced by `f`'s result,
    /// in evaluation order; the first error stops.
    pub fn try_map_sizes<E>(
        &self,
        f: &mut impl FnMut(&Expr) -> Result<Expr, E>,
    ) -> Result<SizedType, E> {
        Ok(match self {
            SizedType::Vector(n) => SizedType::Vector(f(n)?),
            SizedType::RowVector(n) => SizedType::RowVector(f(n)?),
            SizedType::ComplexVector(n) => SizedType::ComplexVector(f(n)?),
            SizedType::ComplexRowVector(n) => SizedType::ComplexRowVector(f(n)?),
            SizedType::Matrix(r, c) => SizedType::Matrix(f(r)?, f(c)?),
            SizedType::ComplexMatrix(r, c) => SizedType::ComplexMatrix(f(r)?, f(c)?),
            SizedType::Array(n, elem) => SizedType::Array(f(n)?, Box::new(elem.try_map_sizes(f)?)),
            SizedType::Tuple(items) => SizedType::Tuple(
                items
                    .iter()
                    .map(|t| t.try_map_sizes(f))
                    .collect::<Result<_, _>>()?,
            ),
            SizedType::Int | SizedType::Real | SizedType::Complex => self.clone(),
        })
    }
}

/// A constraint transform with its argument expressions (bounds, offset,
/// multiplier). Tuples carry one transform per component.
#[derive(Clone, Debug, PartialEq)]
pub enum Transform {
    Identity,
    Lower(Expr),
    Upper(Expr),
    LowerUpper(Expr, Expr),
    Offset(Expr),
    Multiplier(Expr),
    OffsetMultiplier(Expr, Expr),
    Ordered,
    PositiveOrdered,
    Simplex,
    UnitVector,
    SumToZeroVector,
    SumToZeroMatrix,
    CholeskyFactorCorr,
    CholeskyFactorCov,
    CorrMatrix,
    CovMatrix,
    ColumnStochasticMatrix,
    RowStochasticMatrix,
    Tuple(Vec<Transform>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct DataDecl {
    pub var: VarId,
    pub ty: SizedType,
    /// Bounds are checked when the data is read; other transforms are
    /// checked as constraints (e.g. `simplex` data must sum to one).
    pub transform: Transform,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    pub var: VarId,
    pub ty: SizedType,
    pub transform: Transform,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub args: Vec<VarId>,
    /// `None` is `void`.
    pub ret: Option<Type>,
    pub body: Vec<Stmt>,
    /// Has `_lp` suffix: may add to the target.
    pub uses_target: bool,
    /// Has `_rng` suffix: draws random numbers.
    pub uses_rng: bool,
    /// Declared without a body in a program compiled by
    /// [`crate::compile_with_externals`]: the host supplies it at run time
    /// (the interpreter calls its host's `call_external`).
    /// `args` and `body` are empty.
    pub external: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// What may be assigned: a variable, optionally indexed and projected.
#[derive(Clone, Debug, PartialEq)]
pub struct LValue {
    pub var: VarId,
    pub path: Vec<LValueStep>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LValueStep {
    Index(Vec<Index>),
    TupleProj(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// Declare a variable of the given size; `init` is its initial value
    /// (otherwise NaN for reals, `min int` for ints, as Stan).
    Decl {
        var: VarId,
        ty: SizedType,
        init: Option<Expr>,
    },
    Assign {
        lhs: LValue,
        rhs: Expr,
    },
    /// Tuple unpacking `(a, b) = e`.
    Unpack {
        lhs: Vec<LValue>,
        rhs: Expr,
    },
    /// `target += e` (also from `~` and `jacobian +=` when the Jacobian is on).
    TargetAdd(Expr),
    /// `jacobian += e`: added to the target only when the Jacobian is on.
    JacobianAdd(Expr),
    /// A compiler temporary holding `value`, with the value's shape.
    Let {
        var: VarId,
        value: Expr,
    },
    /// Check that a transformed-data / transformed-parameter / generated
    /// value satisfies its declared constraint (Stan checks at block end).
    CheckConstraint {
        var: VarId,
        transform: Transform,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    /// `for (var in lower:upper)`; bounds evaluated once.
    For {
        var: VarId,
        lower: Expr,
        upper: Expr,
        body: Vec<Stmt>,
    },
    Block(Vec<Stmt>),
    Break,
    Continue,
    Return(Option<Expr>),
    /// A call evaluated for its effect (void user or library function).
    Effect(Expr),
    Print(Vec<Printable>),
    /// Rejects the current proposal (−∞ log density) or, outside the log
    /// density, fails the run with the message.
    Reject(Vec<Printable>),
    /// Stops the whole run with the message.
    FatalError(Vec<Printable>),

    // ---- produced by the gradient transformation (`crate::ad`) only
    /// `lhs += rhs` elementwise; a multi-indexed `lhs` accumulates repeated
    /// indexes (scatter-add), unlike assignment.
    AddAssign {
        lhs: LValue,
        rhs: Expr,
    },
    /// Save a value on a stack of the gradient program.
    Push {
        stack: StackId,
        value: Expr,
    },
    /// `for (var in upper:lower)` counting down (reverse sweeps).
    ForDown {
        var: VarId,
        upper: Expr,
        lower: Expr,
        body: Vec<Stmt>,
    },
    /// Read parameter `param` from the unconstrained input, constrain it
    /// with `transform` (whose arguments are atoms), store it in `var`,
    /// and add log |J| to the target when the Jacobian is on.
    ReadParam {
        param: usize,
        var: VarId,
        transform: Transform,
    },
    /// Reverse of [`StmtKind::ReadParam`]: add the unconstrained gradient
    /// from `var_adj` and the target's adjoint `lp_adj` (log |J|) into the
    /// gradient output, and the transform arguments' adjoints into
    /// `arg_adjs` (one per argument of `transform`, `None` when data).
    /// `var` still holds the constrained value its `ReadParam` stored
    /// (parameters are never assigned), which a backend may use in place of
    /// recomputing the transform.
    ParamAdjoint {
        param: usize,
        var: VarId,
        var_adj: VarId,
        lp_adj: VarId,
        transform: Transform,
        arg_adjs: Vec<Option<VarId>>,
    },
}

/// Index of a stack of the gradient program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

#[derive(Clone, Debug, PartialEq)]
pub enum Printable {
    Str(String),
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Type,
    pub ad: AdLevel,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Real(f64),
    /// Imaginary literal `bi` as the complex number (0, b).
    Imag(f64),
    Var(VarId),
    /// A primitive operation; its kernel is chosen from the argument types.
    Prim(Prim, Vec<Expr>),
    /// A user function call.
    Call(FunId, Vec<Expr>),
    /// Indexing with single indexes and multi-indexes/slices.
    Index(Box<Expr>, Vec<Index>),
    TupleProj(Box<Expr>, usize),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `{a, b}`
    ArrayLit(Vec<Expr>),
    /// `[a, b]`: a row vector of scalars, or a matrix of row vectors.
    RowVectorLit(Vec<Expr>),
    TupleLit(Vec<Expr>),
    /// The current value of the target (`target()`).
    Target,
    /// A call of an ODE solver: the solution at the output times, or (in
    /// gradient programs) the adjoints of its inputs ([`OdeSolve`]).
    Ode(Box<OdeSolve>),

    // ---- produced by the gradient transformation (`crate::ad`) only
    /// Take the most recently pushed value off a stack.
    Pop(StackId),
    /// The partial derivative of elementwise primitive `prim` with respect
    /// to argument `arg`, evaluated elementwise at `args`.
    Partial {
        prim: Prim,
        arg: usize,
        args: Vec<Expr>,
    },
    /// Zeros of the shape of the operand (adjoint initialisation).
    ZerosLike(Box<Expr>),
    /// The int 1 when the log-Jacobian is added to the target (the
    /// evaluation's Jacobian switch), else 0: the adjoint of `jacobian +=`.
    JacobianOn,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    All,
    Single(Expr),
    /// An int array selecting several elements.
    Multi(Expr),
    Upfrom(Expr),
    Downto(Expr),
    Between(Expr, Expr),
}
