//! Damaged and truncated draws files given to `bat summary`: every input
//! must give a summary or an error, never a crash, a hang or an unbounded
//! allocation (libhdf5 parses the file: a crash inside it is a finding too).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = bat_fuzz::entries::draws_file(data);
});
