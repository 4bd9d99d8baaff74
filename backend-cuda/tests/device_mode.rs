//! The switch of the device tests, `BAT_CUDA_DEVICE` (see `common` and
//! `backend_cuda::device_mode`): the child launcher runs its child on the
//! stub by default; with `BAT_CUDA_DEVICE=real` on a machine without a GPU
//! a device test fails with the probe's reason, it never falls back to the
//! stub, and an unknown value fails naming the values it accepts.
//!
//! The switch is tested by running this binary's launcher test again in a
//! process of its own with the variable set, and reading its failure.

mod common;

use std::path::Path;
use std::process::Command;

use backend_cuda::device_mode::{DEVICE_MODE_VAR, DeviceMode};
use backend_cuda::stub::{STUB_DEVICE_NAME, build_stub_libcuda};
use common::{device_mode, run_child};

const LAUNCHER: &str = "the_child_launcher_runs_its_child_on_the_selected_driver";

#[test]
fn the_child_launcher_runs_its_child_on_the_selected_driver() {
    let dir = tempfile::tempdir().unwrap();
    if device_mode() == DeviceMode::Stub {
        build_stub_libcuda(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    }
    let out = run_child("child_reports_the_device", dir.path(), &[]);
    let stub = out.contains(&format!("device: {STUB_DEVICE_NAME}"));
    assert_eq!(stub, device_mode() == DeviceMode::Stub, "{out}");
    assert!(out.contains("device: "), "{out}");
}

#[test]
#[ignore = "child process of the_child_launcher_runs_its_child_on_the_selected_driver"]
fn child_reports_the_device() {
    let info = backend_cuda::probe().unwrap_or_else(|e| panic!("{e}"));
    println!("device: {}", info.name);
}

/// This binary's launcher test in a process of its own with `env`:
/// (passed, output).
fn launcher_with(env: &[(&str, &str)], library_path: Option<&Path>) -> (bool, String) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args([LAUNCHER, "--exact", "--nocapture", "--test-threads=1"]);
    for (key, value) in env {
        command.env(key, value);
    }
    if let Some(dir) = library_path {
        command.env("LD_LIBRARY_PATH", dir);
    }
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success() && text.contains("1 passed"), text)
}

#[test]
fn real_mode_without_a_gpu_fails_with_the_probes_reason() {
    let (passed, out) = launcher_with(&[(DEVICE_MODE_VAR, "real")], None);
    if !backend_cuda::probe::driver_library_present() {
        // This machine: no libcuda at all.
        assert!(!passed, "{out}");
        assert!(
            out.contains(
                "BAT_CUDA_DEVICE=real asks for a real GPU, but no CUDA driver found; use --backend cpu"
            ),
            "{out}"
        );
    } else if passed {
        // A GPU machine: the child ran on it, not on the stub.
        assert!(!out.contains(STUB_DEVICE_NAME), "{out}");
    } else {
        // A driver without a usable device.
        assert!(
            out.contains("BAT_CUDA_DEVICE=real asks for a real GPU, but CUDA driver found but no")
                || out.contains(
                    "BAT_CUDA_DEVICE=real asks for a real GPU, but the CUDA driver failed"
                ),
            "{out}"
        );
    }
}

#[test]
fn real_mode_never_falls_back_to_the_stub() {
    // The stub first on the library path: a real run must refuse it.
    let dir = tempfile::tempdir().unwrap();
    build_stub_libcuda(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let (passed, out) = launcher_with(&[(DEVICE_MODE_VAR, "real")], Some(dir.path()));
    assert!(!passed, "{out}");
    assert!(
        out.contains(
            "BAT_CUDA_DEVICE=real asks for a real GPU, but the CUDA driver found is the tests' stub \
             (`bat stub device (CUDA on CPU)`); take the stub's directory off LD_LIBRARY_PATH"
        ),
        "{out}"
    );
}

#[test]
fn an_unknown_device_mode_is_a_clear_error() {
    let (passed, out) = launcher_with(&[(DEVICE_MODE_VAR, "gpu")], None);
    assert!(!passed, "{out}");
    assert!(
        out.contains(
            "BAT_CUDA_DEVICE=\"gpu\" is not a device mode: expected `stub` (the stub libcuda the \
             tests build), `real` (the system's CUDA driver and GPU) or nothing (the GPU if there is one)"
        ),
        "{out}"
    );
}
