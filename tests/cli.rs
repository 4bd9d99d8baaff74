//! The `bat` binary end to end: exit codes, output formats and hostile
//! input (missing files, non-UTF-8, empty files, deep nesting).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("run bat")
}

fn write_temp(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write temp file");
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

const VALID: &str =
    "data {\n  int<lower=0> N;\n}\nparameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n";
/// Line 2 uses an undeclared name (semantic); nothing else is wrong.
const UNDECLARED: &str = "model {\n  target += normal_lpdf(zz | 0, 1);\n}\n";
/// Line 3 lacks a semicolon before the closing brace of `parameters`.
const MISSING_SEMICOLON: &str = "parameters {\n  real mu\n}\nmodel {\n}\n";

#[test]
fn valid_file_exits_zero_with_summary() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "ok.stan", VALID.as_bytes());
    let out = bat(&["check", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("checked 1 file: 1 ok"),
        "summary missing: {}",
        text(&out.stderr)
    );
}

#[test]
fn bat_extension_is_accepted_like_stan() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "ok.bat", VALID.as_bytes());
    let out = bat(&["check", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
}

#[test]
fn invalid_file_exits_one_and_renders_the_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "bad.stan", UNDECLARED.as_bytes());
    let out = bat(&["check", "--color", "never", path_str(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error["), "no rendered error: {stderr}");
    assert!(stderr.contains("bad.stan:2:"), "location missing: {stderr}");
    assert!(!stderr.contains("\u{1b}["), "colour despite --color never");
    assert!(
        stderr.contains("1 with errors"),
        "summary missing: {stderr}"
    );
}

#[test]
fn any_invalid_file_among_several_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_temp(&dir, "good.stan", VALID.as_bytes());
    let bad = write_temp(&dir, "bad.stan", MISSING_SEMICOLON.as_bytes());
    let out = bat(&["check", path_str(&good), path_str(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("checked 2 files: 1 ok, 1 with errors"));
}

#[test]
fn color_always_emits_ansi_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "bad.stan", UNDECLARED.as_bytes());
    let out = bat(&["check", "--color", "always", path_str(&file)]);
    assert!(text(&out.stderr).contains("\u{1b}["));
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(bat(&["check"]).status.code(), Some(2));
    assert_eq!(bat(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        bat(&["check", "--message-format", "xml", "x.stan"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        bat(&["ir", "--emit", "nonsense", "x.stan"]).status.code(),
        Some(2)
    );
}

#[test]
fn json_format_has_one_object_per_diagnostic_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "bad.stan", MISSING_SEMICOLON.as_bytes());
    let out = bat(&["check", "--message-format", "json", path_str(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(!lines.is_empty(), "no JSON output");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        for key in ["severity", "kind", "code", "message", "file"] {
            assert!(v[key].is_string(), "{key} missing in {line}");
        }
        for key in ["line", "column", "end_line", "end_column"] {
            assert!(
                v[key].as_u64().is_some_and(|n| n >= 1),
                "{key} missing in {line}"
            );
        }
        assert_eq!(v["file"], path_str(&file));
    }
    let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(first["severity"], "error");
    assert_eq!(first["kind"], "syntax");
    // stanc3 reports a missing `;` where the next token starts or just
    // after the previous one: line 2 (after `mu`) or line 3 (at `}`).
    let line = first["line"].as_u64().unwrap();
    assert!(
        line == 2 || line == 3,
        "missing-semicolon reported on line {line}"
    );
}

#[test]
fn json_semantic_error_points_at_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "bad.stan", UNDECLARED.as_bytes());
    let out = bat(&["check", "--message-format", "json", path_str(&file)]);
    let first: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().expect("a diagnostic")).unwrap();
    assert_eq!(first["kind"], "semantic");
    // `zz` is at line 2, columns 25..27 (1-based, end exclusive).
    assert_eq!(
        (
            &first["line"],
            &first["column"],
            &first["end_line"],
            &first["end_column"]
        ),
        (&2.into(), &25.into(), &2.into(), &27.into())
    );
}

#[test]
fn missing_file_names_file_and_reason() {
    let out = bat(&["check", "/definitely/not/here.stan"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("/definitely/not/here.stan"), "{stderr}");
    assert!(stderr.contains("No such file or directory"), "{stderr}");
}

#[test]
fn directory_argument_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let out = bat(&["check", path_str(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read"));
}

#[test]
fn non_utf8_reports_line_and_column_of_first_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    // `é` is valid two-byte UTF-8, so the bad byte 0xFF is at character
    // column 6 of line 2 (byte column 7).
    let bytes = b"model {\n  //\xc3\xa9\xff\n}\n";
    let file = write_temp(&dir, "latin1.stan", bytes);
    let out = bat(&["check", "--message-format", "json", path_str(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().expect("a diagnostic")).unwrap();
    assert_eq!(v["kind"], "syntax");
    assert_eq!((&v["line"], &v["column"]), (&2.into(), &6.into()));
    assert!(v["message"].as_str().unwrap().contains("UTF-8"));

    let human = bat(&["check", "--color", "never", path_str(&file)]);
    assert_eq!(human.status.code(), Some(1));
    assert!(text(&human.stderr).contains("latin1.stan:2:6"));
}

#[test]
fn empty_file_is_a_valid_program() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "empty.stan", b"");
    let out = bat(&["check", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
}

#[test]
fn ten_thousand_nested_parens_do_not_crash() {
    let dir = tempfile::tempdir().unwrap();
    let depth = 10_000;
    let source = format!(
        "transformed data {{\n  real x = {}1{};\n}}\n",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let file = write_temp(&dir, "deep.stan", source.as_bytes());
    let out = bat(&["check", "--message-format", "json", path_str(&file)]);
    // Either accepted or a diagnostic; never a crash or internal error.
    let code = out.status.code();
    assert!(
        code == Some(0) || code == Some(1),
        "crashed: {:?}",
        out.status
    );
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("internal compiler error"), "{stderr}");
    if code == Some(1) {
        assert!(!out.stdout.is_empty(), "failed without a diagnostic");
    }
}

#[test]
fn ten_thousand_unclosed_parens_do_not_crash() {
    let dir = tempfile::tempdir().unwrap();
    let source = format!("model {{\n  target += {}\n}}\n", "(".repeat(10_000));
    let file = write_temp(&dir, "unclosed.stan", source.as_bytes());
    let out = bat(&["check", "--message-format", "json", path_str(&file)]);
    assert_eq!(out.status.code(), Some(1), "{:?}", out.status);
    assert!(!text(&out.stderr).contains("internal compiler error"));
    assert!(!out.stdout.is_empty());
}

#[test]
fn huge_file_is_handled() {
    let dir = tempfile::tempdir().unwrap();
    let mut source = String::from("transformed data {\n  real x = 0;\n");
    for i in 0..100_000 {
        source.push_str(&format!("  x += {i} * 0.5;\n"));
    }
    source.push_str("}\n");
    let file = write_temp(&dir, "huge.stan", source.as_bytes());
    let out = bat(&["check", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
}

#[test]
fn ir_emit_ast_prints_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "ok.stan", VALID.as_bytes());
    let out = bat(&["ir", path_str(&file), "--emit", "ast"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for name in ["N", "mu", "normal"] {
        assert!(stdout.contains(name), "AST lacks {name}: {stdout}");
    }
}

#[test]
fn ir_emit_sampler_pc_prints_the_sampler_program_with_split_tuples() {
    // Hidden debug output: FILE is not read. NUTS's first sub-tree `init`
    // is split, and only its components read after the second recursive
    // call are saved (not the last point, init.3 .. init.6); its components
    // are read from the callee's result variable, with no whole copy of it
    // (pass forward_results).
    let out = bat(&["ir", "unused.stan", "--emit", "sampler-pc"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("function build_tree_rng("), "{stdout}");
    assert!(stdout.contains("push init.7\n"), "{stdout}");
    assert!(!stdout.contains("push init.3\n"), "{stdout}");
    assert!(!stdout.contains("push init\n"), "{stdout}");
    assert!(
        stdout.contains("init.3 = build_tree_rng$result.3;"),
        "{stdout}"
    );
    assert!(
        !stdout
            .lines()
            .any(|l| l.contains("let cfg__") && l.contains("$result;")),
        "{stdout}"
    );
    let cfg = bat(&["ir", "unused.stan", "--emit", "sampler-cfg"]);
    assert_eq!(cfg.status.code(), Some(0), "stderr: {}", text(&cfg.stderr));
    assert!(text(&cfg.stdout).contains("init.15"));
}

#[test]
fn ir_on_syntax_error_reports_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(&dir, "bad.stan", MISSING_SEMICOLON.as_bytes());
    let out = bat(&["ir", path_str(&file), "--emit", "ast", "--color", "never"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("error["));
    assert!(out.stdout.is_empty());
}

#[test]
fn examples_all_check() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "bat"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "examples missing: {files:?}");
    let args: Vec<&str> = std::iter::once("check")
        .chain(std::iter::once("--color"))
        .chain(std::iter::once("never"))
        .chain(files.iter().map(String::as_str))
        .collect();
    let out = bat(&args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
}

#[test]
fn warnings_alone_exit_zero_and_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let source = "data {\n  int N;\n  int K;\n}\ntransformed data {\n  real r = K / N;\n}\n";
    let file = write_temp(&dir, "warn.stan", source.as_bytes());
    let out = bat(&["check", "--message-format", "json", path_str(&file)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(stdout.lines().next().expect("a warning")).unwrap();
    assert_eq!(v["severity"], "warning");
    assert_eq!((&v["line"], &v["column"]), (&6.into(), &12.into()));
}

#[test]
fn standalone_functions_file_is_checked_without_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let source = "real twice(real x) {\n  return 2 * x;\n}\n";
    let ok = write_temp(&dir, "lib.stanfunctions", source.as_bytes());
    assert_eq!(bat(&["check", path_str(&ok)]).status.code(), Some(0));
    // The same text is not a whole program.
    let program = write_temp(&dir, "lib.stan", source.as_bytes());
    assert_eq!(bat(&["check", path_str(&program)]).status.code(), Some(1));
}
