//! `bat fmt` end to end: in-place rewriting, `--check` with a diff, syntax
//! errors, functions files and usage errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run bat")
}

fn write_temp(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write temp file");
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

const MESSY: &str = "parameters { real mu; } // the mean\nmodel { mu~normal(0,1); }\n";
const CANONICAL: &str =
    "parameters {\n  real mu;\n} // the mean\nmodel {\n  mu ~ normal(0, 1);\n}\n";

#[test]
fn rewrites_files_in_place_and_is_then_a_fixed_point() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "m.stan", MESSY);
    let out = bat(&["fmt", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), CANONICAL);
    // Formatting the result again changes nothing, and --check agrees.
    let out = bat(&["fmt", "--check", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(out.stdout.is_empty());
}

#[test]
fn check_prints_a_diff_changes_nothing_and_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let messy = write_temp(&dir, "messy.stan", MESSY);
    let tidy = write_temp(&dir, "tidy.stan", CANONICAL);
    let out = bat(&["fmt", "--check", path_str(&messy), path_str(&tidy)]);
    assert_eq!(out.status.code(), Some(1));
    let diff = text(&out.stdout);
    assert!(diff.contains("--- "), "no diff header: {diff}");
    assert!(diff.contains("-model { mu~normal(0,1); }"), "{diff}");
    assert!(diff.contains("+  mu ~ normal(0, 1);"), "{diff}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("messy.stan: would be reformatted"),
        "{stderr}"
    );
    assert!(!stderr.contains("tidy.stan"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), MESSY);
}

#[test]
fn syntax_errors_are_rendered_and_the_file_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let broken = "parameters {\n  real mu\n}\n";
    let file = write_temp(&dir, "broken.stan", broken);
    let out = bat(&["fmt", path_str(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error"), "{stderr}");
    assert!(stderr.contains("broken.stan:"), "no location: {stderr}");
    assert!(stderr.contains("not formatted"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
}

#[test]
fn functions_files_are_formatted_without_a_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "f.stanfunctions", "real sq(real x){return x*x;}\n");
    let out = bat(&["fmt", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "real sq(real x) {\n  return x * x;\n}\n"
    );
}

#[test]
fn missing_files_and_usage_errors() {
    let out = bat(&["fmt", "/nonexistent/model.stan"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read"));
    let out = bat(&["fmt"]);
    assert_eq!(out.status.code(), Some(2));
    let out = bat(&["fmt", "--bogus", "x.stan"]);
    assert_eq!(out.status.code(), Some(2));
}
