//! Scopes and name resolution.
//!
//! Variables live in a per-name stack (`HashMap<String, Vec<_>>`) plus a
//! stack of scopes listing the names each scope declared, so lookup and
//! scope exit are O(1) per name: no quadratic scans on big programs.

use std::collections::HashMap;

use super::SymbolId;
use crate::syntax::ast::BlockKind;

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
    vars: HashMap<String, Vec<VarEntry>>,
    scopes: Vec<Vec<String>>,
    functions: HashMap<String, Vec<SymbolId>>,
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
