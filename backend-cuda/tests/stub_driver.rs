//! The host code (cudarc's unmodified calls through `backend_cuda::device`)
//! against a stub libcuda built by the test: device memory is host memory
//! and launches run shim-compiled kernels on the CPU.
//!
//! cudarc loads libcuda once per process by its usual names, so each case
//! runs in a child process (this test binary again, running one `#[ignore]`d
//! child test) whose `LD_LIBRARY_PATH` points at the stub.
//!
//! With `BAT_CUDA_DEVICE=real` (see `common`) the host code runs the same
//! kernel on a real GPU, compiled with NVRTC; the stub's own behaviour (a
//! driver without a device, `BAT_STUB_CUDA_DEVICES=0`) is skipped there.

mod common;

use common::{device_close, device_mode, run_child, skipped_on_a_real_device};

use backend_cuda::device::{Device, DeviceError, THREADS_PER_BLOCK};
use backend_cuda::device_mode::DeviceMode;
use backend_cuda::nvrtc::Compiled;
use backend_cuda::probe::{Unavailable, probe};
use backend_cuda::stub::{STUB_DEVICE_NAME, build_stub_libcuda, module_image};
use codegen::shim::build_module;

/// A lane kernel of the backend's ABI: slot 2 = exp(slot 0) * data[1] + slot 1.
const LANE_KERNEL: &str = r#"
extern "C" __global__ void lane_update(double* __restrict__ state, const double* __restrict__ data,
                                       const int* __restrict__ active, int n_active, int n_lanes) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_active) return;
    int lane = active[t];
    state[2 * n_lanes + lane] = exp(state[0 * n_lanes + lane]) * data[1] + state[1 * n_lanes + lane];
}
"#;

const N_LANES: usize = 700; // every third lane is active: two blocks, the last partial
const N_SLOTS: usize = 3;

fn stub_dir_with_kernel() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if device_mode() == DeviceMode::Real {
        return dir;
    }
    build_stub_libcuda(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    build_module(LANE_KERNEL, &["lane_update"], dir.path(), "lane_update")
        .unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn initial_state() -> Vec<f64> {
    let mut state = vec![0.0; N_SLOTS * N_LANES];
    for lane in 0..N_LANES {
        state[lane] = lane as f64 / 100.0;
        state[N_LANES + lane] = -(lane as f64);
        state[2 * N_LANES + lane] = f64::NAN; // untouched unless active
    }
    state
}

#[test]
fn host_code_runs_kernels_through_the_stub_driver() {
    let dir = stub_dir_with_kernel();
    let out = run_child("child_runs_lane_kernel_on_stub", dir.path(), &[]);
    match device_mode() {
        DeviceMode::Stub => assert!(
            out.contains("device: bat stub device (CUDA on CPU), sm_90"),
            "{out}"
        ),
        DeviceMode::Real => assert!(
            out.contains("device: ") && !out.contains(STUB_DEVICE_NAME),
            "{out}"
        ),
    }
}

/// The lane kernel as a module image for the device: the shim library the
/// parent built (stub), or NVRTC's PTX for the GPU's architecture (real).
fn lane_kernel_image(dir: &std::path::Path, info: &backend_cuda::DeviceInfo) -> Compiled {
    match device_mode() {
        DeviceMode::Stub => module_image(&dir.join("lane_update.so")),
        DeviceMode::Real => {
            let (major, minor) = info.compute_capability;
            backend_cuda::nvrtc::compile_for(LANE_KERNEL, &format!("compute_{major}{minor}"), false)
                .unwrap_or_else(|e| panic!("{e}"))
        }
    }
}

#[test]
#[ignore = "child process of host_code_runs_kernels_through_the_stub_driver"]
fn child_runs_lane_kernel_on_stub() {
    let dir = std::path::PathBuf::from(std::env::var_os("BAT_STUB_DIR").unwrap());
    let info = probe().unwrap();
    println!("device: {}, {}", info.name, info.sm_arch());
    let device = Device::open().unwrap();

    // An image that is neither PTX nor a shim module fails cleanly (a real
    // driver may call it invalid PTX).
    let bad = device.load(Compiled::Ptx("not a module".into()), &["lane_update"]);
    assert!(
        matches!(&bad, Err(DeviceError::Driver(e))
            if e.contains("INVALID_IMAGE") || (device_mode() == DeviceMode::Real && e.contains("INVALID_PTX"))),
        "{:?}",
        bad.err()
    );
    let module = device
        .load(lane_kernel_image(&dir, &info), &["lane_update"])
        .unwrap();
    let missing = device.load(lane_kernel_image(&dir, &info), &["no_such_kernel"]);
    assert!(
        matches!(&missing, Err(DeviceError::Driver(e)) if e.contains("NOT_FOUND")),
        "{:?}",
        missing.err()
    );

    let state = initial_state();
    let data = [7.0, 0.5];
    // Every third lane, in a scrambled order, across all blocks.
    let mut active: Vec<i32> = (0..N_LANES as i32).filter(|l| l % 3 == 1).collect();
    active.reverse();
    assert!(active.len() > THREADS_PER_BLOCK as usize);
    let mut lanes = device.upload(&state, N_LANES, &data, &active).unwrap();
    device
        .launch(module.kernel("lane_update").unwrap(), &mut lanes)
        .unwrap();
    let after = device.download(&lanes).unwrap();

    assert_eq!(after[..2 * N_LANES], state[..2 * N_LANES]);
    for lane in 0..N_LANES {
        let got = after[2 * N_LANES + lane];
        if lane % 3 == 1 {
            let expected = (lane as f64 / 100.0).exp() * 0.5 - lane as f64;
            assert!(
                device_close(got, expected, 0.0),
                "lane {lane}: {got} != {expected}"
            );
        } else {
            assert!(got.is_nan(), "inactive lane {lane} was written");
        }
    }

    // Bad shapes are errors before anything reaches the driver.
    assert!(matches!(
        device.upload(&state[1..], N_LANES, &data, &active),
        Err(DeviceError::StateShape { .. })
    ));
    assert!(matches!(
        device.upload(&state, N_LANES, &data, &[N_LANES as i32]),
        Err(DeviceError::ActiveLane { .. })
    ));
}

#[test]
fn a_driver_without_a_device_is_a_clear_error() {
    if skipped_on_a_real_device(
        "a_driver_without_a_device_is_a_clear_error",
        "BAT_STUB_CUDA_DEVICES=0 hides the stub's device; a real driver's cannot be hidden",
    ) {
        return;
    }
    let dir = stub_dir_with_kernel();
    run_child(
        "child_sees_no_device",
        dir.path(),
        &[("BAT_STUB_CUDA_DEVICES", "0")],
    );
}

#[test]
#[ignore = "child process of a_driver_without_a_device_is_a_clear_error"]
fn child_sees_no_device() {
    let error = Device::open().err().expect("no device");
    assert_eq!(
        error.to_string(),
        "CUDA driver found but no CUDA device is available (cuInit: CUDA_ERROR_NO_DEVICE); use --backend cpu"
    );
}

#[test]
fn no_driver_is_a_clear_error_not_a_panic() {
    // In a child whose library path holds no libcuda (on a machine with a
    // system-wide driver the probe finds that one instead, and must succeed).
    let empty = tempfile::tempdir().unwrap();
    run_child("child_probes_without_stub", empty.path(), &[]);
}

#[test]
#[ignore = "child process of no_driver_is_a_clear_error_not_a_panic"]
fn child_probes_without_stub() {
    if backend_cuda::probe::driver_library_present() {
        assert!(probe().is_ok() || matches!(probe(), Err(Unavailable::NoDevice { .. })));
    } else {
        assert_eq!(probe(), Err(Unavailable::NoDriver));
        let error = Device::open().err().expect("no driver");
        assert_eq!(error.to_string(), "no CUDA driver found; use --backend cpu");
    }
}
