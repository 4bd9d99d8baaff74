//! Conformance of the parser against stanc3's test programs and posteriordb.
//!
//! Truth: `corpus/stanc3/manifest.json` (stanc3's own verdicts). Known
//! mismatches are listed, each with a reason, in `parse_exceptions.txt`; the
//! test fails on an unlisted mismatch and on a listed case that now passes.

use language::diagnostic::{Diagnostic, Kind};
use language::span::LineIndex;
use language::syntax;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    assert!(
        dir.join("stanc3/manifest.json").is_file(),
        "test corpus not found at {} (the repository must sit beside shared/corpus)",
        dir.display()
    );
    dir
}

fn parse_file(path: &Path) -> (String, Vec<Diagnostic>) {
    let source = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let is_functions_file = path.extension().is_some_and(|e| e == "stanfunctions");
    let (_, diagnostics) = if is_functions_file {
        syntax::parse_functions_only(&source)
    } else {
        syntax::parse(&source)
    };
    (source, diagnostics)
}

fn first_syntax_error(diagnostics: &[Diagnostic]) -> Option<&Diagnostic> {
    diagnostics
        .iter()
        .filter(|d| d.is_error() && d.kind == Kind::Syntax)
        .min_by_key(|d| d.primary.span.start)
}

fn describe(source: &str, d: &Diagnostic) -> String {
    let (line, col) = LineIndex::new(source).line_col(source, d.primary.span.start as usize);
    format!("{line}:{col} {} {}", d.code, d.message)
}

/// `name -> reason` from parse_exceptions.txt (`# comment` lines ignored).
fn exceptions() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parse_exceptions.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((name, reason)) => (name.to_string(), reason.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    total: usize,
    ok: usize,
    /// `case -> what happened`
    failures: BTreeMap<String, String>,
}

impl Tally {
    fn record(&mut self, case: String, failure: Option<String>) {
        self.total += 1;
        match failure {
            None => self.ok += 1,
            Some(why) => {
                self.failures.insert(case, why);
            }
        }
    }

    fn rate(&self) -> f64 {
        self.ok as f64 / self.total.max(1) as f64
    }
}

#[test]
fn corpus_conformance() {
    let corpus = corpus_dir();
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("stanc3/manifest.json")).unwrap(),
    )
    .unwrap();

    let mut good = Tally::default();
    for entry in manifest["good"].as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        let (source, diagnostics) = parse_file(&corpus.join("stanc3/good").join(file));
        let failure = first_syntax_error(&diagnostics).map(|d| describe(&source, d));
        good.record(format!("good/{file}"), failure);
    }

    let mut posteriordb = Tally::default();
    let mut models: Vec<_> = std::fs::read_dir(corpus.join("posteriordb-models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "stan"))
        .collect();
    models.sort();
    for path in models {
        let (source, diagnostics) = parse_file(&path);
        let failure = first_syntax_error(&diagnostics).map(|d| describe(&source, d));
        let name = path.file_name().unwrap().to_string_lossy();
        posteriordb.record(format!("posteriordb/{name}"), failure);
    }

    let mut syntax_bad = Tally::default();
    // Informational: stanc3 columns are 0-based, ours 1-based.
    let mut column_matches = 0usize;
    let mut semantic_bad = Tally::default();
    for entry in manifest["bad"].as_array().unwrap() {
        let file = entry["file"].as_str().unwrap();
        let line = entry["line"].as_u64().unwrap() as usize;
        let col = entry["col"].as_u64().unwrap() as usize;
        let (source, diagnostics) = parse_file(&corpus.join("stanc3/bad").join(file));
        let first = first_syntax_error(&diagnostics);
        let case = format!("bad/{file}");
        match entry["kind"].as_str().unwrap() {
            "syntax" => {
                let failure = match first {
                    None => Some(format!("no syntax error (stanc3: line {line})")),
                    Some(d) => {
                        let (got, got_col) = LineIndex::new(&source)
                            .line_col(&source, d.primary.span.start as usize);
                        if got == line && got_col == col + 1 {
                            column_matches += 1;
                        } else if std::env::var_os("PARSE_CORPUS_VERBOSE").is_some() {
                            eprintln!(
                                "column differs: {case} stanc3 {line}:{} got {got}:{got_col}",
                                col + 1
                            );
                        }
                        (got != line)
                            .then(|| format!("stanc3 line {line}, got {}", describe(&source, d)))
                    }
                };
                syntax_bad.record(case, failure);
            }
            _ => {
                let failure = first.map(|d| describe(&source, d));
                semantic_bad.record(case, failure);
            }
        }
    }

    let report = [
        ("good parse", &good),
        ("posteriordb parse", &posteriordb),
        ("syntax-bad matched", &syntax_bad),
        ("semantic-bad parse", &semantic_bad),
    ];
    for (name, tally) in report {
        eprintln!(
            "{name} {}/{} ({:.1}%)",
            tally.ok,
            tally.total,
            100.0 * tally.rate()
        );
    }

    eprintln!(
        "syntax-bad line and column matched {column_matches}/{} (informational)",
        syntax_bad.total
    );

    let listed = exceptions();
    let mut problems = Vec::new();
    for (_, tally) in report {
        for (case, why) in &tally.failures {
            if !listed.contains_key(case) {
                problems.push(format!("unlisted mismatch {case}: {why}"));
            }
        }
    }
    for case in listed.keys() {
        let failing = report.iter().any(|(_, t)| t.failures.contains_key(case));
        if !failing {
            problems.push(format!("listed exception now passes (remove it): {case}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    assert!(good.rate() >= 0.98, "good parse rate below 98%");
    assert!(
        posteriordb.rate() >= 0.98,
        "posteriordb parse rate below 98%"
    );
    assert!(syntax_bad.rate() >= 0.95, "syntax-bad line match below 95%");
    assert!(
        semantic_bad.rate() >= 0.95,
        "semantic-bad parse rate below 95%"
    );
}
