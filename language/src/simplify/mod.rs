//! Simplification of gradient programs: the passes that turn the
//! transformation's statement-by-statement output ([`crate::ad`]) into
//! the program the interpreter, the batching IRs, the batched executors
//! and the CUDA code generator run.
//!
//! The AD writes, for every A-normal-form temporary `t`, `let t_adj =
//! zeros_like(t)` and then `t_adj += ...`; computes the adjoints of
//! argument checks that nothing reads; copies one adjoint through chains
//! of temporaries; and recomputes data-only expressions (checks of data,
//! `transpose(X)`) at every evaluation. [`simplify`] runs, until nothing
//! changes:
//!
//! | pass | module | does |
//! |---|---|---|
//! | zero initialisation | `zero_init` | `let a = zeros_like(x); a += e;` → `let a = e;` |
//! | copy propagation | `copy_prop` | `let a = b; … a …` → `… b …` (also literals) |
//! | peephole | `peephole` | `x - 0`, `x * 1`, `x / 1`, `-(-x)` → `x`; literal arithmetic |
//! | derivative rules | `partials` | `d1_square(x)` → `2 .* x`, `d1_log(x)` → `inv(x)`, … (once, first) |
//! | uniform adjoints | `uniform` | `zeros_like(x) + 1.0` scaled elementwise → the literal, where it meets `x`'s shape |
//! | common subexpressions | `cse` | a repeated value reuses the first `let` of it |
//! | hoisting | `hoist` | data-only expressions → computed once per model ([`crate::mir::Hoisted`]) |
//! | dead code | `dce` | statements whose results nobody reads go |
//! | inlining | `inline` | a temporary read once, by the next statement, moves into it (once, last) |
//!
//! Each pass documents its invariants; together they keep the program's
//! meaning exactly: the same log density and gradient (up to the sign of
//! a zero), and the same error with the same span at the same point
//! wherever the program failed before. They never reorder statements, so
//! stack pushes and pops keep their order. Function bodies (user
//! functions, their reverse functions) get the passes that need no
//! knowledge of the sweeps; the log density's body gets all of them.
//!
//! # Hoisting and failing checks of data
//! A check of data in the model block (`y ~ normal(mu, sigma)` with data
//! `sigma` checks `sigma > 0`) is what Stan evaluates at every evaluation
//! of the log density, not when it reads the data: with bad data every
//! evaluation is rejected with the check's message (and sampling cannot
//! initialise), a branch that skips the check does not fail, and `bat
//! logdensity` reports the rejection at that point. So a hoisted check is
//! evaluated once per model, and where it failed the program evaluates it
//! again in place (`ok ? value : check(...)`, see `hoist`): the error,
//! its span and the place it happens are exactly as before, and a
//! passing check costs one test of a flag per evaluation. Failing at model
//! construction instead would reject data Stan accepts and fail evaluations
//! Stan completes.
//!
//! # Effect
//! Statements and operations (expression nodes that compute: primitives,
//! indexing, derivative rules, zeros) of the log density's body per
//! gradient program, before → after, from `cargo test -p language --test
//! grad_simplify -- --nocapture` (which fails if the total reduction falls
//! below a floor or a program grows):
//!
//! | model | statements | operations |
//! |---|---|---|
//! | arK-arK | 154 → 58 | 140 → 82 |
//! | diamonds-diamonds | 177 → 53 | 205 → 123 |
//! | earnings-earn_height | 69 → 25 | 58 → 34 |
//! | eight_schools-eight_schools_centered | 132 → 37 | 110 → 67 |
//! | eight_schools-eight_schools_noncentered | 121 → 35 | 93 → 52 |
//! | garch-garch11 | 114 → 59 | 106 → 80 |
//! | gp_pois_regr-gp_regr | 130 → 39 | 199 → 149 |
//! | hmm_example-hmm_example | 239 → 99 | 224 → 116 |
//! | kidiq-kidscore_interaction | 112 → 36 | 94 → 56 |
//! | kilpisjarvi_mod-kilpisjarvi | 118 → 35 | 99 → 61 |
//! | low_dim_gauss_mix-low_dim_gauss_mix | 210 → 56 | 228 → 149 |
//! | mcycle_gp-accel_gp | 486 → 167 | 530 → 323 |
//! | mesquite-mesquite | 119 → 40 | 98 → 59 |
//! | nes1972-nes | 139 → 46 | 114 → 69 |
//! | sblrc-blr | 116 → 27 | 106 → 54 |
//! | examples/correlated_gaussian_100 | 22 → 10 | 17 → 7 |
//! | examples/eight_schools_noncentered | 110 → 30 | 86 → 50 |
//! | examples/hierarchical_radon | 209 → 79 | 201 → 123 |
//! | examples/logistic_regression | 80 → 21 | 64 → 30 |
//! | examples/loop_jumps | 319 → 189 | 247 → 152 |
//! | examples/recursion_while | 53 → 16 | 54 → 23 |
//! | examples/recursive_functions | 155 → 56 | 151 → 85 |
//! | all 34 (posteriordb and examples) | 4914 → 1695 | 4569 → 2743 |
//!
//! (The remaining earnings, kidiq, mesquite and nes models are alike.)
//! Loops and branches keep more: their stacks and the statements between a
//! push and its pop stay.

mod analysis;
mod copy_prop;
mod cse;
mod dce;
mod hoist;
mod inline;
pub mod partials;
mod peephole;
#[cfg(test)]
mod testing;
mod uniform;
mod zero_init;

use crate::mir::GradProgram;
use crate::mir::visit::{bodies, own_exprs, walk};
use crate::mir::{ExprKind, Stmt, StmtKind};

/// Rounds of the passes at most (each round that changes nothing ends the
/// loop; real programs settle in a few).
const MAX_ROUNDS: usize = 16;

/// Simplify `g` in place (see the module docs).
/// `e` certainly evaluates without error on well-typed operands (see
/// `analysis::cannot_fail`, conservative): a backend that has no use for its
/// value (the log density's `print`, whose line `bat run` does not show)
/// may leave it unevaluated and still fail exactly where the interpreter
/// fails.
pub fn cannot_fail(e: &crate::mir::Expr) -> bool {
    analysis::cannot_fail(e)
}

pub fn simplify(g: &mut GradProgram) {
    let pure = analysis::pure_functions(&g.program);
    simplify_body(g, &pure);
    for f in 0..g.program.functions.len() {
        let mut body = std::mem::take(&mut g.program.functions[f].body);
        simplify_function(&g.program, &mut body, &pure);
        g.program.functions[f].body = body;
    }
}

/// The log density's body: everything, with the reverse sweep's freedoms.
fn simplify_body(g: &mut GradProgram, pure: &[bool]) {
    partials::run(&mut g.body);
    peephole::run(&mut g.body, true);
    hoist::run(&mut g.program, &mut g.body);
    for _ in 0..MAX_ROUNDS {
        let mut changed = zero_init::run(&g.program, &mut g.body);
        changed |= copy_prop::run(&g.program, &mut g.body);
        changed |= peephole::run(&mut g.body, true);
        let start = reverse_start(g);
        changed |= uniform::run(&g.program, &mut g.body, start);
        changed |= cse::run(&g.program, &mut g.body);
        changed |= hoist::run(&mut g.program, &mut g.body);
        let start = reverse_start(g);
        changed |= dce::run(&mut g.body, g.program.vars.len(), start, pure);
        if !changed {
            break;
        }
    }
    let start = reverse_start(g);
    inline::run(&g.program, &mut g.body, start);
    hoist::prune(&mut g.program, &g.body);
}

/// A function's body (the user's functions, their reverse functions and
/// quiet copies), each a frame of its own: no hoisting (functions do not
/// see data), every statement treated as a forward one (the reverse
/// functions' recomputations are not told apart), and none of the
/// rewrites that rely on a `real` holding a real (an argument may hold
/// the int it was called with): zero-initialisation folding, identities.
fn simplify_function(program: &crate::mir::Program, body: &mut Vec<Stmt>, pure: &[bool]) {
    partials::run(body);
    peephole::run(body, false);
    for _ in 0..MAX_ROUNDS {
        let mut changed = copy_prop::run(program, body);
        changed |= peephole::run(body, false);
        changed |= cse::run(program, body);
        changed |= dce::run(body, program.vars.len(), usize::MAX, pure);
        if !changed {
            break;
        }
    }
    inline::run(program, body, usize::MAX);
}

/// Index of the first top-level statement of the reverse sweep (`let
/// target_adj = 1.0`), or the body's length when it is gone (everything
/// is then treated as forward sweep, which is the cautious side).
fn reverse_start(g: &GradProgram) -> usize {
    g.body
        .iter()
        .position(|s| matches!(s.kind, StmtKind::Let { var, .. } if var == g.target_adjoint))
        .unwrap_or(g.body.len())
}

/// Size of a gradient program's body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCount {
    /// Statements, nested ones included (a loop or branch counts once
    /// itself, plus its bodies).
    pub statements: usize,
    /// Expression nodes that compute something: primitives, indexing,
    /// derivative rules, zeros, pops, calls, literals of containers
    /// (variables and scalar literals are free).
    pub operations: usize,
}

/// Count the statements and operations of `g`'s body (not of its
/// functions, nor of its hoisted values, which run once per model).
pub fn count_ops(g: &GradProgram) -> OpCount {
    let mut c = OpCount::default();
    count_list(&g.body, &mut c);
    c
}

fn count_list(stmts: &[Stmt], c: &mut OpCount) {
    for s in stmts {
        c.statements += 1;
        own_exprs(s, &mut |e| {
            walk(e, &mut |x| {
                c.operations += !matches!(
                    x.kind,
                    ExprKind::Var(_)
                        | ExprKind::Int(_)
                        | ExprKind::Real(_)
                        | ExprKind::Imag(_)
                        | ExprKind::JacobianOn
                        | ExprKind::Target
                ) as usize
            })
        });
        for body in bodies(s) {
            count_list(body, c);
        }
    }
}
