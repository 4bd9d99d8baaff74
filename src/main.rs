//! `bat`: command-line entry point.
//!
//! Subcommands live in [`cli`]; this file only parses arguments and turns
//! the outcome into the process exit code.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run()
}
