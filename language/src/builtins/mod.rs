//! The built-in signature table: every Stan math library function and
//! distribution with its signatures, shared by the checker, hover,
//! completion, the model IR and the backends.
//!
//! The table mirrors stanc3's (`src/stan_math_signatures/Generate.ml`,
//! stanc3 2.37): it is written compactly as argument classes and
//! generators (see [`table`]) and expanded once, on first use, into
//! concrete signatures indexed by name. Overload resolution follows
//! stanc3: the unique candidate with the fewest promotions wins.
//!
//! Names ending in `_lupdf`/`_lupmf` share the signatures of their
//! `_lpdf`/`_lpmf` counterparts. Operators are available under stanc3's
//! names (`add`, `subtract`, `multiply`, `elt_multiply`, `logical_eq`, ...;
//! see [`operator_functions`]).

mod docs;
mod notation;
mod overload;
mod special;
mod table;

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::LazyLock;

use crate::types::{AdLevel, Type};

pub use overload::{OverloadError, ad_level_accepts, promotion_cost, select_overload};
pub use special::{VariadicSignature, laplace_tolerance_args, reduce_sum_slice_types, variadic};

/// One concrete signature of a built-in function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    pub args: Vec<(AdLevel, Type)>,
    /// `None` is `void`.
    pub ret: Option<Type>,
}

/// Which functions a distribution family provides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Distribution {
    pub family: &'static str,
    pub has_lpdf: bool,
    pub has_lpmf: bool,
    pub has_cdf: bool,
    pub has_lcdf: bool,
    pub has_lccdf: bool,
    pub has_rng: bool,
}

impl Distribution {
    /// A discrete family (`_lpmf`), whose variate is an int.
    pub fn is_discrete(&self) -> bool {
        self.has_lpmf
    }

    /// Usable with truncation `T[,]` (needs the CDFs).
    pub fn supports_truncation(&self) -> bool {
        self.has_lcdf && self.has_lccdf
    }
}

struct Index {
    functions: HashMap<String, Vec<Signature>>,
    /// Every callable name: table names, `_lupdf`/`_lupmf` aliases and
    /// special functions, sorted.
    names: Vec<&'static str>,
    families: HashMap<&'static str, Distribution>,
}

static INDEX: LazyLock<Index> = LazyLock::new(build_index);

fn build_index() -> Index {
    let functions = table::build().functions;
    let mut names: Vec<String> = functions.keys().cloned().collect();
    for name in functions.keys() {
        if let Some(family) = name.strip_suffix("_lpdf") {
            names.push(format!("{family}_lupdf"));
        } else if let Some(family) = name.strip_suffix("_lpmf") {
            names.push(format!("{family}_lupmf"));
        }
    }
    names.extend(
        special::SPECIAL_FUNCTIONS
            .iter()
            .map(|(name, _)| (*name).to_owned()),
    );
    names.sort();
    names.dedup();
    // Leaked once: the index lives for the whole program.
    let names: Vec<&'static str> = names
        .into_iter()
        .map(|n| &*Box::leak(n.into_boxed_str()))
        .collect();
    let has = |name: String| functions.contains_key(&name);
    let families = table::distribution_families()
        .into_iter()
        .map(|family| {
            let dist = Distribution {
                family,
                has_lpdf: has(format!("{family}_lpdf")),
                has_lpmf: has(format!("{family}_lpmf")),
                has_cdf: has(format!("{family}_cdf")),
                has_lcdf: has(format!("{family}_lcdf")),
                has_lccdf: has(format!("{family}_lccdf")),
                has_rng: has(format!("{family}_rng")),
            };
            (family, dist)
        })
        .collect();
    Index {
        functions,
        names,
        families,
    }
}

/// `normal_lupdf` → `normal_lpdf`; other names unchanged.
fn canonical_name(name: &str) -> std::borrow::Cow<'_, str> {
    if let Some(family) = name.strip_suffix("_lupdf") {
        format!("{family}_lpdf").into()
    } else if let Some(family) = name.strip_suffix("_lupmf") {
        format!("{family}_lpmf").into()
    } else {
        name.into()
    }
}

fn candidates(name: &str) -> &'static [Signature] {
    INDEX
        .functions
        .get(canonical_name(name).as_ref())
        .map_or(&[], Vec::as_slice)
}

/// True for every built-in function name, including `_lupdf`/`_lupmf`
/// forms and the special (higher-order/variadic) functions.
pub fn is_builtin(name: &str) -> bool {
    !candidates(name).is_empty() || is_special(name)
}

/// Higher-order or variadic built-ins whose arguments the checker checks
/// itself (some also have fixed signatures in [`signatures`]).
/// `_lupmf` forms count too (`laplace_marginal_poisson_log_lupmf`).
pub fn is_special(name: &str) -> bool {
    special_entry(name).is_some()
}

fn special_entry(name: &str) -> Option<&'static (&'static str, &'static str)> {
    let name = canonical_name(name);
    special::SPECIAL_FUNCTIONS.iter().find(|(n, _)| *n == name)
}

/// All concrete signatures of `name` (empty if it has none).
pub fn signatures(name: &str) -> Vec<Signature> {
    candidates(name).to_vec()
}

/// Borrowing form of [`signatures`], for callers resolving many calls.
pub fn signatures_ref(name: &str) -> &'static [Signature] {
    candidates(name)
}

/// One-line description for hover and completion.
pub fn doc(name: &str) -> Option<&'static str> {
    if let Some((_, text)) = special_entry(name) {
        return Some(text);
    }
    if !is_builtin(name) {
        return None;
    }
    docs::describe(name)
}

/// Every built-in name, sorted (completion, "did you mean").
pub fn names() -> impl Iterator<Item = &'static str> {
    INDEX.names.iter().copied()
}

/// The distribution family `family` (e.g. `normal`), if it exists. The
/// embedded Laplace likelihoods (`laplace_marginal_poisson_log`, usable
/// with `~`) are families with only an `_lpmf`, which is special.
pub fn distribution(family: &str) -> Option<Distribution> {
    if let Some(dist) = INDEX.families.get(family) {
        return Some(dist.clone());
    }
    let lpmf = format!("{family}_lpmf");
    let (name, _) = special::SPECIAL_FUNCTIONS
        .iter()
        .find(|(n, _)| *n == lpmf)?;
    Some(Distribution {
        family: name.strip_suffix("_lpmf").unwrap_or(name),
        has_lpdf: false,
        has_lpmf: true,
        has_cdf: false,
        has_lcdf: false,
        has_lccdf: false,
        has_rng: false,
    })
}

/// All distribution family names, sorted.
pub fn distribution_families() -> impl Iterator<Item = &'static str> {
    let mut families: Vec<&'static str> = INDEX.families.keys().copied().collect();
    families.sort_unstable();
    families.into_iter()
}

/// Resolves a call of built-in `name` with `args` to the unique best
/// signature.
pub fn resolve(name: &str, args: &[(AdLevel, Type)]) -> Result<Signature, OverloadError> {
    let cands = candidates(name);
    select_overload(cands, args).map(|index| cands[index].clone())
}

/// stanc3's function names for an operator, tried in order:
/// `+` → `add`, unary `-` → `minus`, `/` → `mdivide_right`, `divide`, ...
/// `arity` is 1 for prefix operators, 2 for infix ones. `%/%` has only
/// `int %/% int => int` and no function; `'` is `transpose`.
pub fn operator_functions(op: &str, arity: usize) -> &'static [&'static str] {
    match (op, arity) {
        ("+", 2) => &["add"],
        ("-", 2) => &["subtract"],
        ("*", 2) => &["multiply"],
        ("/", 2) => &["mdivide_right", "divide"],
        ("%", 2) => &["modulus"],
        ("\\", 2) => &["mdivide_left"],
        (".*", 2) => &["elt_multiply"],
        ("./", 2) => &["elt_divide"],
        ("^" | ".^", 2) => &["pow"],
        ("||", 2) => &["logical_or"],
        ("&&", 2) => &["logical_and"],
        ("==", 2) => &["logical_eq"],
        ("!=", 2) => &["logical_neq"],
        ("<", 2) => &["logical_lt"],
        ("<=", 2) => &["logical_lte"],
        (">", 2) => &["logical_gt"],
        (">=", 2) => &["logical_gte"],
        ("+", 1) => &["plus"],
        ("-", 1) => &["minus"],
        ("!", 1) => &["logical_negation"],
        ("'", 1) => &["transpose"],
        _ => &[],
    }
}

/// A signature in Stan syntax, as in stanc3's "Available signatures":
/// `(vector, real, data real) => real`.
pub fn display_signature(sig: &Signature) -> String {
    let mut out = String::from("(");
    for (i, (ad, ty)) in sig.args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if *ad == AdLevel::DataOnly {
            out.push_str("data ");
        }
        let _ = write!(out, "{ty}");
    }
    out.push_str(") => ");
    match &sig.ret {
        Some(ty) => {
            let _ = write!(out, "{ty}");
        }
        None => out.push_str("void"),
    }
    out
}

/// `name` followed by [`display_signature`], for hover.
pub fn display_named_signature(name: &str, sig: &Signature) -> String {
    format!("{name}{}", display_signature(sig))
}

#[cfg(test)]
mod tests;
