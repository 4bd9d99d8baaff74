//! `bat ir`: print an intermediate representation of one program.

use super::Emit;
use super::MessageFormat;
use super::check::report;
use super::model;
use super::source::{self, LoadFailure};
use super::stack::run_guarded;
use language::Diagnostic;
use std::path::Path;
use std::process::ExitCode;

pub fn run(path: &Path, emit: Emit, color: bool) -> ExitCode {
    if matches!(emit, Emit::SamplerCfg | Emit::SamplerPc) {
        return run_sampler(emit);
    }
    if emit != Emit::Ast {
        return run_lowered(path, emit, color);
    }
    let file = match source::load(path) {
        Ok(file) => file,
        Err(LoadFailure::Unreadable(message)) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
        Err(LoadFailure::InvalidUtf8 { file, diagnostic }) => {
            report(&file, &[*diagnostic], MessageFormat::Human, color);
            return ExitCode::FAILURE;
        }
    };
    let printed = run_guarded(|| match emit {
        // The syntax tree needs only a successful parse: semantic errors do
        // not stop it from being printed.
        Emit::Mir
        | Emit::Grad
        | Emit::Cfg
        | Emit::Pc
        | Emit::Cuda
        | Emit::CudaSampler
        | Emit::SamplerCfg
        | Emit::SamplerPc => {
            unreachable!("handled by run_lowered or run_sampler")
        }
        Emit::Ast => {
            let (program, diagnostics) = if file.functions_only {
                language::syntax::parse_functions_only(&file.text)
            } else {
                language::syntax::parse(&file.text)
            };
            if diagnostics.iter().any(Diagnostic::is_error) {
                Err(diagnostics)
            } else {
                Ok(language::syntax::print_ast(&program))
            }
        }
    });
    match printed {
        Ok(Ok(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Ok(Err(diagnostics)) => {
            report(&file, &diagnostics, MessageFormat::Human, color);
            ExitCode::FAILURE
        }
        Err(panic) => {
            eprintln!(
                "error: internal compiler error while reading `{}`: {panic}",
                file.name
            );
            ExitCode::FAILURE
        }
    }
}

/// `--emit mir|grad|cfg|pc`: the stages after checking.
fn run_lowered(path: &Path, emit: Emit, color: bool) -> ExitCode {
    let Ok(compiled) = model::compile(path, color) else {
        return ExitCode::FAILURE;
    };
    let text = match emit {
        Emit::Grad => match model::gradient(&compiled, color) {
            Ok(g) => language::ad::print_grad_program(&g),
            Err(model::Reported) => return ExitCode::FAILURE,
        },
        Emit::Cfg => match model::cfg_text(&compiled, color) {
            Ok(text) => text,
            Err(model::Reported) => return ExitCode::FAILURE,
        },
        Emit::Pc => match model::pc_text(&compiled, color) {
            Ok(text) => text,
            Err(model::Reported) => return ExitCode::FAILURE,
        },
        _ => language::mir::print::print_program(&compiled.mir),
    };
    print!("{text}");
    ExitCode::SUCCESS
}

/// `--emit sampler-cfg|sampler-pc` (hidden, for inspecting the passes on
/// the sampler program that `bat run` executes): its CFG or PC IR.
fn run_sampler(emit: Emit) -> ExitCode {
    let printed = bat::sampler::program::nuts_program().and_then(|program| {
        let cfg = language::batch::lower(program, &[], 0)
            .map_err(|d| format!("the sampler program does not batch: {d:?}"))?;
        if emit == Emit::SamplerCfg {
            return Ok(language::batch::print_cfg(&cfg));
        }
        let pc = language::batch::pc::build(&cfg).map_err(|e| e.to_string())?;
        Ok(language::batch::pc::print::print_pc(&pc))
    });
    match printed {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
