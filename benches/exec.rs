//! `cargo bench --bench exec`: log-density gradient
//! evaluations per second through the batched executors (local static and
//! program-counter batching; one thread and all cores) for eight schools,
//! the N = 10,000, D = 100 logistic regression (run `scripts/setup.sh`
//! first: it generates that data set) and a 100-dimensional correlated
//! Gaussian, over Z ∈ {1, 16, 256, 1024} lanes at random inits. Also:
//! this machine's float64 GEMM rate and the logistic regression's achieved
//! GFLOP/s (4·N·D flops per gradient: Xβ and Xᵀȳ) — at Z = 1024 also as a
//! share of the GEMM rate measured right before and after that row —, and hand-written Rust
//! gradients of the same models (checked against bat's) as the Z = 1
//! baseline, and the same gradient compiled to machine code
//! (`backend_native::gradient`: the generated code built with g++, one thread,
//! lane by lane; `bat bench --backend native`), checked against the
//! hand-written one. Prints a table. `BAT_BENCH_ONLY=NAME` runs the
//! problems whose name contains NAME.
//!
//! It compares two engines' crates (backend-cpu's executors and
//! backend-native's compiled gradient), so it lives in the root crate,
//! above both: neither engine's crate depends on the other.
//!
//! It allocates with mimalloc, as the `bat` binary does (the system
//! allocator made the batched figures 5–15% lower than `bat bench`'s, so
//! they did not describe what users run).

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use language::data::DataFile;
use language::value::Value;
use runtime::{Model, Rng};
use std::path::Path;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MIN_TIME: Duration = Duration::from_millis(1000);
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

/// float64 GEMM GFLOP/s of this machine on `threads` threads at once at
/// the logistic regression's shape: X (N×D) times a D×Z block, each
/// thread its share of the Z columns (as bat splits a batch). Measured on
/// all threads together, not assumed to be one thread's rate times the
/// thread count (the cores share the L3 cache and memory bandwidth).
fn gemm_gflops(n: usize, d: usize, z: usize, threads: usize) -> f64 {
    let a: Vec<f64> = (0..n * d).map(|i| (i % 7) as f64 * 0.1).collect();
    let share = z.div_ceil(threads);
    let ready = std::sync::Barrier::new(threads);
    let (a, ready) = (&a, &ready);
    // Each thread's lane-columns multiplied per second, 2·N·D flops each.
    let columns_per_s: f64 = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let cols = share.min(z - (t * share).min(z));
                scope.spawn(move || {
                    let b: Vec<f64> = (0..d * cols).map(|i| (i % 5) as f64 * 0.2).collect();
                    let mut c = vec![0.0; n * cols];
                    let mut product = || unsafe {
                        // SAFETY: row-major n×d, d×cols and n×cols
                        // matrices, all in bounds.
                        matrixmultiply::dgemm(
                            n,
                            d,
                            cols,
                            1.0,
                            a.as_ptr(),
                            d as isize,
                            1,
                            b.as_ptr(),
                            cols as isize,
                            1,
                            0.0,
                            c.as_mut_ptr(),
                            cols as isize,
                            1,
                        )
                    };
                    product();
                    ready.wait();
                    let per_s = cols as f64 * rate(&mut product);
                    std::hint::black_box(&c);
                    per_s
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    columns_per_s * 2.0 * (n * d) as f64 / 1e9
}

fn load(model: &Path, data: &Path) -> Option<(language::batch::cfg::Program, Model)> {
    let source = std::fs::read_to_string(model).ok()?;
    let (program, ds) = language::compile_model(&source, "bench");
    let program = program.unwrap_or_else(|| panic!("{ds:?}"));
    let data = DataFile::parse(&std::fs::read_to_string(data).ok()?).unwrap();
    let m = Model::new(&program, &data).unwrap();
    let g = language::ad::gradient(&program).unwrap();
    Some((language::batch::lower_gradient(&g).unwrap(), m))
}

fn reals(v: &Value) -> Vec<f64> {
    runtime::lane::flat_reals(v)
}

/// Hand-written log density gradients (with the Jacobian, constants
/// dropped as `~` drops them).
fn eight_schools(y: &[f64], sigma: &[f64], th: &[f64], grad: &mut [f64]) -> f64 {
    let (mu, u) = (th[0], th[1]);
    let tau = u.exp();
    let mut lp = -0.5 * (mu / 5.0) * (mu / 5.0) - (tau / 5.0 * (tau / 5.0)).ln_1p() + u;
    grad[0] = -mu / 25.0;
    grad[1] = -2.0 * tau * tau / (25.0 + tau * tau) + 1.0;
    for j in 0..y.len() {
        let t = th[2 + j];
        let theta = mu + tau * t;
        let z = (y[j] - theta) / sigma[j];
        lp += -0.5 * t * t - 0.5 * z * z;
        let dtheta = z / sigma[j];
        grad[0] += dtheta;
        grad[1] += dtheta * tau * t;
        grad[2 + j] = -t + dtheta * tau;
    }
    lp
}

fn logistic(x: &[f64], n: usize, d: usize, y: &[f64], th: &[f64], grad: &mut [f64]) -> f64 {
    // x is column-major N×D, as bat stores matrices.
    let alpha = th[0];
    let beta = &th[1..];
    let mut eta = vec![alpha; n];
    for (k, b) in beta.iter().enumerate() {
        let col = &x[k * n..(k + 1) * n];
        for i in 0..n {
            eta[i] += col[i] * b;
        }
    }
    let mut lp =
        -0.5 * (alpha / 2.5) * (alpha / 2.5) - 0.5 * beta.iter().map(|b| b * b).sum::<f64>();
    let mut resid = vec![0.0; n];
    for i in 0..n {
        let e = eta[i];
        lp += y[i] * e
            - if e > 0.0 {
                e + (-e).exp().ln_1p()
            } else {
                e.exp().ln_1p()
            };
        resid[i] = y[i] - 1.0 / (1.0 + (-e).exp());
    }
    grad[0] = -alpha / 6.25 + resid.iter().sum::<f64>();
    for k in 0..d {
        let col = &x[k * n..(k + 1) * n];
        grad[1 + k] = -beta[k] + col.iter().zip(&resid).map(|(a, r)| a * r).sum::<f64>();
    }
    lp
}

fn gaussian(p: &[f64], mu: &[f64], th: &[f64], grad: &mut [f64]) -> f64 {
    let d = mu.len();
    let r: Vec<f64> = th.iter().zip(mu).map(|(x, m)| x - m).collect();
    let mut pr = vec![0.0; d];
    for (k, rk) in r.iter().enumerate() {
        for i in 0..d {
            pr[i] += p[k * d + i] * rk;
        }
    }
    for i in 0..d {
        grad[i] = -pr[i];
    }
    -0.5 * r.iter().zip(&pr).map(|(a, b)| a * b).sum::<f64>()
}

type Hand = Box<dyn Fn(&[f64], &mut [f64]) -> f64>;

fn hand_written(name: &str, m: &Model) -> Hand {
    let get = |v: &str| reals(m.data_value(v).unwrap());
    match name {
        "eight_schools_noncentered" => {
            let (y, sigma) = (get("y"), get("sigma"));
            Box::new(move |th, g| eight_schools(&y, &sigma, th, g))
        }
        "logistic_regression" => {
            let (x, y) = (get("X"), get("y"));
            let n = y.len();
            let d = x.len() / n;
            Box::new(move |th, g| logistic(&x, n, d, &y, th, g))
        }
        _ => {
            let (p, mu) = (get("P"), get("mu"));
            Box::new(move |th, g| gaussian(&p, &mu, th, g))
        }
    }
}

fn thetas(n: usize, z: usize) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(20261122, l as u32, 0);
            (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect()
}

fn main() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for name in [
        "eight_schools_noncentered",
        "logistic_regression",
        "correlated_gaussian_100",
    ] {
        if std::env::var("BAT_BENCH_ONLY").is_ok_and(|only| !name.contains(&only)) {
            continue;
        }
        let model = examples.join(format!("{name}.bat"));
        let Some((cfg, m)) = load(&model, &model.with_extension("data.json")) else {
            println!("{name}: no data (run scripts/setup.sh)\n");
            continue;
        };
        let n = m.num_unconstrained();
        let hand = hand_written(name, &m);
        // The baseline computes the same gradient as bat.
        let g = language::ad::gradient(m.program()).unwrap();
        let th = &thetas(n, 1)[0];
        let mut grad = vec![0.0; n];
        let lp = hand(th, &mut grad);
        let (lp0, grad0) = m.log_density_gradient(&g, th, true).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()));
        assert!(close(lp, lp0), "{name}: hand-written lp {lp} vs {lp0}");
        for (a, b) in grad.iter().zip(&grad0) {
            assert!(close(*a, *b), "{name}: hand-written gradient {a} vs {b}");
        }
        let hand_rate = rate(|| {
            std::hint::black_box(hand(std::hint::black_box(th), &mut grad));
        });
        println!("{name} (hand-written Rust gradient: {hand_rate:.0} grad/s)");
        let gemm = (name == "logistic_regression").then(|| {
            let x = m.data_value("X").unwrap();
            let Value::Matrix { rows, cols, .. } = x else {
                unreachable!()
            };
            let rates: Vec<f64> = [1, cores]
                .iter()
                .map(|&t| gemm_gflops(*rows, *cols, 1024, t))
                .collect();
            (*rows, *cols, rates)
        });
        if let Some((_, _, rates)) = &gemm {
            println!(
                "  float64 GEMM (matrixmultiply, X·B at Z=1024): {:.2} GFLOP/s on 1 thread, \
                 {:.2} GFLOP/s on {cores} threads at once",
                rates[0], rates[1]
            );
        }
        println!(
            "  {:>8} {:>8} {:>7} {:>14} {:>12}",
            "batching", "threads", "Z", "grad evals/s", "vs hand Z=1"
        );
        for batching in [Batching::Local, Batching::ProgramCounter] {
            for threads in [1, cores] {
                let config = ExecConfig {
                    batching,
                    threads,
                    ..ExecConfig::default()
                };
                let (cfg, m) = (
                    cfg.clone(),
                    Model::new(m.program(), &{
                        let data =
                            std::fs::read_to_string(model.with_extension("data.json")).unwrap();
                        DataFile::parse(&data).unwrap()
                    })
                    .unwrap(),
                );
                let batched = BatchedModel::new(cfg, m, config).unwrap();
                for &z in SIZES {
                    let th = thetas(n, z);
                    // At Z = 1024 the GEMM rate is measured again right
                    // before and after the gradients (the machine is shared:
                    // a rate measured minutes earlier, under other load,
                    // moved the ratio by ±10 points).
                    let near = |gemm: &Option<(usize, usize, Vec<f64>)>| {
                        gemm.as_ref()
                            .filter(|_| z == 1024)
                            .map(|(rows, cols, _)| gemm_gflops(*rows, *cols, 1024, threads))
                    };
                    let before = near(&gemm);
                    let per_s = z as f64
                        * rate(|| {
                            std::hint::black_box(batched.log_density_gradient(&th, true).unwrap());
                        });
                    let after = near(&gemm);
                    let mut line = format!(
                        "  {:>8} {:>8} {:>7} {:>14.0} {:>12.3}",
                        batching.name(),
                        threads,
                        z,
                        per_s,
                        per_s / hand_rate
                    );
                    if let Some((rows, cols, rates)) = &gemm {
                        let gflops = per_s * 4.0 * (rows * cols) as f64 / 1e9;
                        let gemm_rate = if threads == 1 { rates[0] } else { rates[1] };
                        line += &format!(
                            "   {gflops:.2} GFLOP/s = {:.0}% of GEMM on {threads} thread(s)",
                            100.0 * gflops / gemm_rate
                        );
                        if let (Some(b), Some(a)) = (before, after) {
                            let adjacent = (a + b) / 2.0;
                            line += &format!(
                                "; {:.0}% of the GEMM rate measured just before and after ({b:.1}, {a:.1})",
                                100.0 * gflops / adjacent
                            );
                        }
                    }
                    println!("{line}");
                }
            }
        }
        native_rows(&cfg, &m, n, hand_rate, th, &grad);
        println!();
    }
}

/// The compiled gradient (one thread) at every Z, after checking it
/// against the hand-written one (`th`, `hand_grad`).
fn native_rows(
    cfg: &language::batch::cfg::Program,
    m: &Model,
    n: usize,
    hand_rate: f64,
    th: &[f64],
    hand_grad: &[f64],
) {
    use backend_native::gradient::NativeGradient;
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()));
    let mut native = match NativeGradient::new(cfg, m.clone(), 1) {
        Ok(native) => native,
        Err(e) => {
            println!("  native: {e}");
            return;
        }
    };
    let one = native.log_density_gradient_columns(th, 1, true).unwrap();
    let (_, grad) = one[0].as_ref().unwrap();
    for (a, b) in grad.iter().zip(hand_grad) {
        assert!(close(*a, *b), "native gradient {a} vs hand-written {b}");
    }
    for &z in SIZES {
        let mut native = native.sibling(z);
        let lanes = thetas(n, z);
        let columns: Vec<f64> = (0..n)
            .flat_map(|c| lanes.iter().map(move |t| t[c]))
            .collect();
        let per_s = z as f64
            * rate(|| {
                std::hint::black_box(native.evaluate_columns(&columns, z, true).unwrap());
            });
        println!(
            "  {:>8} {:>8} {:>7} {:>14.0} {:>12.3}",
            "native",
            1,
            z,
            per_s,
            per_s / hand_rate
        );
    }
}
