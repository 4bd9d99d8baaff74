//! Argument parsing and dispatch for the `bat` command line.
//!
//! Exit codes: 0 success (warnings allowed), 1 when any input has an error
//! or cannot be read, 2 for usage errors (clap's default).

mod check;
mod front_end;
mod ir;
mod json;
mod source;
mod stack;

use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "bat",
    version,
    about = "Stan-compatible probabilistic programming (front end: parse and check)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and check Stan programs (`.bat` or `.stan`) and report diagnostics.
    Check {
        /// Files to check.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// How diagnostics are printed.
        #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
        message_format: MessageFormat,
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Print an intermediate representation of a program.
    Ir {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Which representation to print.
        #[arg(long, value_enum)]
        emit: Emit,
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Run the language server over stdin/stdout (started by editors).
    Lsp,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageFormat {
    /// codespan-rendered diagnostics on stderr and a summary line.
    Human,
    /// One JSON object per diagnostic per line on stdout.
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour text written to stderr.
    fn for_stderr(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stderr().is_terminal()
            }
        }
    }
}

/// Representations `bat ir --emit` can print. Later stages add variants.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The parsed syntax tree.
    Ast,
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check {
            files,
            message_format,
            color,
        } => check::run(&files, message_format, color.for_stderr()),
        Command::Ir { file, emit, color } => ir::run(&file, emit, color.for_stderr()),
        Command::Lsp => match lsp::run_stdio() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("bat lsp: {error}");
                ExitCode::FAILURE
            }
        },
    }
}
