//! What the device tests share: cudarc loads libcuda once per process by
//! its usual names, so each case runs in a child process (this test binary
//! again, running one `#[ignore]`d child test) whose library path points
//! at a stub libcuda.
//!
//! `BAT_CUDA_DEVICE=real` (see `backend_cuda::device_mode`) runs the same
//! children against the system's CUDA driver and a real GPU instead: the
//! child keeps the inherited library path, the parent first requires a
//! real device (a test FAILS with the probe's reason when there is none;
//! it never falls back to the stub), comparisons with the CPU use
//! [`REAL_DEVICE_TOLERANCE`] where the stub's are exact or 1e-12, and tests
//! that check the stub itself say so and are skipped
//! ([`skipped_on_a_real_device`]). Any other value of the variable fails.

// Each test binary uses part of this module.
#![allow(dead_code)]

pub mod lanes;
pub mod models;
pub mod ode_models;

use std::path::Path;
use std::process::Command;

use backend_cuda::device_mode::{
    DEVICE_MODE_VAR, DeviceMode, REAL_DEVICE_TOLERANCE, require_real_device,
};

/// The mode `BAT_CUDA_DEVICE` selects (unset: the real GPU if there is
/// one, else the stub); an unknown value fails the test.
pub fn device_mode() -> DeviceMode {
    DeviceMode::from_env().unwrap_or_else(|e| panic!("{e}"))
}

/// Run the `#[ignore]`d test `test` of this binary in a child process with
/// `extra_env`, against the stub libcuda in `stub_dir` (its library path,
/// also passed as `BAT_STUB_DIR`) or, with `BAT_CUDA_DEVICE=real` or
/// unset on a machine with a GPU, against the system's driver; it must
/// pass. Returns the child's output.
pub fn run_child(test: &str, stub_dir: &Path, extra_env: &[(&str, &str)]) -> String {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BAT_STUB_DIR", stub_dir);
    // The child runs in the mode chosen here (no probing of its own).
    match device_mode() {
        DeviceMode::Stub => {
            command
                .env("LD_LIBRARY_PATH", stub_dir)
                .env(DEVICE_MODE_VAR, "stub");
        }
        DeviceMode::Real => {
            let info = require_real_device().unwrap_or_else(|e| panic!("{e}"));
            eprintln!("{test} runs on the real GPU {}", info.name);
            command.env(DEVICE_MODE_VAR, "real");
        }
    }
    for (key, value) in extra_env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "child {test} failed:\n{text}"
    );
    text
}

/// Run the `#[ignore]`d test `test` in a child process on the device of
/// the mode: a stub libcuda built for it, or the real GPU.
pub fn run_child_on_the_device(test: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    if device_mode() == DeviceMode::Stub {
        backend_cuda::stub::build_stub_libcuda(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    }
    run_child(test, dir.path(), &[])
}

/// True, after printing why, when `test` checks the stub driver itself
/// and the tests run on a real GPU.
pub fn skipped_on_a_real_device(test: &str, why: &str) -> bool {
    let skipped = device_mode() == DeviceMode::Real;
    if skipped {
        eprintln!("{test}: skipped with {DEVICE_MODE_VAR}=real: {why}");
    }
    skipped
}

/// Whether a device value `got` is the CPU's `want`: within `stub_relative`
/// (of max(|got|, |want|); 0 = exactly) on the stub, and within
/// [`REAL_DEVICE_TOLERANCE`] of max(|got|, |want|, 1) on a real GPU, whose
/// transcendental functions are not the C library's.
pub fn device_close(got: f64, want: f64, stub_relative: f64) -> bool {
    if got == want || (got.is_nan() && want.is_nan()) {
        return true;
    }
    let scale = got.abs().max(want.abs());
    match device_mode() {
        DeviceMode::Stub => (got - want).abs() <= stub_relative * scale,
        DeviceMode::Real => (got - want).abs() <= REAL_DEVICE_TOLERANCE * scale.max(1.0),
    }
}
