//! The stanc3 test programs in `corpus/stanc3/good/function-signatures`
//! exercise the Stan Math signatures; stanc3 accepts every call in them.
//! (1) every called name must be a built-in; (2) every call whose
//! arguments are plain variables or literals must resolve to a signature
//! whose return type fits the assigned variable.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use language::builtins::{self, OverloadError};
use language::types::{AdLevel, Type};

/// The shared corpus: `$BAT_CORPUS`, else `shared/corpus` beside the
/// repository (as in CI), else the workspace's `/work/shared/corpus`.
fn corpus_root() -> PathBuf {
    if let Ok(dir) = std::env::var("BAT_CORPUS") {
        return PathBuf::from(dir);
    }
    let beside_repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    if beside_repo.is_dir() {
        return beside_repo;
    }
    PathBuf::from("/work/shared/corpus")
}

fn signature_corpus() -> PathBuf {
    corpus_root().join("stanc3/good/function-signatures")
}

fn stan_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            stan_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "stan") {
            out.push(path);
        }
    }
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    stan_files(&signature_corpus(), &mut files);
    files.sort();
    files
}

fn strip_comments(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

const NOT_FUNCTIONS: &[&str] = &[
    "if",
    "for",
    "while",
    "print",
    "reject",
    "fatal_error",
    "tuple",
    "array",
    "return",
    "target",
    "vector",
    "row_vector",
    "matrix",
    "complex_vector",
    "complex_row_vector",
    "complex_matrix",
    "T",
    "in",
    "profile",
];

/// (name, whether it follows `~`) for every `identifier (` in the text,
/// excluding user-defined functions and keywords.
fn called_names(src: &str) -> Vec<(String, bool)> {
    let bytes = src.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut calls = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_')
            && (i == 0 || !is_ident(bytes[i - 1]))
        {
            let start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            let name = &src[start..i];
            let next = src[i..].trim_start();
            if next.starts_with('(') && !NOT_FUNCTIONS.contains(&name) {
                let before = src[..start].trim_end();
                let after_tilde = before.ends_with('~');
                // A definition `ret name(` in the functions block.
                let is_definition = before
                    .rsplit(|c: char| c.is_whitespace())
                    .next()
                    .is_some_and(|w| {
                        matches!(
                            w,
                            "void"
                                | "real"
                                | "int"
                                | "vector"
                                | "matrix"
                                | "row_vector"
                                | "complex"
                        ) || w.ends_with(']')
                    });
                if !is_definition {
                    calls.push((name.to_owned(), after_tilde));
                }
            }
        } else {
            i += 1;
        }
    }
    calls
}

fn user_function_names(src: &str) -> Vec<String> {
    let Some(start) = src.find("functions") else {
        return Vec::new();
    };
    let after = &src[start..];
    let end = after
        .find("\ndata")
        .or(after.find("\ntransformed data"))
        .unwrap_or(after.len());
    let block = &after[..end];
    let mut names = Vec::new();
    for line in block.lines() {
        // `ret name(` where ret ends in a type word, `]` or `)` (tuples).
        for (paren, _) in line.match_indices('(') {
            let head = line[..paren].trim_end();
            let name_start = head
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            let name = &head[name_start..];
            let before = head[..name_start].trim_end();
            let after_type =
                before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == ']' || c == ')');
            if !name.is_empty()
                && name != "tuple"
                && head[..name_start].ends_with(' ')
                && after_type
                && !before.contains('=')
                && !before.ends_with("return")
            {
                names.push(name.to_owned());
            }
        }
    }
    // `foo_lupmf(...)` calls the user's `foo_lpmf`.
    let aliases: Vec<String> = names
        .iter()
        .filter_map(|n| {
            n.strip_suffix("_lpdf")
                .map(|f| format!("{f}_lupdf"))
                .or_else(|| n.strip_suffix("_lpmf").map(|f| format!("{f}_lupmf")))
        })
        .collect();
    names.extend(aliases);
    names
}

#[test]
fn every_called_name_is_a_builtin() {
    let files = corpus_files();
    assert!(files.len() > 300, "corpus missing: {} files", files.len());
    let mut missing: HashMap<String, PathBuf> = HashMap::new();
    let mut checked = 0;
    for file in &files {
        let src = strip_comments(&std::fs::read_to_string(file).unwrap());
        let user = user_function_names(&src);
        for (name, after_tilde) in called_names(&src) {
            if user.contains(&name) {
                continue;
            }
            checked += 1;
            let known = if after_tilde {
                builtins::distribution(&name).is_some()
            } else {
                builtins::is_builtin(&name)
            };
            if !known {
                missing.entry(name).or_insert_with(|| file.clone());
            }
        }
    }
    let mut missing: Vec<_> = missing.into_iter().collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "{} names unknown (of {checked} calls): {missing:#?}",
        missing.len()
    );
    assert!(checked > 5000, "only {checked} calls scanned");
}

/// Declared variables: name → (type, ad level), from one-line declarations.
fn declarations(src: &str) -> HashMap<String, (Type, AdLevel)> {
    let mut vars = HashMap::new();
    let mut ad = AdLevel::DataOnly;
    for line in src.lines() {
        let trimmed = line.trim();
        let header = trimmed.trim_end_matches('{').trim();
        match header {
            "data" | "transformed data" | "generated quantities" | "functions" => {
                ad = AdLevel::DataOnly;
                continue;
            }
            "parameters" | "transformed parameters" | "model" => {
                ad = AdLevel::AutoDiff;
                continue;
            }
            _ => {}
        }
        let Some(decl) = trimmed.strip_suffix(';') else {
            continue;
        };
        let decl = decl.split('=').next().unwrap().trim();
        if decl.contains(')') && !decl.contains('(') {
            continue; // the tail of a multi-line tuple declaration
        }
        let Some((ty_text, name)) = decl.rsplit_once(' ') else {
            continue;
        };
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(ty) = parse_declared_type(ty_text.trim()) {
            let level = if ty.array_dims().1.is_int() {
                AdLevel::DataOnly
            } else {
                ad
            };
            vars.insert(name.to_owned(), (ty, level));
        }
    }
    vars
}

/// `array[N, M] vector[K]`, `real<lower=0>`, `cov_matrix[K]` → unsized type.
fn parse_declared_type(text: &str) -> Option<Type> {
    let (dims, rest) = match text.strip_prefix("array[") {
        Some(after) => {
            let close = matching_bracket(after)?;
            (
                after[..close].matches(',').count() + 1,
                after[close + 1..].trim(),
            )
        }
        None => (0, text),
    };
    let base_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let base = match &rest[..base_end] {
        "int" => Type::Int,
        "real" => Type::Real,
        "complex" => Type::Complex,
        "vector" | "simplex" | "unit_vector" | "ordered" | "positive_ordered"
        | "sum_to_zero_vector" => Type::Vector,
        "row_vector" => Type::RowVector,
        "matrix"
        | "cov_matrix"
        | "corr_matrix"
        | "cholesky_factor_cov"
        | "cholesky_factor_corr"
        | "column_stochastic_matrix"
        | "row_stochastic_matrix"
        | "sum_to_zero_matrix" => Type::Matrix,
        "complex_vector" => Type::ComplexVector,
        "complex_row_vector" => Type::ComplexRowVector,
        "complex_matrix" => Type::ComplexMatrix,
        _ => return None,
    };
    Some(Type::array_of(base, dims))
}

fn matching_bracket(text: &str) -> Option<usize> {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn literal_or_variable(
    arg: &str,
    vars: &HashMap<String, (Type, AdLevel)>,
) -> Option<(AdLevel, Type)> {
    let arg = arg.trim();
    if !arg.is_empty() && arg.chars().all(|c| c.is_ascii_digit()) {
        return Some((AdLevel::DataOnly, Type::Int));
    }
    if arg.parse::<f64>().is_ok() {
        return Some((AdLevel::DataOnly, Type::Real));
    }
    vars.get(arg).map(|(ty, ad)| (*ad, ty.clone()))
}

/// Statements `lhs = f(args);`, `target += f(args);`, `y ~ f(args);`.
struct SimpleCall {
    function: String,
    args: Vec<(AdLevel, Type)>,
    /// The type the result is assigned to, if any.
    target: Option<Type>,
}

fn simple_calls(src: &str) -> (Vec<SimpleCall>, usize) {
    let vars = declarations(src);
    let mut calls = Vec::new();
    let mut skipped = 0;
    for line in src.lines() {
        let Some(stmt) = line.trim().strip_suffix(';') else {
            continue;
        };
        let (lhs, op, rhs) = if let Some((l, r)) = stmt.split_once("+=") {
            (l.trim(), "+=", r.trim())
        } else if let Some((l, r)) = stmt.split_once('~') {
            (l.trim(), "~", r.trim())
        } else if let Some((l, r)) = stmt.split_once('=') {
            (l.trim(), "=", r.trim())
        } else {
            continue;
        };
        let Some(open) = rhs.find('(') else { continue };
        if !rhs.ends_with(')') {
            // Truncation or a compound expression.
            skipped += 1;
            continue;
        }
        let name = rhs[..open].trim();
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || builtins::is_special(name)
        {
            continue;
        }
        let inner = &rhs[open + 1..rhs.len() - 1];
        let mut arg_texts: Vec<&str> = if inner.trim().is_empty() {
            Vec::new()
        } else {
            inner.split([',', '|']).collect()
        };
        let mut function = name.to_owned();
        let target = match op {
            "=" => vars.get(lhs).map(|(t, _)| t.clone()),
            "+=" => Some(Type::Real),
            _ => {
                arg_texts.insert(0, lhs);
                let dist = builtins::distribution(name);
                let suffix = if dist.is_some_and(|d| d.has_lpmf) {
                    "_lpmf"
                } else {
                    "_lpdf"
                };
                function = format!("{name}{suffix}");
                None
            }
        };
        if op == "=" && target.is_none() {
            skipped += 1;
            continue;
        }
        let args: Option<Vec<_>> = arg_texts
            .iter()
            .map(|a| literal_or_variable(a, &vars))
            .collect();
        match args {
            Some(args) => calls.push(SimpleCall {
                function,
                args,
                target,
            }),
            None => skipped += 1,
        }
    }
    (calls, skipped)
}

#[test]
fn every_simple_call_resolves_with_a_fitting_return_type() {
    let mut failures = Vec::new();
    let mut resolved = 0;
    let mut skipped_total = 0;
    for file in corpus_files() {
        let src = strip_comments(&std::fs::read_to_string(&file).unwrap());
        if src.contains("functions {") || src.contains("functions{") {
            continue; // user functions could shadow or overload
        }
        let (calls, skipped) = simple_calls(&src);
        skipped_total += skipped;
        for call in calls {
            let shown: Vec<String> = call
                .args
                .iter()
                .map(|(ad, t)| {
                    if *ad == AdLevel::DataOnly {
                        format!("data {t}")
                    } else {
                        t.to_string()
                    }
                })
                .collect();
            let where_ = format!(
                "{}: {}({})",
                file.strip_prefix(signature_corpus()).unwrap().display(),
                call.function,
                shown.join(", ")
            );
            match builtins::resolve(&call.function, &call.args) {
                Ok(sig) => {
                    resolved += 1;
                    if let (Some(target), Some(ret)) = (&call.target, &sig.ret)
                        && builtins::promotion_cost(ret, target).is_none()
                    {
                        failures.push(format!("{where_} returns {ret}, assigned to {target}"));
                    }
                }
                Err(OverloadError::NoMatch) => failures.push(format!("{where_}: no match")),
                Err(OverloadError::Ambiguous(c)) => {
                    failures.push(format!("{where_}: ambiguous among {}", c.len()))
                }
            }
        }
    }
    let shown: Vec<_> = failures.iter().take(60).collect();
    assert!(
        failures.is_empty(),
        "{} of {} calls failed (first 60): {shown:#?}",
        failures.len(),
        failures.len() + resolved
    );
    eprintln!("resolved {resolved} calls, skipped {skipped_total}");
    assert!(resolved > 20_000, "only {resolved} calls resolved");
}

/// All accepted stanc3 programs and posteriordb models: every called name
/// that is not a user-defined function is a built-in.
#[test]
fn every_name_called_by_accepted_programs_is_known() {
    let mut files = Vec::new();
    stan_files(&corpus_root().join("stanc3/good"), &mut files);
    stan_files(&corpus_root().join("posteriordb-models"), &mut files);
    assert!(files.len() > 500, "corpus missing: {} files", files.len());
    let mut missing: HashMap<String, PathBuf> = HashMap::new();
    for file in &files {
        let src = strip_comments(&std::fs::read_to_string(file).unwrap());
        let user = user_function_names(&src);
        for (name, after_tilde) in called_names(&src) {
            let lp_name = |suffix: &str| format!("{name}{suffix}");
            let user_defined = user.contains(&name)
                || (after_tilde
                    && ["_lpdf", "_lpmf", "_log"]
                        .iter()
                        .any(|s| user.contains(&lp_name(s))));
            let known = if after_tilde {
                builtins::distribution(&name).is_some()
            } else {
                builtins::is_builtin(&name)
            };
            if !user_defined && !known {
                missing.entry(name).or_insert_with(|| file.clone());
            }
        }
    }
    let mut missing: Vec<_> = missing.into_iter().collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "{} names unknown: {missing:#?}",
        missing.len()
    );
}
