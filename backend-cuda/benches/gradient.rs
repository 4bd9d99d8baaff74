//! Gradient evaluations per second on a CUDA device: `cargo bench -p
//! backend-cuda`. Runs only when a real device is present; otherwise it
//! prints why it skipped (no driver, no device, or the stub driver the
//! tests use, which runs kernels on the CPU).
//!
//! For each model and lane count it draws Stan-style random inits
//! (uniform(−2, 2) on the unconstrained scale), evaluates all lanes
//! together again and again for about `BAT_BENCH_SECONDS` (default 2)
//! and prints lanes × evaluations / seconds, with the host loop's steps
//! (blocks launched) per evaluation. The full device benchmark (ESS/s of
//! the sampler on the device, the fraction of peak memory bandwidth, 1 to
//! 16384 chains) is the root crate's `cargo bench --bench cuda`.

use std::path::PathBuf;
use std::time::Instant;

use backend_cuda::gradient::GradientDevice;
use backend_cuda::stub::STUB_DEVICE_NAME;
use language::data::DataFile;
use runtime::{Model, Rng};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn main() {
    let info = match backend_cuda::probe() {
        Ok(info) => info,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    if info.name == STUB_DEVICE_NAME {
        println!(
            "skipped: `{}` is the stub driver of the tests, not a GPU",
            info.name
        );
        return;
    }
    println!(
        "device: {} (compute capability {}.{})",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let seconds: f64 = std::env::var("BAT_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    println!(
        "{:<28} {:>7} {:>14} {:>12} {:>7}",
        "model", "lanes", "grad evals/s", "ms/batch", "steps"
    );
    for (name, lane_counts) in [
        ("eight_schools_noncentered", &[1024usize, 4096, 16384][..]),
        ("correlated_gaussian_100", &[1024, 4096]),
        ("logistic_regression", &[256, 1024]),
        ("loop_jumps", &[1024]),
    ] {
        let path = examples().join(format!("{name}.bat"));
        let data = path.with_extension("data.json");
        let Ok(data_text) = std::fs::read_to_string(&data) else {
            println!(
                "{name:<28} skipped: no {} (run scripts/setup.sh)",
                data.display()
            );
            continue;
        };
        let source = std::fs::read_to_string(&path).unwrap();
        let program = language::compile_model(&source, name).0.unwrap();
        let grad = language::ad::gradient(&program).unwrap();
        let cfg = language::batch::lower_gradient(&grad).unwrap();
        let model = Model::new(&program, &DataFile::parse(&data_text).unwrap()).unwrap();
        let n = model.num_unconstrained();
        for &lanes in lane_counts {
            let mut device = match GradientDevice::new(&cfg, model.clone(), lanes) {
                Ok(device) => device,
                Err(e) => {
                    println!("{name:<28} {lanes:>7} failed: {e}");
                    continue;
                }
            };
            let thetas: Vec<Vec<f64>> = (0..lanes)
                .map(|l| {
                    let mut rng = Rng::new(1, l as u32, 0);
                    (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
                })
                .collect();
            // Warm up (module load, first launches), then measure.
            device.log_density_gradient(&thetas, true).unwrap();
            let started = Instant::now();
            let mut batches = 0usize;
            while started.elapsed().as_secs_f64() < seconds || batches == 0 {
                device.log_density_gradient(&thetas, true).unwrap();
                batches += 1;
            }
            let elapsed = started.elapsed().as_secs_f64();
            println!(
                "{name:<28} {lanes:>7} {:>14.0} {:>12.3} {:>7}",
                (lanes * batches) as f64 / elapsed,
                1e3 * elapsed / batches as f64,
                device.last_steps
            );
        }
    }
}
