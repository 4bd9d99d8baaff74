//! Every fuzz target's kept inputs (`fuzz/seeds/<target>`, and the
//! minimized crashers and hangs in `fuzz/regressions/<target>`) replayed
//! through the same entry functions the fuzz targets call, as ordinary
//! tests: CI runs each target over them without cargo-fuzz.

#[path = "../fuzz/src/entries.rs"]
mod entries;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The kept inputs of `target`: (file, whether it is a seed).
fn inputs(target: &str) -> Vec<(PathBuf, bool)> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for (dir, seed) in [("seeds", true), ("regressions", false)] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            files.push((entry.unwrap().path(), seed));
        }
    }
    files.sort();
    files
}

/// Calls `entry` on every kept input of `target`, each within 10 s (a
/// hang found by the fuzzer must stay fixed too).
fn replay(target: &str, mut entry: impl FnMut(&Path, &[u8], bool)) -> usize {
    let files = inputs(target);
    for (path, seed) in &files {
        let bytes = std::fs::read(path).unwrap();
        let started = Instant::now();
        entry(path, &bytes, *seed);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{} took {:?}",
            path.display(),
            started.elapsed()
        );
    }
    files.len()
}

#[test]
fn front_end_inputs() {
    let n = replay("front_end", |_, bytes, _| {
        if let Ok(source) = std::str::from_utf8(bytes) {
            entries::front_end(source);
        }
    });
    assert!(n >= 5, "{n} inputs");
}

#[test]
fn data_reader_inputs() {
    let n = replay("data_reader", |path, bytes, seed| {
        let verdict = entries::data_reader(bytes);
        // The seeds are each model's valid data.
        if seed {
            assert_eq!(verdict, Some(Ok(())), "{}", path.display());
        }
    });
    assert!(n >= entries::DATA_MODELS.len(), "{n} inputs");
}

#[test]
fn draws_file_inputs() {
    let n = replay("draws_file", |path, bytes, seed| {
        let verdict = entries::draws_file(bytes);
        let name = path.file_name().unwrap().to_string_lossy();
        if seed {
            // Whole files summarize; a truncated one is an error, not a crash.
            assert_eq!(
                verdict.is_ok(),
                !name.contains("truncated"),
                "{}: {verdict:?}",
                path.display()
            );
        }
    });
    assert!(n >= 4, "{n} inputs");
}

#[test]
fn lsp_stream_inputs() {
    let n = replay("lsp_stream", |path, bytes, seed| {
        let replies = entries::lsp_stream(bytes);
        // Every seed starts with `initialize`: the server answers it (the
        // `exit_` seeds end with `exit`, which may come before the answer:
        // the whole stream is there at once).
        let name = path.file_name().unwrap().to_string_lossy();
        if seed && !name.starts_with("exit_") {
            assert!(
                replies
                    .iter()
                    .any(|m| m["id"] == 1 && m["result"]["capabilities"].is_object()),
                "{}: {replies:?}",
                path.display()
            );
        }
    });
    assert!(n >= 3, "{n} inputs");
}
