//! Conformance of the semantic checker against stanc3's test corpus:
//! every good program checks without errors, every semantic-bad program is
//! rejected with its first error on the line stanc3 reports.
//!
//! Known misses live in `check_exceptions.txt` (one `path  # reason` per
//! line); the test fails if an unlisted case fails or a listed case passes.
//! Files the parser cannot read are the parser's business: they are
//! counted and listed separately, not held against the checker.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use language::{Diagnostic, Kind, LineIndex, compile_front_end};

fn corpus() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    assert!(
        dir.join("stanc3/manifest.json").exists(),
        "test corpus missing: expected it at {} (clone the shared corpus beside the repository)",
        dir.display()
    );
    dir
}

fn exceptions() -> BTreeMap<String, String> {
    let text = include_str!("check_exceptions.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(|l| match l.split_once('#') {
            Some((path, reason)) => (path.trim().to_string(), reason.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

enum Outcome {
    Pass,
    Fail(String),
    ParserProblem(String),
}

fn first_error(diags: &[Diagnostic]) -> Option<&Diagnostic> {
    diags
        .iter()
        .filter(|d| d.is_error())
        .min_by_key(|d| d.primary.span.start)
}

fn describe(source: &str, d: &Diagnostic) -> String {
    let (line, col) = LineIndex::new(source).line_col(source, d.primary.span.start as usize);
    format!(
        "{}:{} {} {}",
        line,
        col,
        d.code,
        d.message.lines().next().unwrap_or("")
    )
}

fn check_good(path: &Path) -> Outcome {
    let source = std::fs::read_to_string(path).expect("readable corpus file");
    let diagnostics = if path.extension().is_some_and(|e| e == "stanfunctions") {
        // A standalone functions file: no program blocks.
        let (program, mut diags) = language::syntax::parse_functions_only(&source);
        if !diags.iter().any(Diagnostic::is_error) {
            diags.extend(language::check::check_program(&program).1);
        }
        diags
    } else {
        compile_front_end(&source).diagnostics
    };
    let Some(d) = first_error(&diagnostics) else {
        return Outcome::Pass;
    };
    if d.kind == Kind::Syntax {
        Outcome::ParserProblem(describe(&source, d))
    } else {
        Outcome::Fail(describe(&source, d))
    }
}

fn check_bad(path: &Path, line: usize) -> Outcome {
    let source = std::fs::read_to_string(path).expect("readable corpus file");
    let result = compile_front_end(&source);
    let Some(d) = first_error(&result.diagnostics) else {
        return Outcome::Fail("accepted, expected a semantic error".into());
    };
    if d.kind == Kind::Syntax {
        return Outcome::ParserProblem(describe(&source, d));
    }
    let (found_line, _) = LineIndex::new(&source).line_col(&source, d.primary.span.start as usize);
    if found_line == line {
        Outcome::Pass
    } else {
        Outcome::Fail(format!(
            "expected line {line}, got {}",
            describe(&source, d)
        ))
    }
}

#[test]
fn stanc3_and_posteriordb_conformance() {
    let corpus = corpus();
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("stanc3/manifest.json")).expect("manifest"),
    )
    .expect("manifest is JSON");
    let exceptions = exceptions();
    let mut seen = BTreeSet::new();
    let mut unexpected = Vec::new();
    let mut parser_problems = Vec::new();
    let mut tally = |key: String, outcome: Outcome, passed: &mut usize, total: &mut usize| {
        *total += 1;
        seen.insert(key.clone());
        match (outcome, exceptions.contains_key(&key)) {
            (Outcome::Pass, false) => *passed += 1,
            (Outcome::Pass, true) => {
                *passed += 1;
                unexpected.push(format!("{key}: listed as exception but now passes"));
            }
            (Outcome::Fail(why), false) => unexpected.push(format!("{key}: {why}")),
            (Outcome::Fail(_), true) => {}
            (Outcome::ParserProblem(why), _) => {
                *total -= 1;
                parser_problems.push(format!("{key}: {why}"));
            }
        }
    };

    let (mut good_ok, mut good_total) = (0, 0);
    for entry in manifest["good"].as_array().expect("good list") {
        let file = entry["file"].as_str().expect("file");
        let outcome = check_good(&corpus.join("stanc3/good").join(file));
        tally(
            format!("good/{file}"),
            outcome,
            &mut good_ok,
            &mut good_total,
        );
    }
    let mut pdb: Vec<PathBuf> = std::fs::read_dir(corpus.join("posteriordb-models"))
        .expect("posteriordb-models")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "stan"))
        .collect();
    pdb.sort();
    let (mut pdb_ok, mut pdb_total) = (0, 0);
    for path in pdb {
        let key = format!(
            "posteriordb-models/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        tally(key, check_good(&path), &mut pdb_ok, &mut pdb_total);
    }
    let (mut bad_ok, mut bad_total) = (0, 0);
    for entry in manifest["bad"].as_array().expect("bad list") {
        if entry["kind"] != "semantic" {
            continue;
        }
        let file = entry["file"].as_str().expect("file");
        let line = entry["line"].as_u64().expect("line") as usize;
        let outcome = check_bad(&corpus.join("stanc3/bad").join(file), line);
        tally(format!("bad/{file}"), outcome, &mut bad_ok, &mut bad_total);
    }

    println!("good accepted        {good_ok}/{good_total}");
    println!("posteriordb accepted {pdb_ok}/{pdb_total}");
    println!("semantic-bad matched {bad_ok}/{bad_total}");
    println!("skipped (parser problems): {}", parser_problems.len());
    for p in &parser_problems {
        println!("  parser: {p}");
    }
    let stale: Vec<&String> = exceptions.keys().filter(|k| !seen.contains(*k)).collect();
    assert!(
        stale.is_empty(),
        "exceptions naming no corpus case: {stale:?}"
    );
    assert!(
        unexpected.is_empty(),
        "{} unexpected results:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    let rate = |ok: usize, total: usize| ok as f64 / total.max(1) as f64;
    assert!(
        rate(good_ok + pdb_ok, good_total + pdb_total) >= 0.98,
        "good acceptance below 98%"
    );
    assert!(
        rate(bad_ok, bad_total) >= 0.95,
        "semantic-bad matching below 95%"
    );
}

/// The LSP checks programs that still have syntax errors (the parser's
/// partial tree with `Error` nodes): checking any corpus file, however
/// broken, must not panic.
#[test]
fn checking_partial_programs_never_panics() {
    let corpus = corpus();
    let mut files = Vec::new();
    let mut dirs = vec![corpus.join("stanc3/bad"), corpus.join("stanc3/good")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("corpus dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "stan") {
                files.push(path);
            }
        }
    }
    assert!(
        files.len() > 1000,
        "found only {} corpus files",
        files.len()
    );
    let mut with_syntax_errors = 0;
    for path in &files {
        let source = std::fs::read_to_string(path).expect("readable corpus file");
        let (program, syntax) = language::syntax::parse(&source);
        if syntax.iter().any(Diagnostic::is_error) {
            with_syntax_errors += 1;
        }
        let result = std::panic::catch_unwind(|| language::check::check_program(&program));
        assert!(result.is_ok(), "checker panicked on {}", path.display());
    }
    assert!(
        with_syntax_errors > 250,
        "expected the syntax-bad files to be exercised"
    );
}
