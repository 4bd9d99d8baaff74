//! `bat cuda-probe` and `bat ir FILE --emit cuda` end to end.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bat(args: &[&str], library_path: Option<&std::path::Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bat"));
    command.args(args);
    if let Some(dir) = library_path {
        command.env("LD_LIBRARY_PATH", dir);
    }
    command.output().expect("run bat")
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn cuda_probe_without_a_driver_is_a_clear_error_with_exit_code_1() {
    if backend_cuda::probe::driver_library_present() {
        return assert!(bat(&["cuda-probe"], None).status.success());
    }
    let out = bat(&["cuda-probe"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        "error: no CUDA driver found; use --backend cpu"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn cuda_probe_reports_the_device_behind_a_driver() {
    let dir = tempfile::tempdir().unwrap();
    backend_cuda::shim::build_stub_libcuda(dir.path()).unwrap();
    let out = bat(&["cuda-probe"], Some(dir.path()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "CUDA device 0 of 1: bat stub device (CUDA on CPU) (compute capability 9.0)"
        ),
        "{stdout}"
    );
}

#[test]
fn emit_cuda_prints_kernels_that_nvrtc_compiles() {
    let out = bat(
        &[
            "ir",
            &example("eight_schools_noncentered.bat"),
            "--emit",
            "cuda",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let source = String::from_utf8(out.stdout).unwrap();
    assert!(
        source.contains("extern \"C\" __global__ void bat_b0_0("),
        "{source}"
    );
    // Every op of this model has code, the parameter transform included.
    assert!(source.contains("// mu = read_param(0);"), "{source}");
    assert!(!source.contains("not generated"), "{source}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("; 0 not generated"), "{stderr}");
    let target = backend_cuda::nvrtc::Target::Ptx("compute_80");
    backend_cuda::nvrtc::compile(&source, target).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn emit_cuda_names_what_is_not_generated_with_its_line() {
    let out = bat(
        &["ir", &example("recursive_functions.bat"), "--emit", "cuda"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let source = String::from_utf8(out.stdout).unwrap();
    assert!(
        source.contains("// not generated: function horner"),
        "{source}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not generated: horner: calls of user functions are not generated yet"),
        "{stderr}"
    );
}

#[test]
fn emit_cuda_without_data_for_sizes_is_an_error() {
    // A copy without the data file the setup generates beside the example.
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("logistic_regression.bat");
    std::fs::copy(example("logistic_regression.bat"), &model).unwrap();
    let out = bat(&["ir", model.to_str().unwrap(), "--emit", "cuda"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`N` is missing from the data"), "{stderr}");
}
