//! Stan JSON data read against a model's declared data (the first byte
//! picks the model): every input must give the model or an error message,
//! never a panic, a hang or an unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = bat_fuzz::entries::data_reader(data);
});
