//! `bat`: command-line entry point.
//!
//! Subcommands live in [`cli`]; this file only parses arguments and turns
//! the outcome into the process exit code.

mod cli;

use std::process::ExitCode;

/// See [`bat::allocator`].
#[global_allocator]
static ALLOCATOR: bat::allocator::MiMalloc = bat::allocator::MiMalloc;

fn main() -> ExitCode {
    bat::allocator::configure();
    cli::run()
}
