//! One-line descriptions of the built-ins, for hover and completion.
//! Plain functions are described in `docs.txt`; distribution functions and
//! transforms get descriptions built from their family and suffix.

use std::collections::HashMap;
use std::sync::LazyLock;

static DESCRIPTIONS: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
    include_str!("docs.txt")
        .lines()
        .filter_map(|line| line.split_once(": "))
        .map(|(name, text)| (name.trim(), text.trim()))
        .collect()
});

/// Descriptions built on demand, leaked once per name so callers get a
/// `&'static str` like the written ones.
static GENERATED: LazyLock<std::sync::Mutex<HashMap<String, &'static str>>> =
    LazyLock::new(Default::default);

pub(super) fn describe(name: &str) -> Option<&'static str> {
    if let Some(text) = DESCRIPTIONS.get(name) {
        return Some(text);
    }
    let text = generated_description(name)?;
    Some(cached(name.to_owned(), text))
}

/// `y ~ family(...)`: which function the statement uses.
pub(super) fn describe_family(family: &str, suffix: &str) -> Option<&'static str> {
    let text = format!(
        "The {} distribution: `y ~ {family}(...)` adds {family}{suffix}(y | ...) to the target, dropping constants.",
        family.replace('_', " ")
    );
    Some(cached(format!("~{family}"), text))
}

fn cached(key: String, text: String) -> &'static str {
    let mut cache = GENERATED.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(key)
        .or_insert_with(|| Box::leak(text.into_boxed_str()))
}

fn generated_description(name: &str) -> Option<String> {
    const SUFFIXES: &[(&str, &str)] = &[
        (
            "_lupdf",
            "Log probability density of the {} distribution, dropping constant terms.",
        ),
        (
            "_lupmf",
            "Log probability mass of the {} distribution, dropping constant terms.",
        ),
        ("_lpdf", "Log probability density of the {} distribution."),
        ("_lpmf", "Log probability mass of the {} distribution."),
        (
            "_lcdf",
            "Log cumulative distribution function of the {} distribution.",
        ),
        (
            "_lccdf",
            "Log complementary cumulative distribution function of the {} distribution.",
        ),
        (
            "_cdf",
            "Cumulative distribution function of the {} distribution.",
        ),
        (
            "_rng",
            "Draw a pseudo-random variate from the {} distribution.",
        ),
        ("_unconstrain", "Map a {} value to the unconstrained space."),
        ("_constrain", "Map an unconstrained value to a {} value."),
        (
            "_jacobian",
            "Map an unconstrained value to a {} value, incrementing the Jacobian adjustment.",
        ),
    ];
    SUFFIXES.iter().find_map(|(suffix, template)| {
        let stem = name.strip_suffix(suffix)?;
        Some(template.replace("{}", &stem.replace('_', " ")))
    })
}
