//! `bat cuda-probe`, `bat ir FILE --emit cuda` and `bat run --backend cuda`
//! end to end; with a CUDA driver, against the stub libcuda the tests
//! build (device memory is host memory, kernels are compiled with the
//! CUDA-on-CPU shim), so the device path runs on machines without a GPU.
//!
//! With `BAT_CUDA_DEVICE=real` (`backend_cuda::device_mode`) the same
//! tests run `bat` against the system's driver and a real GPU (each fails
//! with the probe's reason when there is none, never using the stub), and
//! draws are compared with the CPU's to [`REAL_GPU_CHAIN_TOLERANCE`].

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use backend_cuda::device_mode::{DeviceMode, require_real_device};

/// The CUDA driver `bat` runs against in these tests.
enum Driver {
    /// The stub libcuda, built into this directory (the default).
    Stub(tempfile::TempDir),
    /// The system's driver with a real GPU (`BAT_CUDA_DEVICE=real`).
    Real,
}

impl Driver {
    /// The directory to put first on `bat`'s library path, if any.
    fn library_path(&self) -> Option<&Path> {
        match self {
            Driver::Stub(dir) => Some(dir.path()),
            Driver::Real => None,
        }
    }
}

fn device_mode() -> DeviceMode {
    DeviceMode::from_env().unwrap_or_else(|e| panic!("{e}"))
}

/// The driver `BAT_CUDA_DEVICE` selects: the stub, built for the test, or
/// the system's, which must have a real GPU (else the test fails here).
fn cuda_driver() -> Driver {
    match device_mode() {
        DeviceMode::Stub => {
            let dir = tempfile::tempdir().unwrap();
            backend_cuda::stub::build_stub_libcuda(dir.path()).unwrap();
            Driver::Stub(dir)
        }
        DeviceMode::Real => {
            require_real_device().unwrap_or_else(|e| panic!("{e}"));
            Driver::Real
        }
    }
}

/// Relative tolerance (of max(|cpu|, |cuda|, 1)) of whole chains on a real
/// GPU: its `exp`/`log` differ from the C library's in the last bits, which
/// NUTS's acceptance statistics carry into the draws (as `lgamma` does for
/// sir_influenza on the stub: about 1e-8 seen). Chosen, not yet measured
/// on a GPU.
const REAL_GPU_CHAIN_TOLERANCE: f64 = 1e-6;

/// `stub_tolerance` on the stub; [`REAL_GPU_CHAIN_TOLERANCE`] of
/// max(|a|, |b|, 1) on a real GPU.
fn chain_values_close(a: f64, b: f64, stub_tolerance: f64, stub_scale_floor: f64) -> bool {
    if a == b || (a.is_nan() && b.is_nan()) {
        return true;
    }
    let (tolerance, floor) = match device_mode() {
        DeviceMode::Stub => (stub_tolerance, stub_scale_floor),
        DeviceMode::Real => (REAL_GPU_CHAIN_TOLERANCE, 1.0),
    };
    (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(floor)
}

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

/// `BAT_CUDA_DEVICE=real` on a machine without a GPU: a test that needs
/// the driver fails with the probe's reason (run here as this test
/// binary's `cuda_probe_reports_the_device_behind_a_driver` in a process
/// of its own); on a GPU machine it passes on the GPU.
#[test]
fn real_device_mode_without_a_gpu_fails_with_the_probes_reason() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "cuda_probe_reports_the_device_behind_a_driver",
            "--exact",
            "--test-threads=1",
        ])
        .env(backend_cuda::device_mode::DEVICE_MODE_VAR, "real")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if backend_cuda::probe::driver_library_present() {
        assert!(
            !text.contains(backend_cuda::stub::STUB_DEVICE_NAME),
            "{text}"
        );
        return;
    }
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(
            "BAT_CUDA_DEVICE=real asks for a real GPU, but no CUDA driver found; use --backend cpu"
        ),
        "{text}"
    );
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
    let driver = cuda_driver();
    let out = bat(&["cuda-probe"], driver.library_path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    match driver {
        Driver::Stub(_) => assert!(
            stdout.starts_with(
                "CUDA device 0 of 1: bat stub device (CUDA on CPU) (compute capability 9.0)"
            ),
            "{stdout}"
        ),
        Driver::Real => assert!(
            stdout.starts_with("CUDA device 0 of ")
                && !stdout.contains(backend_cuda::stub::STUB_DEVICE_NAME),
            "{stdout}"
        ),
    }
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

/// A model using a function the generator lacks (`gamma_p`).
const NOT_GENERATED: &str =
    "parameters {\n  real<lower=0, upper=1> x;\n}\nmodel {\n  target += gamma_p(2, x);\n}\n";

#[test]
fn emit_cuda_names_what_is_not_generated_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.bat");
    std::fs::write(&model, NOT_GENERATED).unwrap();
    let out = bat(&["ir", model.to_str().unwrap(), "--emit", "cuda"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let source = String::from_utf8(out.stdout).unwrap();
    assert!(source.contains("// not generated: "), "{source}");
    assert!(source.contains("(primitive gamma_p)"), "{source}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not generated: line 5, column 13: primitive gamma_p"),
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

fn bat_run(args: &[&str], library_path: Option<&std::path::Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bat"));
    command.arg("run").args(args);
    if let Some(dir) = library_path {
        // The stub driver first; NVRTC's directory stays on the path.
        let path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        command.env("LD_LIBRARY_PATH", format!("{}:{path}", dir.display()));
    }
    command.output().expect("run bat")
}

fn close(a: f64, b: f64) -> bool {
    chain_values_close(a, b, 1e-9, 1.0)
}

/// Eight schools on the CUDA backend with `--host-sampler` (the sampler
/// on the host, every gradient on the device, here the stub) gives each
/// chain the CPU backend's draws and statistics (same seed, same chains).
#[test]
fn run_on_the_cuda_backend_draws_what_the_cpu_backend_draws() {
    let driver = cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    let model = example("eight_schools_noncentered.bat");
    let run = |backend: &str| {
        let output = dir.path().join(format!("{backend}.h5"));
        let sampler: &[&str] = if backend == "cuda" {
            &["--host-sampler"]
        } else {
            &[]
        };
        let out = bat_run(
            &[
                &[
                    model.as_str(),
                    "--backend",
                    backend,
                    "--chains",
                    "6",
                    "--warmup",
                    "40",
                    "--samples",
                    "30",
                    "--seed",
                    "20240601",
                    "-o",
                    output.to_str().unwrap(),
                ][..],
                sampler,
            ]
            .concat(),
            if backend == "cuda" {
                driver.library_path()
            } else {
                None
            },
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        bat::output::read_draws(&output).unwrap()
    };
    let (cpu, cuda) = (run("cpu"), run("cuda"));
    assert_eq!(cpu.posterior.len(), cuda.posterior.len());
    let stats = |f: &bat::output::DrawFile| f.sample_stats.clone().unwrap();
    let groups = [
        (cpu.posterior.clone(), cuda.posterior.clone()),
        (stats(&cpu), stats(&cuda)),
    ];
    for (a_group, b_group) in &groups {
        for (a, b) in a_group.iter().zip(b_group) {
            assert_eq!(a.name, b.name);
            assert_eq!((a.n_chains, a.n_draws), (b.n_chains, b.n_draws));
            assert_eq!(a.values.len(), b.values.len());
            for (i, (x, y)) in a.values.iter().zip(&b.values).enumerate() {
                assert!(close(*x, *y), "{}[{i}]: cpu {x}, cuda {y}", a.name);
            }
        }
    }
    // The chains moved (the comparison is not of constants).
    let mu = cpu.posterior_variable("mu").unwrap();
    assert!(mu.values.windows(2).any(|w| w[0] != w[1]));
}

/// A model with an op the device cannot run yet is refused before
/// sampling, naming the op's line; it never runs wrongly.
#[test]
fn run_on_the_cuda_backend_refuses_a_model_it_cannot_run_yet() {
    let driver = cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.bat");
    std::fs::write(&model, NOT_GENERATED).unwrap();
    let out = bat_run(
        &[
            model.to_str().unwrap(),
            "--backend",
            "cuda",
            "--chains",
            "2",
            "-o",
            dir.path().join("o.h5").to_str().unwrap(),
        ],
        driver.library_path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: the CUDA backend cannot run this model yet: primitive gamma_p"),
        "{stderr}"
    );
    assert!(
        stderr.contains("line 5, column 13: `gamma_p(2, x)`: primitive gamma_p"),
        "{stderr}"
    );
    assert!(stderr.contains("(use --backend cpu)"), "{stderr}");
    assert!(!dir.path().join("o.h5").exists());
}

/// An ODE solve the device does not run (`ode_bdf` of a system with a
/// loop, which the CPU runs in the interpreter) is refused naming the
/// system, the solver and its line, not with an error about one of the
/// system function's variables.
#[test]
fn run_on_the_cuda_backend_refuses_an_ode_bdf_model_naming_the_solver() {
    let driver = cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("bdf.stan");
    std::fs::write(
        &model,
        "functions {\n  vector f(real t, vector y, real k) {\n    vector[1] d = -k * y;\n    for (i in 1:1) d[i] = d[i] + 0;\n    return d;\n  }\n}\n\
         parameters { real<lower=0> k; }\n\
         model {\n  array[2] vector[1] y = ode_bdf(f, [1.0]', 0.0, {0.5, 1.0}, k);\n  target += -square(y[2, 1] - 0.5);\n}\n",
    )
    .unwrap();
    let out = bat_run(
        &[
            model.to_str().unwrap(),
            "--backend",
            "cuda",
            "--chains",
            "2",
            "-o",
            dir.path().join("o.h5").to_str().unwrap(),
        ],
        driver.library_path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "error: the CUDA backend cannot run this model yet: the ODE system `f` of `ode_bdf` is not straight-line scalar code"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("line 10, column"), "{stderr}");
    assert!(stderr.contains("(use --backend cpu)"), "{stderr}");
    assert!(!stderr.contains("no value of known size"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!dir.path().join("o.h5").exists());
}

fn corpus_model(name: &str) -> (String, String) {
    let dir = std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
        .join("posteriordb")
        .join(name);
    assert!(dir.is_dir(), "test corpus missing at {}", dir.display());
    (
        dir.join("model.stan").to_string_lossy().into_owned(),
        dir.join("data.json").to_string_lossy().into_owned(),
    )
}

/// `bat run` of `model` (with `data`) on the CPU and with
/// `--backend cuda` (the sampler on the device, the default; plus
/// `cuda_flags`) against the stub driver: every chain's draws and
/// statistics agree to 1e-12 relative.
fn device_sampler_matches_cpu(model: &str, data: Option<&str>, chains: &str, cuda_flags: &[&str]) {
    device_sampler_matches_cpu_to(model, data, chains, cuda_flags, 1e-12);
}

/// [`device_sampler_matches_cpu`] to relative tolerance `tol`.
fn device_sampler_matches_cpu_to(
    model: &str,
    data: Option<&str>,
    chains: &str,
    cuda_flags: &[&str],
    tol: f64,
) {
    device_sampler_matches_cpu_with(model, data, chains, &["--save-warmup"], cuda_flags, tol);
}

/// [`device_sampler_matches_cpu_to`] with `flags` for both runs.
fn device_sampler_matches_cpu_with(
    model: &str,
    data: Option<&str>,
    chains: &str,
    flags: &[&str],
    cuda_flags: &[&str],
    tol: f64,
) {
    let driver = cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    let run = |backend: &[&str], name: &str| {
        let output = dir.path().join(format!("{name}.h5"));
        let mut args = vec![model];
        if let Some(data) = data {
            args.extend(["--data", data]);
        }
        args.extend([
            "--chains",
            chains,
            "--warmup",
            "50",
            "--samples",
            "50",
            "--seed",
            "777",
            "-o",
            output.to_str().unwrap(),
        ]);
        args.extend(flags);
        args.extend(backend);
        let out = bat_run(
            &args,
            if name == "cuda" {
                driver.library_path()
            } else {
                None
            },
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        bat::output::read_draws(&output).unwrap()
    };
    let cpu = run(&["--backend", "cpu"], "cpu");
    let cuda = run(&[&["--backend", "cuda"], cuda_flags].concat(), "cuda");
    let stats = |f: &bat::output::DrawFile| f.sample_stats.clone().unwrap();
    assert!(!cpu.posterior.is_empty());
    assert_eq!(cpu.posterior.len(), cuda.posterior.len());
    let groups = [
        (cpu.posterior.clone(), cuda.posterior.clone()),
        (stats(&cpu), stats(&cuda)),
    ];
    let mut compared = 0;
    for (a_group, b_group) in &groups {
        assert_eq!(a_group.len(), b_group.len());
        for (a, b) in a_group.iter().zip(b_group) {
            assert_eq!(a.name, b.name);
            assert_eq!((a.n_chains, a.n_draws), (b.n_chains, b.n_draws));
            assert_eq!(a.values.len(), b.values.len());
            for (i, (x, y)) in a.values.iter().zip(&b.values).enumerate() {
                let same = chain_values_close(*x, *y, tol, 0.0);
                assert!(same, "{}[{i}]: cpu {x}, cuda {y}", a.name);
                compared += 1;
            }
        }
    }
    assert!(compared > 0);
    // The chains moved (the comparison is not of constants).
    let first = &cpu.posterior[0];
    assert!(first.values.windows(2).any(|w| w[0] != w[1]));
}

/// The sampler program itself on the device (with the model's gradient
/// program): eight schools, 8 chains × (50 + 50).
#[test]
fn device_sampler_draws_what_the_cpu_backend_draws_eight_schools() {
    device_sampler_matches_cpu(&example("eight_schools_noncentered.bat"), None, "8", &[]);
}

/// Pooled warmup of a dense metric with the sampler on the device: its
/// segments and the sampling run with the dense factor draw what the CPU
/// backend draws.
#[test]
fn device_sampler_draws_what_the_cpu_backend_draws_with_a_dense_metric() {
    device_sampler_matches_cpu_with(
        &example("eight_schools_noncentered.bat"),
        None,
        "8",
        &["--adapt", "pooled", "--metric", "dense"],
        &[],
        1e-12,
    );
}

/// The same for a posteriordb model (a regression with data).
#[test]
fn device_sampler_draws_what_the_cpu_backend_draws_kidiq() {
    let (model, data) = corpus_model("kidiq-kidscore_interaction");
    // `--device-sampler` is accepted as an alias of the default.
    device_sampler_matches_cpu(&model, Some(&data), "8", &["--device-sampler"]);
}

/// ODE solves by Cash–Karp and BDF with output times that are parameters,
/// sampled on the device: every chain's draws and statistics are the CPU
/// backend's to 1e-12 (no `lgamma` in this log density).
#[test]
fn device_sampler_draws_what_the_cpu_backend_draws_ckrk_and_bdf() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("ode_solvers.stan");
    let data = dir.path().join("ode_solvers.json");
    std::fs::write(
        &model,
        "functions {\n\
           vector sys(real t, vector y, real k, real c) {\n\
             real a = -k * y[1] + c * y[2];\n\
             real b = k * y[1] - c * y[2] - y[2] * t / 10;\n\
             return [a, b]';\n\
           }\n\
         }\n\
         data { int T; array[T] real yobs; }\n\
         parameters { real<lower=0> k; real<lower=0> tau; }\n\
         transformed parameters {\n\
           array[T] real ts;\n\
           for (t in 1:T) ts[t] = tau * t;\n\
         }\n\
         model {\n\
           array[T] vector[2] y1 = ode_ckrk(sys, [1.0, 0.0]', 0.0, ts, k, 0.5);\n\
           array[T] vector[2] y2 = ode_bdf_tol(sys, [1.0, 0.0]', -0.1, ts, 1e-6, 1e-6, 10000, k, 0.5);\n\
           k ~ lognormal(0, 0.3); tau ~ lognormal(-1, 0.3);\n\
           for (t in 1:T) yobs[t] ~ normal(y1[t, 2] + y2[t, 1], 0.1);\n\
         }\n",
    )
    .unwrap();
    std::fs::write(&data, r#"{"T": 3, "yobs": [0.9, 0.8, 0.7]}"#).unwrap();
    device_sampler_matches_cpu(
        model.to_str().unwrap(),
        Some(data.to_str().unwrap()),
        "2",
        &[],
    );
}

/// An ODE model (`ode_rk45`, sensitivities for two parameters) sampled on
/// the device, every lane integrating its own system. Its gradients were
/// the CPU's bit for bit at 2,000 points near the mode, but its log density
/// differed in the last bits at 17 of them: a term of the log density
/// alone, `lchoose` of `neg_binomial_2`, whose `lgamma` is the `libm`
/// crate's (musl's) on the CPU and the C library's in the shim. NUTS's
/// acceptance statistics pass that on to the chains: the draws agree to
/// about 1e-8, so to 1e-6 here, not 1e-12.
#[test]
fn device_sampler_draws_what_the_cpu_backend_draws_sir() {
    device_sampler_matches_cpu_to(&example("sir_influenza.bat"), None, "2", &[], 1e-6);
}

/// `--device-sampler` without the CUDA backend is a clear error.
#[test]
fn device_sampler_needs_the_cuda_backend() {
    let dir = tempfile::tempdir().unwrap();
    let out = bat_run(
        &[
            &example("eight_schools_noncentered.bat"),
            "--device-sampler",
            "-o",
            dir.path().join("o.h5").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--device-sampler"), "{stderr}");
    assert!(stderr.contains("needs --backend cuda"), "{stderr}");
}

/// Flags that do not apply where the sampler runs are refused with a
/// clear error before anything runs, never ignored.
#[test]
fn sampler_flags_that_do_not_apply_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("o.h5");
    let model = example("eight_schools_noncentered.bat");
    let refused = |flags: &[&str], code: i32, expect: &[&str]| {
        let mut args = vec![model.as_str(), "-o", output.to_str().unwrap()];
        args.extend(flags);
        let out = bat_run(&args, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{flags:?}: {stderr}");
        for e in expect {
            assert!(stderr.contains(e), "{flags:?}: {stderr}");
        }
        assert!(!output.exists(), "{flags:?} ran");
    };
    // The device sampler (the default on the CUDA backend) has no host
    // threads, host batching or lane pool.
    refused(
        &["--backend", "cuda", "--threads", "2"],
        1,
        &["--threads sets the host's worker threads", "--host-sampler"],
    );
    refused(
        &["--backend", "cuda", "--batching", "local"],
        1,
        &["--batching local", "--host-sampler"],
    );
    refused(
        &["--backend", "cuda", "--lanes", "2"],
        1,
        &["--lanes needs --batching pc", "--host-sampler"],
    );
    // Choosing where the sampler runs needs the CUDA backend.
    refused(
        &["--host-sampler"],
        1,
        &["--host-sampler", "needs --backend cuda"],
    );
    // Both places at once is a usage error.
    refused(
        &["--backend", "cuda", "--host-sampler", "--device-sampler"],
        2,
        &["cannot be used with"],
    );
}

/// `bat ir FILE --emit cuda-sampler` prints the sampler program's kernels
/// for the model's size, every op generated, and NVRTC compiles them.
#[test]
fn emit_cuda_sampler_prints_kernels_that_nvrtc_compiles() {
    let out = bat(
        &[
            "ir",
            &example("eight_schools_noncentered.bat"),
            "--emit",
            "cuda-sampler",
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
        source.contains("// call model_log_density_gradient"),
        "{source}"
    );
    assert!(source.contains("// call emit_draw"), "{source}");
    assert!(!source.contains("not generated"), "{source}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("; 0 not generated"), "{stderr}");
    for target in backend_cuda::nvrtc::CHECKED_TARGETS {
        backend_cuda::nvrtc::compile(&source, target).unwrap_or_else(|e| panic!("{target:?}: {e}"));
    }
}

/// A model that rejects part of its support: the device's answers to
/// failed gradient evaluations (lp −∞, divergent steps, initial points
/// tried again) are the CPU's.
#[test]
fn device_sampler_handles_rejections_as_the_cpu_backend() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("cut.bat");
    std::fs::write(
        &model,
        "parameters {\n  real x;\n  real<lower=0> s;\n}\nmodel {\n  if (x > 1.2) {\n    reject(\"x is too big: \", x);\n  }\n  x ~ normal(0, s);\n  s ~ lognormal(0, 0.5);\n}\n",
    )
    .unwrap();
    device_sampler_matches_cpu(model.to_str().unwrap(), None, "4", &[]);
}

/// A model whose log density always fails: every chain's initialization
/// fails on the device as on the CPU, naming the model's rejection.
#[test]
fn device_sampler_reports_a_failed_initialization() {
    let driver = cuda_driver();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("never.bat");
    std::fs::write(
        &model,
        "parameters {\n  real x;\n}\nmodel {\n  reject(\"never\");\n}\n",
    )
    .unwrap();
    let out = bat_run(
        &[
            model.to_str().unwrap(),
            "--backend",
            "cuda",
            "--chains",
            "2",
            "-o",
            dir.path().join("o.h5").to_str().unwrap(),
        ],
        driver.library_path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The messages the CPU backend writes, values included.
    assert!(
        stderr.contains(": Initialization failed after 100 attempts.\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the last log density evaluation failed: never\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
