//! `cargo bench -p backend-cpu --bench batched_gradient`: gradient
//! evaluations per second of the batched ops (run by the structured test
//! driver, one thread) for eight schools and the N = 10,000, D = 100
//! logistic regression (run `scripts/setup.sh` first: it generates that
//! data set), over Z ∈ {1, 16, 256, 1024} lanes; for the logistic
//! regression also the achieved GFLOP/s (4·N·D flops per gradient: X β and
//! Xᵀ ȳ) against this machine's measured float64 GEMM rate. Prints a table.

use backend_cpu::structured::{Branching, GradientRunner, Options};
use language::data::DataFile;
use runtime::{Model, Rng};
use std::path::Path;
use std::time::{Duration, Instant};

const MIN_TIME: Duration = Duration::from_millis(1500);
const SIZES: &[usize] = &[1, 16, 256, 1024];

/// Calls per second of `f`, run for at least `MIN_TIME` (after one warm-up).
fn rate(mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < MIN_TIME {
        f();
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// float64 GEMM GFLOP/s of this machine (one thread, n×n×n).
fn gemm_gflops(n: usize) -> f64 {
    let a: Vec<f64> = (0..n * n).map(|i| (i % 7) as f64 * 0.1).collect();
    let b: Vec<f64> = (0..n * n).map(|i| (i % 5) as f64 * 0.2).collect();
    let mut c = vec![0.0; n * n];
    let per_s = rate(|| unsafe {
        // SAFETY: row-major n×n matrices, all in bounds.
        matrixmultiply::dgemm(
            n,
            n,
            n,
            1.0,
            a.as_ptr(),
            n as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        )
    });
    std::hint::black_box(&c);
    per_s * 2.0 * (n * n * n) as f64 / 1e9
}

struct Case {
    name: &'static str,
    model: &'static str,
    data: &'static str,
    /// Flops of one gradient in products with shared matrices.
    gemm_flops: Option<f64>,
}

fn main() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let gemm = gemm_gflops(1024);
    println!("float64 GEMM (matrixmultiply, 1 thread, 1024³): {gemm:.2} GFLOP/s");
    let cases = [
        Case {
            name: "eight schools (non-centered)",
            model: "eight_schools_noncentered.bat",
            data: "eight_schools_noncentered.data.json",
            gemm_flops: None,
        },
        Case {
            name: "logistic regression N=10k D=100",
            model: "logistic_regression.bat",
            data: "logistic_regression.data.json",
            gemm_flops: Some(4.0 * 10_000.0 * 100.0),
        },
    ];
    println!(
        "{:<34} {:>6} {:>16} {:>10} {:>10}",
        "model", "Z", "grad evals/s", "GFLOP/s", "of GEMM"
    );
    // BAT_BENCH_ONLY=TEXT: only the models whose name contains TEXT.
    let only = std::env::var("BAT_BENCH_ONLY").unwrap_or_default();
    for case in cases {
        if !case.name.contains(&only) {
            continue;
        }
        let source = std::fs::read_to_string(examples.join(case.model)).expect("example model");
        let Ok(data_text) = std::fs::read_to_string(examples.join(case.data)) else {
            println!("{:<34} missing data (run scripts/setup.sh)", case.name);
            continue;
        };
        let (program, _) = language::compile_model(&source, case.model);
        let program = program.expect("example compiles");
        let data = DataFile::parse(&data_text).expect("data");
        let model = Model::new(&program, &data).expect("model");
        let g = language::ad::gradient(&program).expect("gradient program");
        let runner = GradientRunner::new(&model, &g);
        let n = model.num_unconstrained();
        let options = Options {
            branching: Branching::Mask,
            gemm: true,
        };
        // BAT_BENCH_Z=N: only batches of N lanes.
        let only_z: Option<usize> = std::env::var("BAT_BENCH_Z")
            .ok()
            .and_then(|v| v.parse().ok());
        for &z in SIZES.iter().filter(|&&z| only_z.is_none_or(|o| o == z)) {
            let thetas: Vec<Vec<f64>> = (0..z)
                .map(|l| {
                    let mut rng = Rng::new(1, l as u32, 0);
                    (0..n).map(|_| rng.uniform() - 0.5).collect()
                })
                .collect();
            let batches = rate(|| {
                let out = runner.run(&thetas, true, options).expect("runs");
                assert!(out.iter().all(Result::is_ok), "a lane failed");
            });
            let evals = batches * z as f64;
            let (gflops, share) = match case.gemm_flops {
                Some(f) => {
                    let g = evals * f / 1e9;
                    (format!("{g:.2}"), format!("{:.0}%", 100.0 * g / gemm))
                }
                None => ("-".into(), "-".into()),
            };
            println!(
                "{:<34} {:>6} {:>16.0} {:>10} {:>10}",
                case.name, z, evals, gflops, share
            );
        }
    }
}
