//! The built-in signature table: every Stan math library function and
//! distribution with its signatures, shared by the checker, hover,
//! completion, the model IR and the backends.
//!
//! The table mirrors stanc3's (`src/stan_math_signatures/Generate.ml`):
//! it is written compactly as argument classes and generators
//! (`table/generators.rs`), distribution families (`table/distributions.rs`)
//! and a text file of fixed signatures (`table/fixed.sigs`), registered
//! once on first use and expanded per name on first lookup. A few
//! signatures newer than the Generate.ml revision followed here are taken
//! from what the stanc3 corpus programs exercise (yule_simon, the wiener
//! CDFs and precision arguments, `student_t_qf`, vectorised `softmax`,
//! `(container, real, real)` bound transforms, the variadic 1-D
//! integrators); each is marked where it is defined.
//!
//! Overload resolution follows stanc3 (`SignatureMismatch`): the unique
//! candidate with the fewest promotions wins ([`select_overload`]).
//! Names ending in `_lupdf`/`_lupmf` share the signatures of their
//! `_lpdf`/`_lpmf` counterparts. Operators are available under stanc3's
//! names (`add`, `subtract`, `multiply`, `elt_multiply`, `logical_eq`, ...;
//! see [`operator_functions`], [`resolve_compound_assignment`]).
//! Higher-order/variadic functions are [`is_special`]; their fixed parts
//! are in [`variadic`], [`laplace_likelihood_args`] and friends.

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
pub use special::{
    VariadicSignature, laplace_likelihood_args, laplace_tolerance_args, reduce_sum_slice_types,
    variadic,
};

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
    table: table::Table,
    /// Every callable name: table names, `_lupdf`/`_lupmf` aliases and
    /// special functions, sorted.
    names: Vec<&'static str>,
    families: HashMap<&'static str, Distribution>,
}

static INDEX: LazyLock<Index> = LazyLock::new(build_index);

fn build_index() -> Index {
    let table = table::build();
    let mut names: Vec<String> = table.names().map(str::to_owned).collect();
    for name in table.names() {
        if let Some(family) = name.strip_suffix("_lpdf") {
            names.push(format!("{family}_lupdf"));
        } else if let Some(family) = name.strip_suffix("_lpmf") {
            names.push(format!("{family}_lupmf"));
        }
    }
    for (name, _) in special::SPECIAL_FUNCTIONS {
        names.push((*name).to_owned());
        if let Some(stem) = name.strip_suffix("_lpmf") {
            names.push(format!("{stem}_lupmf"));
        }
    }
    names.sort();
    names.dedup();
    // Leaked once: the index lives for the whole program.
    let names: Vec<&'static str> = names
        .into_iter()
        .map(|n| &*Box::leak(n.into_boxed_str()))
        .collect();
    let has = |name: String| table.contains(&name);
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
        table,
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
    INDEX.table.signatures(canonical_name(name).as_ref())
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

/// One-line description for hover and completion (also for distribution
/// families, as written after `~`).
pub fn doc(name: &str) -> Option<&'static str> {
    if let Some((_, text)) = special_entry(name) {
        return Some(text);
    }
    if !is_builtin(name) {
        // A family named after `~`, e.g. `normal`.
        let dist = distribution(name)?;
        let suffix = if dist.has_lpmf { "_lpmf" } else { "_lpdf" };
        return docs::describe_family(name, suffix);
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
    // Fast path: an exact match is the unique best, because no two
    // signatures of a built-in share argument types (tested) and only
    // `Error` or function types can match at zero cost without being equal.
    if args.iter().all(|(_, ty)| is_plain(ty))
        && let Some(sig) = cands.iter().find(|sig| {
            sig.args.len() == args.len()
                && sig
                    .args
                    .iter()
                    .zip(args)
                    .all(|((param_ad, param_ty), (arg_ad, arg_ty))| {
                        param_ty == arg_ty && ad_level_accepts(*param_ad, *arg_ad)
                    })
        })
    {
        return Ok(sig.clone());
    }
    select_overload(cands, args).map(|index| cands[index].clone())
}

/// No `Error` or function type anywhere inside.
fn is_plain(ty: &Type) -> bool {
    match ty {
        Type::Error | Type::Function(_) => false,
        Type::Array(inner) => is_plain(inner),
        Type::Tuple(elems) => elems.iter().all(is_plain),
        _ => true,
    }
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

/// Signatures `(lhs, rhs) => void` accepted by compound assignment `lhs op= rhs`
/// for `op` in `+ - * / .* ./` (stanc3's
/// `make_assignmentoperator_stan_math_signatures`): the operator's
/// signatures whose result has the left-hand side's type, where a real
/// right-hand side also admits an int; elementwise operators do not apply
/// to scalars. Resolve with [`select_overload`].
pub fn compound_assignment_signatures(op: &str) -> Vec<Signature> {
    let functions: &[&str] = match op {
        "/" => &["divide"],
        "+" | "-" | "*" | ".*" | "./" => operator_functions(op, 2),
        _ => &[],
    };
    let elementwise = matches!(op, ".*" | "./");
    let mut out = Vec::new();
    for name in functions {
        for sig in candidates(name) {
            let [(lhs_ad, lhs), (rhs_ad, rhs)] = sig.args.as_slice() else {
                continue;
            };
            if sig.ret.as_ref() != Some(lhs) || (elementwise && lhs.is_scalar()) {
                continue;
            }
            let mut add = |rhs: Type| {
                out.push(Signature {
                    args: vec![(*lhs_ad, lhs.clone()), (*rhs_ad, rhs)],
                    ret: None,
                })
            };
            if *rhs == Type::Real {
                add(Type::Int);
            }
            add(rhs.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|sig| seen.insert(sig.args.clone()));
    out
}

/// Resolves `lhs op= rhs`. The left-hand side is assigned to, so it is
/// never promoted: only signatures whose first argument is exactly the
/// left-hand side's type are considered.
pub fn resolve_compound_assignment(
    op: &str,
    lhs: &(AdLevel, Type),
    rhs: &(AdLevel, Type),
) -> Result<Signature, OverloadError> {
    let cands: Vec<Signature> = compound_assignment_signatures(op)
        .into_iter()
        .filter(|sig| lhs.1.is_error() || sig.args[0].1 == lhs.1)
        .collect();
    let index = select_overload(&cands, &[lhs.clone(), rhs.clone()])?;
    Ok(cands[index].clone())
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
