//! `cargo bench --bench cuda`: the CUDA device benchmark ([`bat::cuda_bench`]):
//! gradient evaluations/s, ESS/s and the fraction of peak memory
//! bandwidth for logistic regression (N = 10,000, D = 100; run
//! `scripts/setup.sh` for its data), the 100-d correlated Gaussian and
//! eight schools (non-centered) at 1, 1024 and 16384 chains on device 0.
//! Prints `skipped: <reason>` without a GPU.
//!
//! Settings (environment): `BAT_BENCH_PROBLEMS`, `BAT_BENCH_CHAINS`,
//! `BAT_BENCH_WARMUP`, `BAT_BENCH_SAMPLES`, `BAT_BENCH_SECONDS`.
//! `BAT_BENCH_ALLOW_STUB=1` runs the whole path on the tests' stub driver
//! (kernels on the CPU; the figures are not GPU speeds): with no CUDA
//! driver on this machine the benchmark builds the stub and runs itself
//! again with the stub on its library path. Use tiny settings there, e.g.
//! `BAT_BENCH_ALLOW_STUB=1 BAT_BENCH_CHAINS=1,4 BAT_BENCH_WARMUP=20
//! BAT_BENCH_SAMPLES=20 BAT_BENCH_SECONDS=0.2 cargo bench --bench cuda`.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use bat::cuda_bench::{BenchSettings, run};

fn main() -> ExitCode {
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let scratch = std::env::temp_dir().join(format!("bat-bench-cuda-{}", std::process::id()));
    let settings = match BenchSettings::from_env(examples, scratch.clone()) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if settings.allow_stub
        && std::env::var_os("BAT_STUB_DIR").is_none()
        && !backend_cuda::probe::driver_library_present()
    {
        return run_again_on_the_stub();
    }
    let outcome = run(&settings, &mut std::io::stdout().lock());
    let _ = std::fs::remove_dir_all(&scratch);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// cudarc loads libcuda once per process: build the stub driver and run
/// this benchmark again with it first on the library path.
fn run_again_on_the_stub() -> ExitCode {
    let dir = tempfile::tempdir().expect("a temporary directory");
    if let Err(e) = backend_cuda::stub::build_stub_libcuda(dir.path()) {
        eprintln!("error: building the stub driver: {e}");
        return ExitCode::FAILURE;
    }
    let path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let status = Command::new(std::env::current_exe().expect("this benchmark's path"))
        .args(std::env::args_os().skip(1))
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:{path}", dir.path().display()),
        )
        .env("BAT_STUB_DIR", dir.path())
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: running the benchmark again: {e}");
            ExitCode::FAILURE
        }
    }
}
