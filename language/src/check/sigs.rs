//! The checker's view of the built-in signature table.
//!
//! Everything the checker needs from `crate::builtins` goes through this
//! facade, so the dependency is in one place.
//!
//! TEMPORARY local shim until the `builtins` branch is merged: a handful of
//! signatures so the checker can be exercised.

use crate::types::{AdLevel, Type};

#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub args: Vec<(AdLevel, Type)>,
    pub ret: Option<Type>,
}

pub fn is_builtin(name: &str) -> bool {
    !signatures(name).is_empty()
}

pub fn is_special(_name: &str) -> bool {
    false
}

pub fn names() -> impl Iterator<Item = &'static str> {
    ["normal_lpdf", "exp", "print_shim"].into_iter()
}

pub fn signatures(name: &str) -> Vec<Signature> {
    let ad = |t: Type| (AdLevel::AutoDiff, t);
    match name {
        "normal_lpdf" => vec![Signature {
            args: vec![ad(Type::Real), ad(Type::Real), ad(Type::Real)],
            ret: Some(Type::Real),
        }],
        "exp" => vec![Signature {
            args: vec![ad(Type::Real)],
            ret: Some(Type::Real),
        }],
        _ => vec![],
    }
}
