//! The CUDA-on-CPU shim runs a kernel that uses thread and block indices,
//! shared memory, barriers, warp shuffles and atomics, compiled with g++;
//! the same source compiles with NVRTC.

use std::ffi::c_void;

use backend_cuda::nvrtc::{CHECKED_TARGETS, compile};
use codegen::shim::{ShimModule, build_module};

/// Each block sums its slice of `x` (shared memory, a barrier, then warp
/// shuffles) and adds its partial sum to `total` atomically; every thread
/// also writes its global index and block shape to `where_`.
const BLOCK_SUM: &str = r#"
extern "C" __global__ void block_sum(const double* x, int n, double* total, int* where_) {
    __shared__ double partial[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    where_[i] = blockIdx.x * 1000 + threadIdx.x + 1000000 * (blockDim.x + gridDim.x);
    partial[threadIdx.x] = i < n ? x[i] : 0.0;
    __syncthreads();
    if (threadIdx.x < 32) partial[threadIdx.x] += partial[threadIdx.x + 32];
    __syncthreads();
    double v = threadIdx.x < 32 ? partial[threadIdx.x] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x == 0) atomicAdd(total, v);
}
"#;

#[test]
fn shim_runs_a_reduction_kernel_like_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_module(BLOCK_SUM, &["block_sum"], dir.path(), "block_sum").unwrap();
    let module = ShimModule::load(&library).unwrap();

    let (blocks, threads) = (5u32, 64u32);
    let n: i32 = 300; // the last block is partly past the end
    let x: Vec<f64> = (1..=n).map(f64::from).collect();
    let mut total = 0.0f64;
    let mut where_ = vec![-1i32; (blocks * threads) as usize];
    let mut x_ptr = x.as_ptr();
    let mut n_arg = n;
    let mut total_ptr: *mut f64 = &mut total;
    let mut where_ptr = where_.as_mut_ptr();
    let mut args: Vec<*mut c_void> = vec![
        (&mut x_ptr) as *mut _ as *mut c_void,
        (&mut n_arg) as *mut _ as *mut c_void,
        (&mut total_ptr) as *mut _ as *mut c_void,
        (&mut where_ptr) as *mut _ as *mut c_void,
    ];
    // SAFETY: the arguments match block_sum's parameters; `where_` has a
    // slot for every thread of the grid.
    unsafe {
        module
            .launch("block_sum", blocks, threads, &mut args)
            .unwrap()
    };

    assert_eq!(total, f64::from(n * (n + 1) / 2));
    for b in 0..blocks {
        for t in 0..threads {
            let expected = (b * 1000 + t + 1_000_000 * (threads + blocks)) as i32;
            assert_eq!(
                where_[(b * threads + t) as usize],
                expected,
                "block {b} thread {t}"
            );
        }
    }
}

#[test]
fn the_same_kernel_compiles_with_nvrtc() {
    for target in CHECKED_TARGETS {
        compile(BLOCK_SUM, target).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn shim_compile_errors_carry_the_compiler_log() {
    let dir = tempfile::tempdir().unwrap();
    let broken = "extern \"C\" __global__ void k(double* y) { y[0] = undefined_name; }";
    let error = build_module(broken, &["k"], dir.path(), "broken").unwrap_err();
    assert!(error.to_string().contains("undefined_name"), "{error}");
}
