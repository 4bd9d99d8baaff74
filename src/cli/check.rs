//! `bat check`: run the front end over files and report diagnostics.

use super::MessageFormat;
use super::front_end;
use super::json::to_json_lines;
use super::source::{self, LoadFailure, SourceFile};
use super::stack::run_guarded;
use language::{Diagnostic, Severity};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Counts for the closing summary line.
#[derive(Default)]
struct Tally {
    files: usize,
    files_with_errors: usize,
    errors: usize,
    warnings: usize,
}

impl Tally {
    fn add(&mut self, diagnostics: &[Diagnostic]) {
        let errors = diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        self.errors += errors;
        self.warnings += diagnostics.len() - errors;
        if errors > 0 {
            self.files_with_errors += 1;
        }
    }

    fn add_failed_file(&mut self) {
        self.errors += 1;
        self.files_with_errors += 1;
    }

    fn summary(&self) -> String {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let ok = self.files - self.files_with_errors;
        format!(
            "checked {}: {ok} ok, {} with errors ({}, {})",
            plural(self.files, "file"),
            self.files_with_errors,
            plural(self.errors, "error"),
            plural(self.warnings, "warning"),
        )
    }
}

pub fn run(files: &[PathBuf], format: MessageFormat, color: bool) -> ExitCode {
    let mut tally = Tally::default();
    for path in files {
        tally.files += 1;
        match source::load(path) {
            Ok(file) => match run_guarded(|| front_end::compile(&file)) {
                Ok(front_end) => {
                    report(&file, &front_end.diagnostics, format, color);
                    tally.add(&front_end.diagnostics);
                }
                Err(panic) => {
                    eprintln!(
                        "error: internal compiler error while checking `{}`: {panic}\n\
                         note: this is a bug in bat; please report it with the file",
                        file.name
                    );
                    tally.add_failed_file();
                }
            },
            Err(LoadFailure::Unreadable(message)) => {
                eprintln!("error: {message}");
                tally.add_failed_file();
            }
            Err(LoadFailure::InvalidUtf8 { file, diagnostic }) => {
                let diagnostics = [*diagnostic];
                report(&file, &diagnostics, format, color);
                tally.add(&diagnostics);
            }
        }
    }
    if format == MessageFormat::Human {
        eprintln!("{}", tally.summary());
    }
    if tally.files_with_errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Print one file's diagnostics in the chosen format.
pub fn report(file: &SourceFile, diagnostics: &[Diagnostic], format: MessageFormat, color: bool) {
    if diagnostics.is_empty() {
        return;
    }
    match format {
        MessageFormat::Human => {
            let text = language::diagnostic::render(&file.name, &file.text, diagnostics, color);
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
        MessageFormat::Json => {
            let lines = to_json_lines(&file.name, &file.text, diagnostics);
            let _ = std::io::stdout().write_all(lines.as_bytes());
        }
    }
}
