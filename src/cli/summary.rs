//! `bat summary`: posterior summaries of a bat output file.

use std::path::Path;
use std::process::ExitCode;

pub fn run(path: &Path, format: bat::Format) -> ExitCode {
    match bat::summarize_file(path, format) {
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
