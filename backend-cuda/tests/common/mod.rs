//! What the stub-driver tests share: cudarc loads libcuda once per
//! process by its usual names, so each case runs in a child process (this
//! test binary again, running one `#[ignore]`d child test) whose library
//! path points at a stub libcuda.

use std::path::Path;
use std::process::Command;

/// Run the `#[ignore]`d test `test` of this binary in a child process with
/// `stub_dir` as its library path (and as `BAT_STUB_DIR`) and `extra_env`;
/// it must pass. Returns the child's output.
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
        .env("LD_LIBRARY_PATH", stub_dir)
        .env("BAT_STUB_DIR", stub_dir);
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
