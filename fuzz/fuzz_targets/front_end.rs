//! Lex, parse and check arbitrary input: the front end must return
//! diagnostics, never panic, overflow the stack or hang.
//!
//! Each input is tried twice: as raw bytes when they are UTF-8 (skipped
//! otherwise, as `bat check` reports non-UTF-8 before the front end runs),
//! and as an arbitrary `&str` built from the bytes, so inputs with stray
//! invalid bytes still exercise the parser.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

fn front_end(source: &str) {
    let front_end = language::compile_front_end(source);
    // Every diagnostic span must lie inside the source on char boundaries,
    // or rendering and the LSP would slice out of bounds.
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

fuzz_target!(|data: &[u8]| {
    if let Ok(source) = std::str::from_utf8(data) {
        front_end(source);
    }
    if let Ok(source) = <&str>::arbitrary(&mut Unstructured::new(data)) {
        front_end(source);
    }
});
