//! From a model file to something that runs: front end, model IR, data,
//! gradient program. Every failure is reported where it belongs (source
//! diagnostics rendered against the file, data errors naming the variable)
//! and ends the command with exit code 1.

use super::MessageFormat;
use super::check::report;
use super::front_end;
use super::source::{self, LoadFailure, SourceFile};
use super::stack::run_guarded;
use language::LineIndex;
use language::data::DataFile;
use language::mir;
use language::mir::GradProgram;
use runtime::{ErrorKind, Model, RuntimeError};
use std::path::{Path, PathBuf};

/// Why a model could not be prepared; the message was already printed.
pub struct Reported;

pub struct Compiled {
    pub file: SourceFile,
    pub mir: mir::Program,
}

fn model_name(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "model".to_string(), |s| s.to_string_lossy().into_owned())
}

/// Read, parse, check and lower `path`, printing diagnostics (warnings too).
pub fn compile(path: &Path, color: bool) -> Result<Compiled, Reported> {
    let file = match source::load(path) {
        Ok(file) => file,
        Err(LoadFailure::Unreadable(message)) => {
            eprintln!("error: {message}");
            return Err(Reported);
        }
        Err(LoadFailure::InvalidUtf8 { file, diagnostic }) => {
            report(&file, &[*diagnostic], MessageFormat::Human, color);
            return Err(Reported);
        }
    };
    let name = model_name(path);
    let lowered = run_guarded(|| language::lower_checked(front_end::compile(&file), &name));
    match lowered {
        Ok((program, diagnostics)) => {
            report(&file, &diagnostics, MessageFormat::Human, color);
            match program {
                Some(mir) => Ok(Compiled { file, mir }),
                None => Err(Reported),
            }
        }
        Err(panic) => {
            eprintln!(
                "error: internal compiler error while compiling `{}`: {panic}",
                file.name
            );
            Err(Reported)
        }
    }
}

/// Print `diagnostics` about `compiled`'s source (warnings a command adds).
pub fn report_more(compiled: &Compiled, diagnostics: &[language::Diagnostic], color: bool) {
    report(&compiled.file, diagnostics, MessageFormat::Human, color);
}

/// Set to run the gradient program as the AD writes it, before
/// simplification (`language::simplify`): for measuring what the
/// simplification gains (`bat bench`) and for looking at the raw program
/// (`bat ir --emit grad`).
pub const UNSIMPLIFIED_ENV: &str = "BAT_UNSIMPLIFIED";

/// The gradient program of a compiled model.
pub fn gradient(compiled: &Compiled, color: bool) -> Result<GradProgram, Reported> {
    let differentiate = if std::env::var_os(UNSIMPLIFIED_ENV).is_some() {
        language::ad::gradient_unsimplified
    } else {
        language::ad::gradient
    };
    differentiate(&compiled.mir).map_err(|diagnostics| {
        report(&compiled.file, &diagnostics, MessageFormat::Human, color);
        Reported
    })
}

/// The CFG IR of the gradient program, then of generated quantities.
pub fn cfg_text(compiled: &Compiled, color: bool) -> Result<String, Reported> {
    let g = gradient(compiled, color)?;
    let lowered = language::batch::lower_gradient(&g).and_then(|grad| {
        Ok((
            grad,
            language::batch::lower_generated_quantities(&compiled.mir)?,
        ))
    });
    match lowered {
        Ok((grad, gq)) => Ok(format!(
            "{}\n{}",
            language::batch::print_cfg(&grad),
            language::batch::print_cfg(&gq)
        )),
        Err(diagnostics) => {
            report(&compiled.file, &diagnostics, MessageFormat::Human, color);
            Err(Reported)
        }
    }
}

/// The PC IR of the gradient program, then of generated quantities.
pub fn pc_text(compiled: &Compiled, color: bool) -> Result<String, Reported> {
    let g = gradient(compiled, color)?;
    let lowered = language::batch::lower_gradient(&g).and_then(|grad| {
        Ok((
            grad,
            language::batch::lower_generated_quantities(&compiled.mir)?,
        ))
    });
    let (grad, gq) = lowered.map_err(|diagnostics| {
        report(&compiled.file, &diagnostics, MessageFormat::Human, color);
        Reported
    })?;
    let build = |cfg| {
        language::batch::pc::build(cfg).map_err(|e| {
            eprintln!("error: {e}");
            Reported
        })
    };
    Ok(format!(
        "{}\n{}",
        language::batch::pc::print::print_pc(&build(&grad)?),
        language::batch::pc::print::print_pc(&build(&gq)?)
    ))
}

/// The data file to use: the one given, else `FILE.data.json` beside the
/// model if it exists, else none.
pub fn data_path(model: &Path, given: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = given {
        return Some(p.to_path_buf());
    }
    let stem = model.with_extension("");
    let beside = PathBuf::from(format!("{}.data.json", stem.display()));
    beside.exists().then_some(beside)
}

/// Read a Stan JSON file, naming the file in errors.
pub fn read_json(path: &Path) -> Result<DataFile, Reported> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("error: cannot read `{}`: {e}", path.display());
        Reported
    })?;
    DataFile::parse(&text).map_err(|e| {
        eprintln!("error: `{}`: {e}", path.display());
        Reported
    })
}

/// Read the data and run transformed data.
pub fn instantiate(compiled: &Compiled, data: Option<&Path>) -> Result<Model, Reported> {
    let data_file = match data {
        Some(path) => read_json(path)?,
        None => DataFile::empty(),
    };
    Model::new(&compiled.mir, &data_file).map_err(|e| {
        match (e.kind, data) {
            // Missing, mis-shaped or out-of-bounds data: the data file is
            // the cause.
            (ErrorKind::Data, Some(path)) => eprintln!(
                "error: `{}`: {} (data for {})",
                path.display(),
                e.message,
                compiled.file.name
            ),
            _ => {
                eprintln!("error: {}: {}", compiled.file.name, e.message);
                render_span(&e, &compiled.file.name, &compiled.file.text);
            }
        }
        Reported
    })
}

/// `--> file:line:col` and the source line of the statement that failed.
pub fn render_span(error: &RuntimeError, file_name: &str, source: &str) {
    let Some(span) = error.span else { return };
    let start = span.start as usize;
    if start > source.len() {
        return;
    }
    let lines = LineIndex::new(source);
    let (line, col) = lines.line_col(source, start);
    let text = source.lines().nth(line - 1).unwrap_or("");
    let width = line.to_string().len();
    eprintln!("{:width$}--> {file_name}:{line}:{col}", "");
    eprintln!("{:width$} |", "");
    eprintln!("{line} | {text}");
    eprintln!("{:width$} |", "");
}
