//! Numeric primitives and constraint transforms shared by every part of bat.
//!
//! This is a leaf crate with no dependency on the compiler: the scalar
//! reference interpreter (in `language`), the CPU backend and the CUDA backend
//! all need the *same* special functions, the *same* derivative rules and the
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

// `!(a > b)` is deliberate throughout: it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod dual;
pub mod primitive;
pub mod scalar;
pub mod transforms;
pub mod vector;

pub use primitive::Primitive;
