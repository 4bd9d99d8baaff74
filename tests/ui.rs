//! UI snapshot tests: each `ui/fail/*.bat` is rendered (no colour) exactly
//! as `bat check` shows it, into one insta snapshot per file
//! (`ui/snapshots/<name>.snap`). Update with `INSTA_UPDATE=always` and
//! review the diff.
//!
//! The first line of each case says what it must produce —
//! `// expect: syntax error`, `// expect: semantic error` or
//! `// expect: warning` (warnings only, no error) — and is asserted
//! independently of the snapshot.

use language::{Diagnostic, Kind, Severity};
use std::path::Path;

fn expectation(source: &str) -> (Severity, Option<Kind>) {
    match source.lines().next().unwrap_or_default().trim() {
        "// expect: syntax error" => (Severity::Error, Some(Kind::Syntax)),
        "// expect: semantic error" => (Severity::Error, Some(Kind::Semantic)),
        "// expect: warning" => (Severity::Warning, None),
        other => panic!("first line must be an `// expect:` header, found {other:?}"),
    }
}

fn check_expectation(name: &str, source: &str, diagnostics: &[Diagnostic]) {
    let (severity, kind) = expectation(source);
    match severity {
        Severity::Error => {
            let error = diagnostics
                .iter()
                .find(|d| d.is_error())
                .unwrap_or_else(|| panic!("{name}: expected an error, got none"));
            assert_eq!(Some(error.kind), kind, "{name}: wrong kind of first error");
        }
        Severity::Warning => {
            assert!(
                !diagnostics.iter().any(Diagnostic::is_error),
                "{name}: expected only warnings"
            );
            assert!(
                diagnostics.iter().any(|d| d.severity == Severity::Warning),
                "{name}: expected a warning"
            );
        }
    }
}

#[test]
fn fail() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        // glob! runs every case and reports all failures at the end.
        insta::glob!("ui/fail/*.bat", |path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let source = std::fs::read_to_string(path).expect("UTF-8 case");
            let front_end = language::compile_front_end(&source);
            check_expectation(&name, &source, &front_end.diagnostics);
            // The name `bat check` shows for a path given from the repo root.
            let shown_as = format!("tests/ui/fail/{name}.bat");
            let rendered =
                language::diagnostic::render(&shown_as, &source, &front_end.diagnostics, false);
            insta::assert_snapshot!(rendered);
        });
    });
}

#[test]
fn every_error_kind_has_a_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/fail");
    let count = std::fs::read_dir(dir)
        .expect("tests/ui/fail exists")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "bat"))
        .count();
    assert!(count >= 16, "UI cases missing: only {count}");
}
