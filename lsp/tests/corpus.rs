//! The diagnostics an editor receives, checked against stanc3's corpus:
//! every bad program gets an error whose LSP range starts on the line
//! stanc3 reports (manifest.json), and no good program gets an error.
//! This exercises the offset → UTF-16 position edge on ~1200 real files.

use std::path::{Path, PathBuf};

use lsp::diagnostics;
use lsp::document::{Document, SourceKind};
use lsp::position::Encoding;
use serde_json::Value;
use tower_lsp::lsp_types::{DiagnosticSeverity, Url};

fn corpus_root() -> Option<PathBuf> {
    let root = std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    assert!(
        root.join("stanc3/manifest.json").exists(),
        "test corpus missing at {}: clone the repository beside shared/ or set BAT_CORPUS",
        root.display()
    );
    Some(root)
}

/// Files the front end is known to disagree with stanc3 on, with reasons,
/// shared with the workspace conformance test.
fn exceptions() -> Vec<String> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/exceptions.txt");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('|').next())
        .map(|p| p.trim().to_owned())
        .collect()
}

/// Every 5th entry by default: the workspace conformance test already
/// sweeps the whole corpus through the same front end; this test is about
/// the LSP edge. `BAT_FULL_SWEEP=1` runs every file.
fn selected(index: usize) -> bool {
    std::env::var("BAT_FULL_SWEEP").as_deref() == Ok("1") || index.is_multiple_of(5)
}

fn lsp_errors(root: &Path, dir: &str, file: &str) -> Vec<tower_lsp::lsp_types::Diagnostic> {
    let path = root.join("stanc3").join(dir).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let kind = SourceKind::of_path(file);
    let document = Document::new(text, 1, kind, Encoding::Utf16);
    let uri = Url::from_file_path(&path).unwrap();
    diagnostics::to_lsp(&document, &uri)
        .into_iter()
        .filter(|d| d.severity == Some(DiagnosticSeverity::ERROR))
        .collect()
}

#[test]
fn bad_programs_get_an_error_on_stanc3s_line() {
    let Some(root) = corpus_root() else {
        assert!(std::env::var_os("CI").is_none(), "corpus missing in CI");
        eprintln!("corpus not found; skipping");
        return;
    };
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("stanc3/manifest.json")).unwrap())
            .unwrap();
    let excepted = exceptions();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (index, entry) in manifest["bad"].as_array().unwrap().iter().enumerate() {
        if !selected(index) {
            continue;
        }
        let file = entry["file"].as_str().unwrap();
        if excepted.iter().any(|e| e.ends_with(file)) {
            continue;
        }
        let line = entry["line"].as_u64().unwrap() as u32;
        let errors = lsp_errors(&root, "bad", file);
        checked += 1;
        match errors.first() {
            Some(first) if first.range.start.line + 1 == line => {}
            Some(first) => wrong.push(format!(
                "{file}: stanc3 line {line}, LSP line {}",
                first.range.start.line + 1
            )),
            None => wrong.push(format!("{file}: no error")),
        }
    }
    assert!(checked > 100, "only {checked} bad programs found");
    assert!(
        wrong.is_empty(),
        "{} of {checked} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn good_programs_get_no_error() {
    let Some(root) = corpus_root() else {
        assert!(std::env::var_os("CI").is_none(), "corpus missing in CI");
        return;
    };
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("stanc3/manifest.json")).unwrap())
            .unwrap();
    let excepted = exceptions();
    let mut failures = Vec::new();
    for (index, entry) in manifest["good"].as_array().unwrap().iter().enumerate() {
        if !selected(index) {
            continue;
        }
        let file = entry["file"].as_str().unwrap();
        if excepted.iter().any(|e| e.ends_with(file)) {
            continue;
        }
        if let Some(first) = lsp_errors(&root, "good", file).first() {
            failures.push(format!("{file}: {}", first.message));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
