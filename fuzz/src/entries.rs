//! The entry functions of the fuzz targets. Each takes the fuzzer's bytes
//! and panics only on a finding (a panic, or a broken promise checked
//! here); a hang or an unbounded allocation is caught by libFuzzer. The
//! same functions replay the kept inputs (`fuzz/seeds/<target>`,
//! `fuzz/regressions/<target>`) as ordinary tests (`tests/fuzz_replay.rs`),
//! so CI runs every target over them without cargo-fuzz.

use std::sync::OnceLock;

/// `front_end`: lex, parse and check; every diagnostic span lies inside the
/// source on char boundaries, and rendering succeeds.
pub fn front_end(source: &str) {
    let front_end = language::compile_front_end(source);
    for d in &front_end.diagnostics {
        for label in std::iter::once(&d.primary).chain(&d.secondary) {
            let range = label.span.range();
            assert!(range.start <= range.end, "inverted span {range:?}");
            assert!(
                source.get(range.clone()).is_some(),
                "span {range:?} not on char boundaries of {} bytes",
                source.len()
            );
        }
    }
    let _ = language::diagnostic::render("fuzz.stan", source, &front_end.diagnostics, false);
}

/// The models whose declared data the `data_reader` target reads JSON
/// against, chosen by the input's first byte.
pub const DATA_MODELS: [(&str, &str); 9] = [
    ("data_types", include_str!("../models/data_types.bat")),
    (
        "eight_schools_centered",
        include_str!("../../examples/eight_schools_centered.bat"),
    ),
    (
        "hierarchical_radon",
        include_str!("../../examples/hierarchical_radon.bat"),
    ),
    (
        "logistic_regression",
        include_str!("../../examples/logistic_regression.bat"),
    ),
    ("loop_jumps", include_str!("../../examples/loop_jumps.bat")),
    (
        "recursion_while",
        include_str!("../../examples/recursion_while.bat"),
    ),
    (
        "recursive_functions",
        include_str!("../../examples/recursive_functions.bat"),
    ),
    (
        "sir_influenza",
        include_str!("../../examples/sir_influenza.bat"),
    ),
    (
        "correlated_gaussian_100",
        include_str!("../../examples/correlated_gaussian_100.bat"),
    ),
];

fn data_programs() -> &'static [language::mir::Program] {
    static PROGRAMS: OnceLock<Vec<language::mir::Program>> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        DATA_MODELS
            .iter()
            .map(|(name, source)| {
                let (program, diagnostics) = language::compile_model(source, name);
                program.unwrap_or_else(|| panic!("{name} does not compile: {diagnostics:?}"))
            })
            .collect()
    })
}

/// `data_reader`: the first byte picks a model of [`DATA_MODELS`], the
/// rest is its data file. Returns the reader's verdict (for tests).
pub fn data_reader(data: &[u8]) -> Option<Result<(), String>> {
    let (&pick, json) = data.split_first()?;
    let programs = data_programs();
    let program = &programs[usize::from(pick) % programs.len()];
    Some(runtime::model_from_json(program, json).map(drop))
}

/// `draws_file`: the bytes as a draws file given to `bat summary`.
pub fn draws_file(data: &[u8]) -> Result<String, bat::OutputError> {
    bat::summary::summarize_bytes(data)
}

/// `lsp_stream`: the bytes as what a client sends `bat lsp`. An even first
/// byte sends the rest as it is; an odd one splits the rest at NUL bytes
/// and sends each piece as one message with a correct `Content-Length`
/// header (so the mutations reach the server's handlers). Everything the
/// server writes back must be well-framed JSON messages; returns them.
pub fn lsp_stream(data: &[u8]) -> Vec<serde_json::Value> {
    let Some((&mode, rest)) = data.split_first() else {
        return Vec::new();
    };
    let input = if mode % 2 == 0 {
        rest.to_vec()
    } else {
        let mut framed = Vec::new();
        for message in rest.split(|&b| b == 0) {
            framed.extend(format!("Content-Length: {}\r\n\r\n", message.len()).bytes());
            framed.extend(message);
        }
        framed
    };
    let output = lsp::serve_bytes(&input);
    parse_messages(&output)
}

/// The messages of an LSP byte stream; panics on a malformed one.
pub fn parse_messages(mut stream: &[u8]) -> Vec<serde_json::Value> {
    let mut messages = Vec::new();
    while !stream.is_empty() {
        let end = stream
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a header ends with an empty line");
        let header = std::str::from_utf8(&stream[..end]).expect("the header is text");
        let length: usize = header
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .expect("a Content-Length header")
            .trim()
            .parse()
            .expect("a numeric Content-Length");
        let body = &stream[end + 4..end + 4 + length];
        messages.push(serde_json::from_slice(body).expect("the body is JSON"));
        stream = &stream[end + 4 + length..];
    }
    messages
}
