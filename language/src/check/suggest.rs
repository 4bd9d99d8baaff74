//! "Did you mean" suggestions for misspelled names.

/// The candidate closest to `name` by edit distance, if close enough to be
/// a plausible typo (at most a third of the name's length, at least 1).
pub fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .filter(|c| *c != name)
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)))
        .map(|(_, c)| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn finds_close_names_only() {
        let names = ["normal", "lognormal", "poisson", "mu"];
        assert_eq!(nearest("nromal", names.into_iter()), Some("normal".into()));
        assert_eq!(nearest("poison", names.into_iter()), Some("poisson".into()));
        assert_eq!(nearest("zzzzzz", names.into_iter()), None);
    }
}
