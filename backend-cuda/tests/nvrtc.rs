//! NVRTC from the pip wheel compiles CUDA C to PTX and cubin, and reports
//! compile errors with its log.

use backend_cuda::nvrtc::{CHECKED_TARGETS, CompileError, Compiled, Target, compile, version};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(double a, const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
fn nvrtc_is_the_wheels_version() {
    let (major, minor) = version().expect("NVRTC loads (scripts/setup.d/40-nvrtc.sh)");
    assert_eq!(
        (major, minor),
        (12, 9),
        "cudarc is built with feature cuda-12090"
    );
}

#[test]
fn compiles_to_ptx_for_each_virtual_arch_and_to_sm90_cubin() {
    for target in CHECKED_TARGETS {
        match (target, compile(SAXPY, target).unwrap()) {
            (Target::Ptx(arch), Compiled::Ptx(ptx)) => {
                assert!(
                    ptx.contains(&format!(".target {}", arch.replace("compute", "sm"))),
                    "{ptx}"
                );
                assert!(ptx.contains(".entry saxpy"), "{ptx}");
                assert!(ptx.contains("ld.global.f64"), "{ptx}");
            }
            (Target::Cubin(_), Compiled::Cubin(cubin)) => {
                assert_eq!(&cubin[..4], b"\x7fELF", "a cubin is an ELF image");
                let saxpy = b"saxpy";
                assert!(cubin.windows(saxpy.len()).any(|w| w == saxpy));
            }
            (target, other) => panic!("{target:?} gave {other:?}"),
        }
    }
}

#[test]
fn no_fused_multiply_add_so_results_match_the_cpu() {
    let Compiled::Ptx(ptx) = compile(SAXPY, Target::Ptx("compute_80")).unwrap() else {
        panic!("expected PTX");
    };
    assert!(!ptx.contains("fma.rn.f64"), "{ptx}");
}

#[test]
fn compile_errors_carry_the_nvrtc_log() {
    let broken = "extern \"C\" __global__ void k(double* y) { y[0] = undefined_name; }";
    match compile(broken, Target::Ptx("compute_80")) {
        Err(CompileError::Failed { arch, log }) => {
            assert_eq!(arch, "compute_80");
            assert!(log.contains("undefined_name"), "{log}");
            assert!(log.contains("error"), "{log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// The device ODE integrator (a template over lambdas, in every kernel
/// file's prelude) compiles for every checked target. (Its PTX has fused
/// multiply-adds: libdevice's `pow`, in the step-size controller, uses
/// them internally, so on a GPU a step size may differ from the CPU's in
/// the last bits, as `exp` or `log` may.)
#[test]
fn the_ode_integrator_compiles_for_every_checked_target() {
    let source = format!(
        "{}\n{}",
        codegen::prelude(),
        r#"
extern "C" __global__ void decay(const double* k, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double rate = k[i];
    auto rhs = [&](double t, const double* z, double* dz) { dz[0] = -rate * z[0] + t * z[1]; dz[1] = z[0]; };
    auto obs = [&](int j, const double* z) { y[i * 4 + j] = z[0]; };
    double w[24];
    double z0[2] = {1.0, 0.0};
    double ts[4] = {0.5, 1.0, 1.5, 2.0};
    double fail_time = 0.0;
    if (bat_dopri5(rhs, obs, 2, w, z0, 0.0, ts, 4, 1e-6, 1e-6, 1000LL, &fail_time) != 0) y[i * 4] = fail_time;
}
"#
    );
    for target in CHECKED_TARGETS {
        match compile(&source, target) {
            Ok(Compiled::Ptx(ptx)) => {
                assert!(ptx.contains(".entry decay"), "{target:?}");
            }
            Ok(Compiled::Cubin(cubin)) => assert_eq!(&cubin[..4], b"\x7fELF"),
            Err(e) => panic!("{target:?}: {e:?}"),
        }
    }
}
