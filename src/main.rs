//! `bat`: command-line entry point.
//!
//! Subcommands live in [`cli`]; this file only parses arguments and turns
//! the outcome into the process exit code.

mod cli;

use std::process::ExitCode;

/// The batched executors allocate and free a lane-sized buffer or a slot
/// per operation (malloc + free were about a fifth of a gradient's
/// profile); mimalloc's thread-local free lists serve them faster than
/// glibc's. Allocation never changes a result: draws are the same bits.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::run()
}
