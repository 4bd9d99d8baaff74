//! Construction of the signature table, once, from compact descriptions:
//! argument classes for distributions, generators for the vectorised
//! families, and a text file for the fixed signatures. It mirrors stanc3's
//! `Generate.ml` so the expanded result is stanc3's table.

mod distributions;
mod generators;
mod math;

use std::collections::HashMap;

use super::Signature;
use super::notation::{parse_arg, parse_type, split_top_level};
use crate::types::{AdLevel, Type};

pub(crate) use distributions::distribution_families;

/// All built-in signatures by function name, in registration order.
pub(crate) struct Table {
    pub(crate) functions: HashMap<String, Vec<Signature>>,
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

    fn finish(mut self) -> Table {
        // Generators may produce the same argument list twice (as stanc3's
        // do for a few functions); keep the first, which is what stanc3's
        // resolution ends up selecting.
        for sigs in self.functions.values_mut() {
            let mut seen = std::collections::HashSet::new();
            sigs.retain(|sig| seen.insert(sig.args.clone()));
        }
        Table {
            functions: self.functions,
        }
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
