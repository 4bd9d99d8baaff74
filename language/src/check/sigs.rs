//! The checker's view of the built-in signature table.
//!
//! Everything the checker needs from `crate::builtins` goes through this
//! facade, so the dependency is in one place.
//!
//! TEMPORARY local shim until the `builtins` branch is merged: a handful of
//! signatures so the checker compiles and can be exercised.

use std::sync::LazyLock;

use crate::types::{AdLevel, Type};

#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub args: Vec<(AdLevel, Type)>,
    pub ret: Option<Type>,
}

pub fn is_special(_name: &str) -> bool {
    false
}

pub fn names() -> impl Iterator<Item = &'static str> {
    ["normal_lpdf", "exp"].into_iter()
}

static NORMAL: LazyLock<Vec<Signature>> = LazyLock::new(|| {
    let ad = |t: Type| (AdLevel::AutoDiff, t);
    vec![Signature {
        args: vec![ad(Type::Real), ad(Type::Real), ad(Type::Real)],
        ret: Some(Type::Real),
    }]
});

pub fn signatures(name: &str) -> &'static [Signature] {
    match name {
        "normal_lpdf" => &NORMAL,
        _ => &[],
    }
}
