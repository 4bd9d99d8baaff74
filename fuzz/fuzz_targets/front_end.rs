//! Lex, parse and check arbitrary input: the front end must return
//! diagnostics, never panic, overflow the stack or hang.
//!
//! Each input is tried twice: as raw bytes when they are UTF-8 (skipped
//! otherwise, as `bat check` reports non-UTF-8 before the front end runs),
//! and as an arbitrary `&str` built from the bytes, so inputs with stray
//! invalid bytes still exercise the parser.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use bat_fuzz::entries::front_end;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(source) = std::str::from_utf8(data) {
        front_end(source);
    }
    if let Ok(source) = <&str>::arbitrary(&mut Unstructured::new(data)) {
        front_end(source);
    }
});
