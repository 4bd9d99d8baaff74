//! The checker's view of the built-in signature table.
//!
//! Everything the checker needs from `crate::builtins` goes through this
//! facade, so the dependency is in one place.

pub use crate::builtins::{Signature, is_special, names};

/// Signatures of a built-in (a static slice: no copying per call).
pub fn signatures(name: &str) -> &'static [Signature] {
    crate::builtins::signatures_ref(name)
}
