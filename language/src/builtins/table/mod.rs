//! Construction of the signature table, once, from compact descriptions:
//! argument classes for distributions, generators for the vectorised
//! families, and a text file for the fixed signatures. It mirrors stanc3's
//! `Generate.ml` so the expanded result is stanc3's table.

mod distributions;
mod generators;
mod math;

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use super::Signature;
use super::notation::{parse_arg, parse_type, split_top_level};
use crate::types::{AdLevel, Type};

pub(crate) use distributions::distribution_families;

/// All built-in signatures by function name, in registration order.
/// Large generated families are expanded on first lookup of their name,
/// so building the table costs little and a model pays only for the
/// functions it calls.
pub(crate) struct Table {
    entries: HashMap<String, Entry>,
}

struct Entry {
    eager: Vec<Signature>,
    recipes: Vec<Recipe>,
    expanded: OnceLock<Vec<Signature>>,
}

/// Registers (at least) the signatures of one name into a builder.
type Recipe = Box<dyn Fn(&mut Builder) + Send + Sync>;

impl Table {
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    pub(crate) fn signatures(&self, name: &str) -> &[Signature] {
        let Some(entry) = self.entries.get(name) else {
            return &[];
        };
        entry.expanded.get_or_init(|| {
            let mut sigs = entry.eager.clone();
            let mut scratch = Builder::default();
            for recipe in &entry.recipes {
                recipe(&mut scratch);
            }
            sigs.extend(scratch.functions.remove(name).unwrap_or_default());
            // Generators may produce the same argument list twice; keep
            // the first.
            let mut seen = HashSet::new();
            sigs.retain(|sig| seen.insert(sig.args.clone()));
            sigs
        })
    }
}

pub(crate) fn build() -> Table {
    let mut builder = Builder::default();
    distributions::register(&mut builder);
    math::register(&mut builder);
    builder.finish()
}

#[derive(Default)]
pub(crate) struct Builder {
    functions: HashMap<String, Vec<Signature>>,
    recipes: HashMap<String, Vec<Recipe>>,
}

impl Builder {
    /// Adds a signature whose arguments all accept autodiff values.
    pub(crate) fn add(&mut self, name: &str, ret: Type, args: Vec<Type>) {
        let args = args.into_iter().map(|t| (AdLevel::AutoDiff, t)).collect();
        self.add_qualified(name, Some(ret), args);
    }

    pub(crate) fn add_qualified(
        &mut self,
        name: &str,
        ret: Option<Type>,
        args: Vec<(AdLevel, Type)>,
    ) {
        self.functions
            .entry(name.to_owned())
            .or_default()
            .push(Signature { args, ret });
    }

    /// Adds signatures written one per line as `name(arg, ...) => ret`;
    /// `#` starts a comment. Panics on malformed lines: the text is part
    /// of this crate, and a test builds the table.
    pub(crate) fn add_text(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (name, args, ret) =
                parse_signature_line(line).unwrap_or_else(|e| panic!("{e} in `{line}`"));
            self.add_qualified(name, ret, args);
        }
    }

    /// Registers `name` now and runs `recipe` (which must add the
    /// signatures of `name`) when `name` is first looked up.
    pub(crate) fn defer(
        &mut self,
        name: &str,
        recipe: impl Fn(&mut Builder) + Send + Sync + 'static,
    ) {
        self.recipes
            .entry(name.to_owned())
            .or_default()
            .push(Box::new(recipe));
    }

    fn finish(mut self) -> Table {
        let mut entries: HashMap<String, Entry> = HashMap::new();
        for (name, eager) in self.functions.drain() {
            entries.insert(
                name,
                Entry {
                    eager,
                    recipes: Vec::new(),
                    expanded: OnceLock::new(),
                },
            );
        }
        for (name, recipes) in self.recipes.drain() {
            entries
                .entry(name)
                .or_insert_with(|| Entry {
                    eager: Vec::new(),
                    recipes: Vec::new(),
                    expanded: OnceLock::new(),
                })
                .recipes
                .extend(recipes);
        }
        Table { entries }
    }
}

type ParsedLine<'a> = (&'a str, Vec<(AdLevel, Type)>, Option<Type>);

fn parse_signature_line(line: &str) -> Result<ParsedLine<'_>, String> {
    let (head, ret) = line
        .split_once("=>")
        .ok_or_else(|| "missing `=>`".to_owned())?;
    let open = head.find('(').ok_or_else(|| "missing `(`".to_owned())?;
    let close = head.rfind(')').ok_or_else(|| "missing `)`".to_owned())?;
    let name = head[..open].trim();
    let args = split_top_level(&head[open + 1..close])
        .into_iter()
        .map(parse_arg)
        .collect::<Result<Vec<_>, _>>()?;
    let ret = match ret.trim() {
        "void" => None,
        ty => Some(parse_type(ty)?),
    };
    Ok((name, args, ret))
}

/// `t` nested in `dims` arrays.
pub(crate) fn arr(t: &Type, dims: usize) -> Type {
    Type::array_of(t.clone(), dims)
}

/// Shorthand for table code: parses type notation known to be valid.
pub(crate) fn ty(text: &str) -> Type {
    parse_type(text).unwrap_or_else(|e| panic!("{e}"))
}
