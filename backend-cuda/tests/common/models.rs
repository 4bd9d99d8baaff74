//! Where the device tests find their models: the examples with a data
//! file and every posteriordb posterior of the corpus.

use std::path::PathBuf;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The corpus's posteriordb folder (`BAT_CORPUS`, else `../shared/corpus`).
pub fn corpus() -> PathBuf {
    let dir = std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/corpus"))
        .join("posteriordb");
    assert!(dir.is_dir(), "test corpus missing at {}", dir.display());
    dir
}

/// (name, model file, data file) of every example with data (named
/// `{example_prefix}{stem}`) and every posteriordb posterior, by name.
pub fn model_files(example_prefix: &str) -> Vec<(String, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let data = path.with_extension("data.json");
        if path.extension().is_some_and(|x| x == "bat") && data.is_file() {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((format!("{example_prefix}{stem}"), path, data));
        }
    }
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("model.stan").is_file() {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, dir.join("model.stan"), dir.join("data.json")));
        }
    }
    out.sort();
    out
}
