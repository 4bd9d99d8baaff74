//! `bat fmt`: rewrite Stan files in canonical form, or with `--check` list
//! the files that are not (with a unified diff) and exit 1.
//!
//! Exit codes: 0 all files formatted (or already canonical under
//! `--check`), 1 a file would change under `--check`, has syntax errors
//! (rendered, file left untouched) or cannot be read/written, 2 usage.

use super::MessageFormat;
use super::check::report;
use super::source::{self, LoadFailure, SourceFile};
use super::stack::run_guarded;
use language::format::{SourceKind, format_source};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(files: &[PathBuf], check: bool, color: bool) -> ExitCode {
    let mut failed = false;
    for path in files {
        let file = match source::load(path) {
            Ok(file) => file,
            Err(LoadFailure::Unreadable(message)) => {
                eprintln!("error: {message}");
                failed = true;
                continue;
            }
            Err(LoadFailure::InvalidUtf8 { file, diagnostic }) => {
                report(&file, &[*diagnostic], MessageFormat::Human, color);
                failed = true;
                continue;
            }
        };
        let kind = if file.functions_only {
            SourceKind::Functions
        } else {
            SourceKind::Program
        };
        let formatted = match run_guarded(|| format_source(&file.text, kind)) {
            Ok(Ok(text)) => text,
            Ok(Err(diagnostics)) => {
                report(&file, &diagnostics, MessageFormat::Human, color);
                eprintln!("{}: not formatted (syntax errors)", file.name);
                failed = true;
                continue;
            }
            Err(panic) => {
                eprintln!("error: internal error formatting `{}`: {panic}", file.name);
                failed = true;
                continue;
            }
        };
        if formatted == file.text {
            continue;
        }
        if check {
            print!("{}", unified_diff(&file, &formatted));
            eprintln!("{}: would be reformatted", file.name);
            failed = true;
        } else if let Err(err) = std::fs::write(path, &formatted) {
            eprintln!("error: cannot write `{}`: {err}", file.name);
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn unified_diff(file: &SourceFile, formatted: &str) -> String {
    similar::TextDiff::from_lines(file.text.as_str(), formatted)
        .unified_diff()
        .context_radius(3)
        .header(&file.name, &format!("{} (formatted)", file.name))
        .to_string()
}
