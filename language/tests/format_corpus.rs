//! The formatter over the whole corpus (stanc3 good and bad programs,
//! posteriordb-models, posteriordb): for every file that parses, the
//! formatted text re-parses to the same tree (compared two independent
//! ways: span-erased `Debug` and the `--emit ast` printer), formatting it
//! again changes nothing, and every comment's text is still there, in
//! order. Files with syntax errors must be refused with diagnostics.
//!
//! The default run takes every 5th file (a fixed slice, fast in debug);
//! BAT_FULL_SWEEP=1 runs all of them.

use language::format::{SourceKind, canonical_comment, erase_spans, format_source};
use language::syntax::{self, print_ast};
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    assert!(
        dir.join("stanc3/good").is_dir(),
        "test corpus not found at {}",
        dir.display()
    );
    dir
}

fn stan_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            stan_files(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "stan" || e == "stanfunctions")
        {
            out.push(path);
        }
    }
}

fn kind_of(path: &Path) -> SourceKind {
    if path.extension().is_some_and(|e| e == "stanfunctions") {
        SourceKind::Functions
    } else {
        SourceKind::Program
    }
}

fn parse(source: &str, kind: SourceKind) -> (syntax::ast::Program, bool) {
    let (program, diagnostics) = match kind {
        SourceKind::Program => syntax::parse(source),
        SourceKind::Functions => syntax::parse_functions_only(source),
    };
    let clean = !diagnostics
        .iter()
        .any(|d| d.is_error() && d.kind == language::Kind::Syntax);
    (program, clean)
}

/// What is wrong with formatting `source`, if anything.
fn check_file(source: &str, kind: SourceKind) -> Result<bool, String> {
    let (original, clean) = parse(source, kind);
    let formatted = match (format_source(source, kind), clean) {
        (Ok(text), true) => text,
        (Err(_), false) => return Ok(false),
        (Ok(_), false) => return Err("formatted a program with syntax errors".into()),
        (Err(d), true) => return Err(format!("refused a clean program: {}", d[0].message)),
    };
    let (again, clean_again) = parse(&formatted, kind);
    if !clean_again {
        return Err(format!("output does not parse:\n{formatted}"));
    }
    if erase_spans(&again) != erase_spans(&original) {
        return Err(format!("tree changed (span-erased Debug):\n{formatted}"));
    }
    if print_ast(&again) != print_ast(&original) {
        return Err(format!("tree changed (AST printer):\n{formatted}"));
    }
    match format_source(&formatted, kind) {
        Ok(twice) if twice == formatted => {}
        Ok(twice) => {
            return Err(format!(
                "not idempotent:\n--- once\n{formatted}\n--- twice\n{twice}"
            ));
        }
        Err(d) => return Err(format!("refused its own output: {}", d[0].message)),
    }
    let mut at = 0;
    for comment in &original.comments {
        let text = canonical_comment(&comment.text);
        match formatted[at..].find(text) {
            Some(i) => at += i + text.len(),
            None => return Err(format!("comment lost or reordered: {:?}", comment.text)),
        }
    }
    if again.comments.len() != original.comments.len() {
        return Err("number of comments changed".into());
    }
    Ok(true)
}

#[test]
fn formatting_the_corpus_keeps_trees_and_comments_and_is_idempotent() {
    let full = std::env::var("BAT_FULL_SWEEP").is_ok_and(|v| v == "1");
    let mut files = Vec::new();
    stan_files(&corpus_dir(), &mut files);
    assert!(files.len() > 1000, "corpus has only {} files", files.len());
    let step = if full { 1 } else { 5 };
    let (mut formatted, mut refused, mut failures) = (0, 0, Vec::new());
    for path in files.iter().step_by(step) {
        let Ok(source) = std::fs::read_to_string(path) else {
            continue; // non-UTF-8 test inputs are the lexer's business
        };
        match check_file(&source, kind_of(path)) {
            Ok(true) => formatted += 1,
            Ok(false) => refused += 1,
            Err(why) => failures.push(format!("{}: {why}", path.display())),
        }
    }
    eprintln!("formatted {formatted}, refused (syntax errors) {refused}");
    assert!(formatted > 180, "only {formatted} files formatted");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
