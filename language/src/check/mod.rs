//! Semantic checking: name resolution, types, block rules.
//!
//! [`check_program`] walks the AST once, in program order (functions first,
//! then the blocks), the way stanc3's typechecker does, and collects every
//! semantic error instead of stopping at the first one. An ill-typed
//! expression gets [`Type::Error`], which is compatible with everything, so
//! one mistake gives one diagnostic.
//!
//! # Diagnostic codes (all of kind `Semantic`)
//!
//! | code | meaning |
//! |---|---|
//! | E0101 | identifier not in scope (with "did you mean" help) |
//! | E0102 | identifier already declared in this scope |
//! | E0103 | identifier is a reserved word, ends in `__`, or has an unnormalized suffix |
//! | E0104 | ill-typed binary operator |
//! | E0105 | ill-typed unary / postfix operator |
//! | E0106 | no signature of a function matches the arguments |
//! | E0107 | ambiguous call: several signatures match equally well |
//! | E0108 | a variable is used as a function / unknown function |
//! | E0109 | void function used as a value, or non-void function used as a statement |
//! | E0110 | too many indexes / value not indexable |
//! | E0111 | index or range bound is not an int (or int array) |
//! | E0112 | tuple projection on a non-tuple or out of range |
//! | E0113 | array or row-vector expression with incompatible elements |
//! | E0114 | ill-typed conditional operator `?:` |
//! | E0115 | a condition / loop bound / size has the wrong type |
//! | E0116 | assignment or initial value of the wrong type |
//! | E0117 | assignment to something that cannot be assigned (read-only, other block, not an lvalue, function) |
//! | E0118 | `~` statement errors (unknown distribution, `_lpdf` / `_cdf` suffix written) |
//! | E0119 | truncation errors (bounds type, missing CDFs) |
//! | E0120 | `target +=` / `target()` / `_lp` function outside the model block or an `_lp` function |
//! | E0121 | `jacobian +=` / `_jacobian` function outside transformed parameters or a `_jacobian` function |
//! | E0122 | `_rng` function outside transformed data, generated quantities or an `_rng` function |
//! | E0123 | `_lupdf` / `_lupmf` outside the model block or a density function |
//! | E0124 | `break` / `continue` outside a loop |
//! | E0125 | `return` errors (outside a function, wrong type, void vs non-void) |
//! | E0126 | a non-void function may end without returning |
//! | E0127 | function definition rules (suffixes, forward declarations, redefinitions) |
//! | E0128 | integer-valued parameters / transformed parameters |
//! | E0129 | sizes in top-level declarations must be data-only |
//! | E0130 | bounds / offset / multiplier of the wrong type or on a type that cannot take them |
//! | E0132 | higher-order function (ODE, reduce_sum, map_rect, solvers, ...) argument errors |
//! | E0133 | conditional-notation `|` misuse |
//! | E0134 | function values cannot be printed |
//! | E0135 | integer literal too large |
//! | E0136 | `for` loop over something that is not a container |
//! | E0137 | assignment to a multi-index or overlapping tuple unpacking |
//! | W0101 | integer division (warning, like stanc) |
//! | W0102 | other warnings stanc3 gives (unreachable statements, self assignment, ...) |

mod assign;
mod calls;
mod codes;
mod compat;
mod context;
mod decl;
mod env;
mod expr;
mod functions;
mod higher_order;
mod index;
mod laplace;
mod ops;
mod sigs;
mod stmt;
mod suggest;
mod tilde;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::syntax::ast::{BlockKind, Program};
use crate::types::{AdLevel, Type};

pub use codes::*;
pub use sigs::Signature;

/// A fast hasher for [`Span`] keys (two small integers; no need for
/// SipHash's DoS resistance on our own spans).
#[derive(Default, Clone, Copy)]
pub struct SpanHasher(u64);

impl Hasher for SpanHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A map keyed by source spans.
pub type SpanMap<V> = HashMap<Span, V, BuildHasherDefault<SpanHasher>>;

/// Index into [`CheckedProgram::symbols`].
pub type SymbolId = usize;

/// What kind of thing a [`Symbol`] names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    /// A variable declared at the top level of a program block.
    BlockVar(BlockKind),
    /// A local variable (inside a statement block, a function body, or the
    /// model block).
    Local,
    /// A function argument.
    FunArg,
    /// A `for` / `foreach` loop variable.
    LoopVar,
    /// A user-defined function; one symbol per overload. `defined` is false
    /// for a forward declaration that never got a body.
    Function { defined: bool },
}

/// One declared name.
#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    /// Span of the name at its declaration.
    pub def_span: Span,
    pub kind: SymbolKind,
    /// The unsized type (for functions a [`Type::Function`]).
    pub ty: Type,
    /// Data-only or autodiff, as seen from its own block.
    pub ad: AdLevel,
    /// The type as written, e.g. `real<lower=0>` or
    /// `real foo(data real x, vector y)`, for hover.
    pub declared: String,
    /// Region of source where the name is visible.
    pub scope_span: Span,
}

/// How a call (or `~` statement) was resolved.
#[derive(Clone, Debug)]
pub enum Callee {
    /// A Stan math library function with the chosen signature. Higher-order
    /// built-ins (ODE solvers, reduce_sum, ...) record a signature whose
    /// first argument is the function argument's type.
    Builtin(Signature),
    /// A user-defined function overload.
    User(SymbolId),
}

/// What the checker learned about a program (types of expressions,
/// resolved names, chosen overloads) for later phases and the LSP.
#[derive(Debug, Default)]
pub struct CheckedProgram {
    /// Every declaration: block variables, locals, function arguments, loop
    /// variables, functions (one per overload).
    pub symbols: Vec<Symbol>,
    /// Every resolved identifier use (including the name in a call) and the
    /// symbol it refers to, in source order of checking.
    pub references: Vec<(Span, SymbolId)>,
    /// Type and autodiff level of every expression, keyed by its span.
    pub expr_types: SpanMap<(Type, AdLevel)>,
    /// Call expression / `~` statement span → resolved callee.
    pub calls: SpanMap<Callee>,
}

impl CheckedProgram {
    /// The symbol referenced at (or declared at) `offset`, for hover and
    /// go-to-definition.
    pub fn symbol_at(&self, offset: usize) -> Option<SymbolId> {
        self.references
            .iter()
            .find(|(span, _)| span.contains(offset))
            .map(|(_, id)| *id)
            .or_else(|| {
                self.symbols
                    .iter()
                    .position(|s| s.def_span.contains(offset))
            })
    }
}

/// Stack for the checking thread. The checker recurses over the tree,
/// whose depth the parser bounds (~1.3k levels for the deepest accepted
/// expression); unoptimised builds need several KiB per level, more than a
/// default 2 MiB thread stack. Pages are only touched as used.
const CHECK_STACK_BYTES: usize = 256 << 20;

/// Check a parsed program, collecting every semantic error and warning.
pub fn check_program(program: &Program) -> (CheckedProgram, Vec<Diagnostic>) {
    check_program_with(program, false)
}

/// [`check_program`] where, when `allow_external`, a function declared
/// without a body is an external function the host supplies (as stanc3's
/// `--allow-undefined`) instead of an error. Used for the sampler program.
pub fn check_program_with(
    program: &Program,
    allow_external: bool,
) -> (CheckedProgram, Vec<Diagnostic>) {
    let run = || {
        let mut checker = context::Checker::new();
        checker.allow_external = allow_external;
        checker.check_program(program);
        checker.finish()
    };
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .name("bat-check".into())
            .stack_size(CHECK_STACK_BYTES)
            .spawn_scoped(scope, run)
        {
            Ok(handle) => match handle.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // No thread available: check on the caller's stack.
            Err(_) => run(),
        }
    })
}
