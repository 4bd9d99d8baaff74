//! Numeric primitives and constraint transforms shared by every part of bat.
//!
//! This is a leaf crate with no dependency on the compiler: the scalar
//! reference interpreter (in `runtime`), the CPU backend and the generated
//! code of the native and CUDA backends all need the *same* special functions, the *same* derivative rules and the
//! *same* constraint transforms, and a small crate keeps them shared, quick to
//! compile and testable on its own.
//!
//! * [`scalar`] — `f64` special functions with Stan's definitions (numerically
//!   careful forms such as `log1p_exp`, `log_Phi`, `lbeta`), each
//!   differentiable function paired with its derivative rule(s).
//! * [`primitive`] — the table an AD pass consults: [`Primitive`] names every
//!   scalar primitive and gives `eval` and `grad` (partials w.r.t. each
//!   argument).
//! * [`vector`] — vector primitives with their own reverse-mode rules
//!   (`log_sum_exp`, `softmax`, `log_softmax`).
//! * [`transforms`] — Stan's constraint transforms (`constrain`, `unconstrain`,
//!   log |J| and a reverse-mode rule), with Stan's element order.
//!
//! Stan's math library is the contract: every function documents the Stan
//! definition it follows.
//!
//! # Notes on Stan's definitions
//!
//! * `simplex` (Stan ≥ 2.37) is `softmax(sum_to_zero_constrain(x))` (inverse
//!   ILR), not stick-breaking; log |J| = Σ log y + ½ log K, which is exactly
//!   the Jacobian of x ↦ (y₁…y_{K-1}). Row/column stochastic matrices apply it
//!   per row/column.
//! * `sum_to_zero_matrix` does not reuse the vector transform's basis along
//!   each axis: Stan's double loop uses the basis
//!   `(-1,…,-1, j+1, 0,…,0, -1)/√((j+1)(j+2))`, i.e. the vector basis negated
//!   and rotated by one position (see `transforms::sum_to_zero_matrix`).
//! * `corr_matrix` reads its canonical partial correlations in column-major
//!   order of the strict lower triangle, `cholesky_factor_corr` in row-major
//!   order; both share one Cholesky-from-partials core but have different
//!   Jacobians (Ω vs L).
//! * `cov_matrix`'s log |J| includes the constant K·log 2 (the Jacobian of
//!   x ↦ vech(Σ)); `unit_vector` adds −½‖x‖², a density, not a Jacobian.
//! * Stan's `Phi` is 0.5·(1 + erf(x/√2)) on (−5, 8.25): absolutely but not
//!   relatively accurate in the lower tail. We keep that definition for `Phi`
//!   but refine `inv_Phi` and compute `log_Phi` with `erfc`/asymptotics so
//!   both are relatively accurate in the tails.
//! * Where Stan's literal formula loses precision we use an equivalent,
//!   stabler form and say so: `log(1 − tanh²x)` in the correlation Jacobians
//!   (finite for |x| > 19), `log_inv_logit_diff`, and the prefactors of the
//!   incomplete beta/gamma functions for large shapes.
//! * Out-of-domain scalar arguments give NaN (Stan throws); integer helpers
//!   and `unconstrain` return errors; nothing panics on bad input.

// `!(a > b)` is deliberate throughout: it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod dual;
pub mod ode;
pub mod primitive;
pub mod scalar;
pub mod transforms;
pub mod vector;

pub use primitive::Primitive;
