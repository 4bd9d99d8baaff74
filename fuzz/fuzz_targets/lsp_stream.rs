//! Bytes a client sends `bat lsp` (raw, or split into correctly framed
//! messages): the server must answer with well-framed JSON or nothing,
//! never panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = bat_fuzz::entries::lsp_stream(data);
});
