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

/// A brief fuzzing run of every target in `cargo test`: each kept input
/// mutated many times (bit flips, byte changes, insertions, deletions,
/// repeats, truncation, splices with another input, and Stan tokens from
/// `fuzz/stan.dict` for the text targets) by a seeded generator, so the
/// run is the same on every machine. It has no coverage guidance (that
/// needs cargo-fuzz, whose instrumented build takes most of half an hour:
/// docs/fuzzing.md), but it reaches the error paths the kept inputs do not.
/// `BAT_FUZZ_MUTATIONS` sets the mutations per target (default below);
/// `BAT_FUZZ_SEED` the generator's seed.
mod mutations {
    use super::*;
    use std::process::Command;

    /// xorshift64*: small, seeded, the same everywhere.
    struct Rng(u64);

    impl Rng {
        fn new(target: &str) -> Rng {
            let seed = std::env::var("BAT_FUZZ_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(20261207u64);
            let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
            for b in target.bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            Rng(h | 1)
        }

        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    fn dictionary() -> Vec<Vec<u8>> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/stan.dict");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                (l.starts_with('"') && l.ends_with('"') && l.len() >= 2)
                    .then(|| l.as_bytes()[1..l.len() - 1].to_vec())
            })
            .collect()
    }

    /// One to four mutations of `input`.
    fn mutate(rng: &mut Rng, input: &[u8], others: &[Vec<u8>], tokens: &[Vec<u8>]) -> Vec<u8> {
        let mut x = input.to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(x.len() + 1);
            match rng.below(8) {
                0 if !x.is_empty() => {
                    let i = rng.below(x.len());
                    x[i] ^= 1 << rng.below(8);
                }
                1 if !x.is_empty() => {
                    let i = rng.below(x.len());
                    x[i] = [0, 0xff, b'"', b'{', b'}', b'[', b']', b'9', b'-', 0x80][rng.below(10)];
                }
                2 => {
                    let n = 1 + rng.below(8);
                    let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                    x.splice(at..at, bytes);
                }
                3 if !x.is_empty() => {
                    let n = 1 + rng.below(64.min(x.len()));
                    let i = rng.below(x.len() - n + 1);
                    x.drain(i..i + n);
                }
                4 if !x.is_empty() => {
                    let n = 1 + rng.below(64.min(x.len()));
                    let i = rng.below(x.len() - n + 1);
                    let piece = x[i..i + n].to_vec();
                    x.splice(at..at, piece);
                }
                5 => x.truncate(at),
                6 if !others.is_empty() => {
                    let other = &others[rng.below(others.len())];
                    let from = rng.below(other.len() + 1);
                    x.truncate(at);
                    x.extend_from_slice(&other[from..]);
                }
                _ if !tokens.is_empty() => {
                    let token = tokens[rng.below(tokens.len())].clone();
                    x.splice(at..at, token);
                }
                _ => {}
            }
        }
        x
    }

    fn count(default: usize) -> usize {
        std::env::var("BAT_FUZZ_MUTATIONS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    }

    /// Calls `entry` on `n` mutated kept inputs of `target`, each within
    /// 10 s; a failing case (a panic or a slow input) is written to a
    /// temporary file named in the failure, to be kept in
    /// `fuzz/regressions/<target>` once fixed.
    fn run(target: &str, n: usize, text: bool, mut entry: impl FnMut(&[u8])) {
        let kept: Vec<Vec<u8>> = inputs(target)
            .iter()
            .map(|(p, _)| std::fs::read(p).unwrap())
            .collect();
        let tokens = if text { dictionary() } else { Vec::new() };
        let mut rng = Rng::new(target);
        for i in 0..n {
            let input = mutate(&mut rng, &kept[i % kept.len()], &kept, &tokens);
            let started = Instant::now();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry(&input)));
            let took = started.elapsed();
            if outcome.is_err() || took >= Duration::from_secs(10) {
                let case = std::env::temp_dir().join(format!("bat-fuzz-{target}-{i}"));
                std::fs::write(&case, &input).unwrap();
                panic!(
                    "{target}: mutation {i} ({}) {}",
                    case.display(),
                    match outcome {
                        Err(_) => "panicked (above)".to_string(),
                        Ok(()) => format!("took {took:?}"),
                    }
                );
            }
        }
    }

    #[test]
    fn front_end_mutated() {
        run("front_end", count(400), true, |bytes| {
            entries::front_end(&String::from_utf8_lossy(bytes));
        });
    }

    #[test]
    fn data_reader_mutated() {
        run("data_reader", count(3000), true, |bytes| {
            let _ = entries::data_reader(bytes);
        });
    }

    #[test]
    fn lsp_stream_mutated() {
        run("lsp_stream", count(300), true, |bytes| {
            let _ = entries::lsp_stream(bytes);
        });
    }

    /// Through `bat summary`, as users meet a damaged file: libhdf5
    /// crashes on some damaged files (docs/fuzzing.md), which `bat summary`
    /// must report as an error (exit status 1), never a panic or a signal.
    #[test]
    fn draws_file_mutated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mutated.h5");
        run("draws_file", count(60), false, |bytes| {
            std::fs::write(&file, bytes).unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_bat"))
                .args(["summary", "--format", "json"])
                .arg(&file)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(0) => {}
                Some(1) => assert!(stderr.starts_with("error"), "{stderr}"),
                other => panic!("bat summary ended with {other:?}: {stderr}"),
            }
        });
    }
}
