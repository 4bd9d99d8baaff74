//! Corpus discovery, per-file checking and the rate report.

use language::{Diagnostic, Kind, LineIndex};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Corpus {
    root: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    All,
    /// Every 5th stanc3 manifest entry (good and bad) plus all posteriordb.
    Slice,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Stanc3Good,
    Stanc3Bad,
    PosteriordbModels,
    Posteriordb,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    Valid,
    Invalid { kind: Kind, line: usize },
}

pub struct Case {
    /// Path relative to the corpus root, e.g. `stanc3/bad/foo.stan`.
    pub name: String,
    pub path: PathBuf,
    pub group: Group,
    pub expect: Expect,
}

#[derive(Debug)]
pub enum Outcome {
    Pass,
    /// Bad program rejected with the right kind but on another line.
    WrongLine(String),
    Fail(String),
    Panic(String),
}

impl Corpus {
    pub fn locate() -> Option<Corpus> {
        let root = match std::env::var_os("BAT_CORPUS") {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
        };
        root.join("stanc3/manifest.json")
            .is_file()
            .then_some(Corpus { root })
    }

    pub fn cases(&self, selection: Selection) -> Vec<Case> {
        let manifest_text = std::fs::read_to_string(self.root.join("stanc3/manifest.json"))
            .expect("readable manifest");
        let manifest: serde_json::Value =
            serde_json::from_str(&manifest_text).expect("manifest is JSON");
        let keep = |i: usize| selection == Selection::All || i.is_multiple_of(5);
        let mut cases = Vec::new();
        for (i, entry) in manifest["good"]
            .as_array()
            .expect("good list")
            .iter()
            .enumerate()
        {
            if keep(i) {
                let file = entry["file"].as_str().expect("file name");
                cases.push(self.case("stanc3/good", file, Group::Stanc3Good, Expect::Valid));
            }
        }
        for (i, entry) in manifest["bad"]
            .as_array()
            .expect("bad list")
            .iter()
            .enumerate()
        {
            if keep(i) {
                let file = entry["file"].as_str().expect("file name");
                let kind = match entry["kind"].as_str() {
                    Some("syntax") => Kind::Syntax,
                    Some("semantic") => Kind::Semantic,
                    other => panic!("unknown kind {other:?} for {file}"),
                };
                let line = entry["line"].as_u64().expect("line") as usize;
                cases.push(self.case(
                    "stanc3/bad",
                    file,
                    Group::Stanc3Bad,
                    Expect::Invalid { kind, line },
                ));
            }
        }
        for file in sorted_files(&self.root.join("posteriordb-models"), "stan") {
            cases.push(self.case(
                "posteriordb-models",
                &file,
                Group::PosteriordbModels,
                Expect::Valid,
            ));
        }
        for dir in sorted_files(&self.root.join("posteriordb"), "") {
            let model = format!("{dir}/model.stan");
            if self.root.join("posteriordb").join(&model).is_file() {
                cases.push(self.case("posteriordb", &model, Group::Posteriordb, Expect::Valid));
            }
        }
        cases
    }

    fn case(&self, dir: &str, file: &str, group: Group, expect: Expect) -> Case {
        Case {
            name: format!("{dir}/{file}"),
            path: self.root.join(dir).join(file),
            group,
            expect,
        }
    }
}

/// Names in `dir` (not recursive) ending in `.ext`, or directories if `ext`
/// is empty, sorted for a deterministic order.
fn sorted_files(dir: &Path, ext: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            if ext.is_empty() {
                e.path().is_dir()
            } else {
                e.path().extension().is_some_and(|x| x == ext)
            }
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Diagnostics as `bat check` produces them: standalone `.stanfunctions`
/// files are parsed without the `functions { }` wrapper.
fn front_end_diagnostics(source: &str, functions_only: bool) -> Vec<Diagnostic> {
    if !functions_only {
        return language::compile_front_end(source).diagnostics;
    }
    let (program, mut diagnostics) = language::syntax::parse_functions_only(source);
    if !diagnostics.iter().any(Diagnostic::is_error) {
        diagnostics.extend(language::check::check_program(&program).1);
    }
    diagnostics.sort_by_key(|d| (d.primary.span.start, d.primary.span.end));
    diagnostics
}

/// Check all cases, in parallel over the available cores. Results are in
/// case order. Panics are recorded by a hook (keyed by the per-case thread
/// name) instead of printing a backtrace per file; the report lists them.
pub fn run_cases(cases: &[Case]) -> Vec<Outcome> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current()
            .name()
            .unwrap_or_default()
            .to_string();
        let message = info.to_string().replace('\n', " ");
        PANICS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(thread, message);
    }));
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<Outcome>>> =
        Mutex::new(std::iter::repeat_with(|| None).take(cases.len()).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let outcome = run_case(i, case);
                    outcomes.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
                }
            });
        }
    });
    std::panic::set_hook(previous);
    outcomes
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|o| o.expect("every case ran"))
        .collect()
}

/// Panic messages by the name of the thread that panicked.
static PANICS: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// Check one file on its own big-stack thread; a panic becomes
/// `Outcome::Panic`.
fn run_case(index: usize, case: &Case) -> Outcome {
    let functions_only = case.name.ends_with(".stanfunctions");
    let source = match std::fs::read(&case.path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => return Outcome::Fail(format!("not UTF-8: {err}")),
        },
        Err(err) => return Outcome::Fail(format!("cannot read: {err}")),
    };
    let thread_name = format!("conformance-case-{index}");
    let result = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(thread_name.clone())
            .stack_size(256 * 1024 * 1024)
            .spawn_scoped(scope, || front_end_diagnostics(&source, functions_only))
            .expect("spawn checker thread")
            .join()
    });
    match result {
        Ok(diagnostics) => judge(&case.expect, &source, &diagnostics),
        Err(_) => Outcome::Panic(
            PANICS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&thread_name)
                .unwrap_or_else(|| "unknown panic".into()),
        ),
    }
}

fn judge(expect: &Expect, source: &str, diagnostics: &[Diagnostic]) -> Outcome {
    let index = LineIndex::new(source);
    let describe = |d: &Diagnostic| {
        let (line, col) = index.line_col(source, d.primary.span.start as usize);
        format!(
            "{} {} at {line}:{col}: {}",
            d.kind.as_str(),
            d.code,
            d.message
        )
    };
    let first_error = diagnostics.iter().find(|d| d.is_error());
    match (expect, first_error) {
        (Expect::Valid, None) => Outcome::Pass,
        (Expect::Valid, Some(error)) => Outcome::Fail(format!("unexpected {}", describe(error))),
        (Expect::Invalid { kind, line }, None) => Outcome::Fail(format!(
            "accepted, but stanc3 reports a {} error on line {line}",
            kind.as_str()
        )),
        (Expect::Invalid { kind, line }, Some(error)) => {
            let (found_line, _) = index.line_col(source, error.primary.span.start as usize);
            let want = format!("want {} error on line {line}", kind.as_str());
            if error.kind != *kind {
                Outcome::Fail(format!("{want}, got {}", describe(error)))
            } else if found_line != *line {
                Outcome::WrongLine(format!("{want}, got {}", describe(error)))
            } else {
                Outcome::Pass
            }
        }
    }
}

/// Known differences from stanc3: `path | reason` per line.
pub struct Exceptions {
    reasons: BTreeMap<String, String>,
}

const EXCEPTIONS_HEADER: &str = "\
# Known differences between bat's front end and stanc3 on the corpus.
# One per line: `<path relative to the corpus root> | <reason>`.
# A panic is never excepted. The harness notes exceptions that now pass.
# `BAT_UPDATE_EXCEPTIONS=1 cargo test --test conformance` rewrites this file
# from a full run: reasons are kept, passing files dropped, and new failures
# added as `untriaged: <what bat reported>` for someone to explain or fix.
";

fn exceptions_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/exceptions.txt")
}

impl Exceptions {
    pub fn load() -> Exceptions {
        let text = std::fs::read_to_string(exceptions_path()).unwrap_or_default();
        let reasons = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (name, reason) = l
                    .split_once('|')
                    .unwrap_or_else(|| panic!("exception without `| reason`: {l}"));
                (name.trim().to_string(), reason.trim().to_string())
            })
            .collect();
        Exceptions { reasons }
    }

    fn reason(&self, name: &str) -> Option<&str> {
        self.reasons.get(name).map(String::as_str)
    }

    /// Rewrite the exceptions file from a full run's failures (panics are
    /// never written: they must be fixed).
    pub fn rewrite(&self, report: &Report) {
        let mut text = EXCEPTIONS_HEADER.to_string();
        for (name, why) in &report.all_failures {
            let reason = match self.reason(name) {
                Some(reason) => reason.to_string(),
                None => format!("untriaged: {}", why.replace('\n', " ")),
            };
            text.push_str(&format!("{name} | {reason}\n"));
        }
        std::fs::write(exceptions_path(), text).expect("write exceptions file");
    }
}

#[derive(Default)]
struct GroupStats {
    total: usize,
    passed: usize,
    /// Bad programs rejected with the right kind, wrong line.
    right_kind_wrong_line: usize,
}

#[derive(Default)]
pub struct Report {
    groups: BTreeMap<Group, GroupStats>,
    pub unexpected_failures: Vec<(String, String)>,
    /// Every non-panic failure, excepted or not, for rewriting exceptions.
    all_failures: BTreeMap<String, String>,
    excepted_failures: usize,
    /// Excepted files that now pass: their exception can be removed.
    stale_exceptions: Vec<String>,
    pub panics: usize,
}

impl Report {
    pub fn record(&mut self, case: &Case, outcome: Outcome, exceptions: &Exceptions) {
        let stats = self.groups.entry(case.group).or_default();
        stats.total += 1;
        let failure = match outcome {
            Outcome::Pass => {
                stats.passed += 1;
                if exceptions.reason(&case.name).is_some() {
                    self.stale_exceptions.push(case.name.clone());
                }
                return;
            }
            Outcome::WrongLine(why) => {
                stats.right_kind_wrong_line += 1;
                why
            }
            Outcome::Fail(why) => why,
            Outcome::Panic(why) => {
                self.panics += 1;
                format!("PANIC: {why}")
            }
        };
        if !failure.starts_with("PANIC") {
            self.all_failures.insert(case.name.clone(), failure.clone());
        }
        if exceptions.reason(&case.name).is_some() && !failure.starts_with("PANIC") {
            self.excepted_failures += 1;
        } else {
            self.unexpected_failures.push((case.name.clone(), failure));
        }
    }

    pub fn render(&self, exceptions: &Exceptions) -> String {
        let mut out = String::new();
        for (name, why) in &self.unexpected_failures {
            out.push_str(&format!("FAIL {name}: {why}\n"));
        }
        for name in &self.stale_exceptions {
            out.push_str(&format!(
                "note: {name} now passes; remove its exception ({})\n",
                exceptions.reason(name).unwrap_or_default()
            ));
        }
        out.push_str(
            "\ngroup                 passed / total    rate   (bad: right kind, wrong line)\n",
        );
        for (group, s) in &self.groups {
            let rate = 100.0 * s.passed as f64 / s.total.max(1) as f64;
            out.push_str(&format!(
                "{:<20} {:>7} / {:<6} {:>6.1}%   {}\n",
                format!("{group:?}"),
                s.passed,
                s.total,
                rate,
                if *group == Group::Stanc3Bad {
                    s.right_kind_wrong_line.to_string()
                } else {
                    String::new()
                }
            ));
        }
        out.push_str(&format!(
            "unexpected failures: {}, excepted failures: {}, panics: {}\n",
            self.unexpected_failures.len(),
            self.excepted_failures,
            self.panics
        ));
        out
    }
}
