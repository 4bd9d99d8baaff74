//! Loading corpus models for the interpreter and AD tests.

#![allow(dead_code)] // each test binary uses part of it

use language::data::DataFile;
use language::mir;
use runtime::Model;
use std::path::{Path, PathBuf};

pub fn posteriordb() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/posteriordb");
    assert!(
        dir.is_dir(),
        "test corpus missing at {}: clone the repository beside shared/",
        dir.display()
    );
    dir
}

/// Source to model IR; `Err` holds the errors' messages.
pub fn compile(source: &str, name: &str) -> Result<mir::Program, String> {
    match language::compile_model(source, name) {
        (Some(program), _) => Ok(program),
        (None, diagnostics) => Err(diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")),
    }
}

pub struct Loaded {
    pub program: mir::Program,
    pub model: Model,
    /// `stan_oracle.json`, when the model has one.
    pub oracle: Option<serde_json::Value>,
}

/// Compile a model, read its data (none if the file is absent) and oracle.
pub fn load(name: &str, model: &Path, data: &Path, oracle: &Path) -> Result<Loaded, String> {
    let source = std::fs::read_to_string(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let program = compile(&source, name)?;
    let data_text = std::fs::read_to_string(data).unwrap_or_else(|_| "{}".into());
    let data = DataFile::parse(&data_text).map_err(|e| format!("data: {e}"))?;
    let model = Model::new(&program, &data).map_err(|e| format!("data/transformed data: {e}"))?;
    let oracle = std::fs::read_to_string(oracle)
        .ok()
        .map(|text| serde_json::from_str(&text).map_err(|e| format!("oracle: {e}")))
        .transpose()?;
    Ok(Loaded {
        program,
        model,
        oracle,
    })
}

/// [`load`] for a posteriordb directory.
pub fn load_posteriordb(dir: &Path) -> Result<Loaded, String> {
    let name = dir.file_name().unwrap().to_string_lossy();
    load(
        &name,
        &dir.join("model.stan"),
        &dir.join("data.json"),
        &dir.join("stan_oracle.json"),
    )
}

pub fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// Names of the models `ad_gradients_exceptions.txt` lists as not yet
/// differentiable (`NAME: reason` lines).
pub fn ad_exceptions() -> Vec<String> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ad_gradients_exceptions.txt"),
    )
    .expect("exceptions file");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split(':').next().unwrap().trim().to_string())
        .collect()
}

/// The posteriordb model directories, sorted.
pub fn posteriordb_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(posteriordb())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("model.stan").is_file())
        .collect();
    dirs.sort();
    dirs
}
