//! Formatting cases, one input per file under `tests/format/`, with their
//! canonical output as insta snapshots (`snapshots/format_cases__<case>.snap`).

use language::format::{SourceKind, format_source};
use std::path::Path;

fn format_case(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/format")
        .join(name);
    let source = std::fs::read_to_string(&path).expect("case file");
    let kind = if name.ends_with(".stanfunctions") {
        SourceKind::Functions
    } else {
        SourceKind::Program
    };
    let formatted = format_source(&source, kind)
        .unwrap_or_else(|d| panic!("{name} not formatted: {}", d[0].message));
    // Every case is also a fixed point.
    assert_eq!(format_source(&formatted, kind).unwrap(), formatted);
    formatted
}

#[test]
fn comments() {
    insta::assert_snapshot!(format_case("comments.stan"));
}

#[test]
fn control_flow() {
    insta::assert_snapshot!(format_case("control_flow.stan"));
}

#[test]
fn declarations() {
    insta::assert_snapshot!(format_case("declarations.stan"));
}

#[test]
fn expressions() {
    insta::assert_snapshot!(format_case("expressions.stan"));
}

#[test]
fn functions_file() {
    insta::assert_snapshot!(format_case("functions.stanfunctions"));
}

#[test]
fn syntax_errors_are_returned_not_formatted() {
    let source = "model {\n  y ~ normal(0, 1)\n}\n";
    let errors = format_source(source, SourceKind::Program).unwrap_err();
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|d| d.is_error()));
    assert!(
        errors[0].message.contains("expected"),
        "{}",
        errors[0].message
    );
}

#[test]
fn long_lines() {
    let formatted = format_case("long_lines.stan");
    for line in formatted.lines() {
        assert!(line.chars().count() <= 80, "too long: {line}");
    }
    insta::assert_snapshot!(formatted);
}
