//! The device's Philox-4x32-10 streams (`codegen::rng`) against the CPU's
//! (`runtime::Rng`): through the CUDA-on-CPU shim every uniform
//! and normal draw (the ziggurat's fast path, wedges and tail) of every
//! chain's stream equals the CPU's bit for bit,
//! also after the stream is stored to lane state and loaded back; the same
//! source compiles with NVRTC for every checked target.

use std::ffi::c_void;

use backend_cuda::nvrtc::{CHECKED_TARGETS, compile};
use codegen::prelude;
use codegen::rng::RNG_SLOTS;
use codegen::shim::{ShimModule, build_module_serial};
use runtime::Rng;

/// Chain `t`'s stream of draw `draw`: `n_draws` pairs (uniform, normal)
/// into `out[(2i + j) * n_chains + t]`, stored to and reloaded from lane
/// state half-way.
const KERNEL: &str = r#"
extern "C" __global__ void rng_streams(double* out, double* state, int n_chains, int n_draws,
                                       unsigned long long seed, unsigned long long draw) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_chains) return;
    BatRng r = bat_rng_new(seed, (unsigned int)t, draw);
    for (int i = 0; i < n_draws; ++i) {
        out[(2LL * i) * n_chains + t] = bat_rng_uniform(&r);
        out[(2LL * i + 1) * n_chains + t] = bat_rng_std_normal(&r);
        if (i == n_draws / 2) {
            bat_rng_store(&r, state, 0, t, n_chains);
            r = bat_rng_new(0, 0, 0);
            r = bat_rng_load(state, 0, t, n_chains);
        }
    }
}
"#;

#[test]
fn device_streams_equal_the_cpu_streams_bit_for_bit() {
    let source = format!("{}{KERNEL}", prelude());
    let dir = tempfile::tempdir().unwrap();
    let library = build_module_serial(&source, &["rng_streams"], dir.path(), "rng")
        .unwrap_or_else(|e| panic!("{e}"));
    let module = ShimModule::load(&library).unwrap();
    // A seed and draw number with high bits set (both key words and both
    // counter halves), and a stream long enough to use many blocks; odd
    // draw counts leave words in the buffer at the store.
    let mut tail_draws = 0;
    for (seed, draw, n_draws) in [
        (0xDEAD_BEEF_1234_5678u64, 0x1_0000_0003u64, 37usize),
        (20240601, 0, 8),
        (u64::MAX, u64::MAX, 5),
        // 28,000 normals: ~420 wedge draws and ~7 from the tail
        (7, 1, 400),
    ] {
        let n_chains = 70usize;
        let mut out = vec![f64::NAN; 2 * n_draws * n_chains];
        let mut state = vec![0.0; RNG_SLOTS * n_chains];
        let mut out_ptr = out.as_mut_ptr();
        let mut state_ptr = state.as_mut_ptr();
        let (mut chains, mut draws) = (n_chains as i32, n_draws as i32);
        let (mut seed_arg, mut draw_arg) = (seed, draw);
        let mut args: Vec<*mut c_void> = vec![
            (&mut out_ptr) as *mut _ as *mut c_void,
            (&mut state_ptr) as *mut _ as *mut c_void,
            (&mut chains) as *mut _ as *mut c_void,
            (&mut draws) as *mut _ as *mut c_void,
            (&mut seed_arg) as *mut _ as *mut c_void,
            (&mut draw_arg) as *mut _ as *mut c_void,
        ];
        // SAFETY: the arguments follow the kernel's signature; `out` and
        // `state` hold every chain's values.
        unsafe { module.launch("rng_streams", 3, 32, &mut args) }.unwrap();
        for chain in 0..n_chains {
            let mut rng = Rng::new(seed, chain as u32, draw);
            for i in 0..n_draws {
                let (u, z) = (rng.uniform(), rng.std_normal());
                tail_draws += usize::from(z.abs() > runtime::ziggurat::R);
                let (du, dz) = (
                    out[2 * i * n_chains + chain],
                    out[(2 * i + 1) * n_chains + chain],
                );
                assert_eq!(
                    du.to_bits(),
                    u.to_bits(),
                    "seed {seed} chain {chain} draw {i}: uniform"
                );
                assert_eq!(
                    dz.to_bits(),
                    z.to_bits(),
                    "seed {seed} chain {chain} draw {i}: normal"
                );
            }
        }
    }
    // the ziggurat's every path was compared, its tail (1 in 3,900) too
    assert!(tail_draws > 0);
}

#[test]
fn device_streams_compile_with_nvrtc() {
    let source = format!("{}{KERNEL}", prelude());
    for target in CHECKED_TARGETS {
        compile(&source, target).unwrap_or_else(|e| panic!("{target:?}: {e}"));
    }
}
