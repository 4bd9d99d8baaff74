//! `bat summary`: posterior summaries of a bat output file.

use std::path::Path;
use std::process::{Command, ExitCode};

/// Set in the child process that reads the file (see [`run`]).
const READER_VAR: &str = "BAT_SUMMARY_READER";

/// Summarizes `path`, reading it in a child process: libhdf5 (1.10) can
/// crash on a damaged file where bat's checks do not reach (fuzzing found
/// variable-length data whose length and heap object disagree), and the
/// user then gets an error naming the file instead of a segmentation fault.
pub fn run(path: &Path, format: bat::Format, options: bat::summary::Options) -> ExitCode {
    if std::env::var_os(READER_VAR).is_some() {
        return summarize(path, format, options);
    }
    let Ok(exe) = std::env::current_exe() else {
        return summarize(path, format, options);
    };
    let status = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(READER_VAR, "1")
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                eprintln!(
                    "error: {} is damaged: the HDF5 library crashed reading it (signal {signal})",
                    path.display()
                );
            }
            ExitCode::FAILURE
        }
        Err(_) => summarize(path, format, options),
    }
}

fn summarize(path: &Path, format: bat::Format, options: bat::summary::Options) -> ExitCode {
    match bat::summary::summarize_file_with(path, format, options) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
