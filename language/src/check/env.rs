//! Scopes and name resolution.
//!
//! Variables live in a per-name stack (`HashMap<String, Vec<_>>`) plus a
//! stack of scopes listing the names each scope declared, so lookup and
//! scope exit are O(1) per name: no quadratic scans on big programs.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::SymbolId;
use crate::syntax::ast::BlockKind;

/// FNV-1a: fast for the short identifier keys of the scope maps.
#[derive(Clone, Copy)]
pub struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> NameHasher {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

type NameMap<V> = HashMap<String, V, BuildHasherDefault<NameHasher>>;

/// Where a variable comes from; decides its autodiff level and which
/// blocks may assign it (stanc3's `originblock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Functions,
    Block(BlockKind),
}

impl Origin {
    pub fn is(self, kind: BlockKind) -> bool {
        self == Origin::Block(kind)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct VarEntry {
    pub id: SymbolId,
    pub origin: Origin,
    /// Declared at the top level of a program block.
    pub global: bool,
    /// Function arguments and loop variables.
    pub readonly: bool,
}

#[derive(Default)]
pub struct Env {
    vars: NameMap<Vec<VarEntry>>,
    scopes: Vec<Vec<String>>,
    functions: NameMap<Vec<SymbolId>>,
}

impl Env {
    pub fn new() -> Env {
        Env {
            scopes: vec![Vec::new()],
            ..Env::default()
        }
    }

    pub fn push_scope(&mut self) {
        self.scopes.push(Vec::new());
    }

    pub fn pop_scope(&mut self) {
        if let Some(names) = self.scopes.pop() {
            for name in names {
                if let Some(stack) = self.vars.get_mut(&name) {
                    stack.pop();
                }
            }
        }
    }

    /// The innermost visible variable of that name.
    pub fn var(&self, name: &str) -> Option<VarEntry> {
        self.vars.get(name).and_then(|s| s.last().copied())
    }

    pub fn add_var(&mut self, name: &str, entry: VarEntry) {
        self.vars.entry(name.to_string()).or_default().push(entry);
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(name.to_string());
        }
    }

    pub fn functions(&self, name: &str) -> &[SymbolId] {
        self.functions.get(name).map_or(&[], Vec::as_slice)
    }

    pub fn add_function(&mut self, name: &str, id: SymbolId) {
        self.functions.entry(name.to_string()).or_default().push(id);
    }

    /// Every visible variable and user function name (for "did you mean").
    pub fn visible_names(&self) -> impl Iterator<Item = &str> {
        self.vars
            .iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|(n, _)| n.as_str())
            .chain(self.functions.keys().map(String::as_str))
    }
}
