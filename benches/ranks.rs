//! `cargo bench --features mpi --bench ranks`: the main job (eight schools,
//! non-centered, 1000 chains × (300 warmup + 300 sampling), `--backend
//! native`) as one process with 2 threads and as `mpirun -n 2` with 1
//! thread per rank, alternating, on this machine (loopback). Prints per
//! run the sampling time `bat run` reports (from the first iteration to
//! the file written: rank 0's, which waits for every rank) and the whole
//! wall time (launch, model compilation on every rank, summary), then the
//! medians and the MPI run's sampling time over the single process's.
//! Each run also reports its CPU seconds while sampling (`BAT_RANK_TIMES=1`):
//! the one process's, and the busiest rank's. On cores shared with other
//! work, wall times favour whichever run gets more of them; the busiest
//! rank's CPU over the one process's divided by the ranks estimates the
//! ratio of the sampling times on otherwise idle cores.
//!
//! Settings (environment): `BAT_BENCH_ROUNDS` (default 3),
//! `BAT_BENCH_CHAINS` (default 1000), `BAT_BENCH_WARMUP` /
//! `BAT_BENCH_SAMPLES` (default 300 each), `BAT_BENCH_RANKS` (default 2;
//! each rank gets 2 ÷ ranks threads, at least 1).

#[path = "../tests/support/mpirun.rs"]
mod mpirun;

use mpirun::mpirun;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Sampling seconds as `bat run` reports them, wall seconds, CPU seconds
/// while sampling of the busiest rank.
type Run = (f64, f64, f64);

/// One of a [`Run`]'s figures.
type Field = fn(&Run) -> f64;

fn timed(mut command: Command) -> Run {
    let started = Instant::now();
    let out = command
        .env("BAT_RANK_TIMES", "1")
        .output()
        .expect("run bat");
    let wall = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // "1000 chains: 600000/600000 iterations in 12.3 s, ..."
    let sampling = stderr
        .lines()
        .find_map(|line| {
            let (_, rest) = line.split_once(" iterations in ")?;
            rest.split_once(" s")?.0.parse::<f64>().ok()
        })
        .unwrap_or_else(|| panic!("no sampling time in:\n{stderr}"));
    // "rank 0 of 2: sampling 1.9 s wall; CPU s: collector 0.3, main thread
    // 0.2, samplers 1.4; event bytes ..."
    let cpu = stderr
        .lines()
        .filter_map(|line| {
            let (_, parts) = line.split_once("CPU s: ")?;
            let parts = parts.split_once(';')?.0;
            parts
                .split(", ")
                .map(|part| part.rsplit_once(' ')?.1.parse::<f64>().ok())
                .sum::<Option<f64>>()
        })
        .fold(f64::NAN, f64::max);
    (sampling, wall, cpu)
}

fn median(xs: &[f64]) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let rounds = setting("BAT_BENCH_ROUNDS", 3);
    let chains = setting("BAT_BENCH_CHAINS", 1000).to_string();
    let warmup = setting("BAT_BENCH_WARMUP", 300).to_string();
    let samples = setting("BAT_BENCH_SAMPLES", 300).to_string();
    let ranks = setting("BAT_BENCH_RANKS", 2).max(1);
    let rank_threads = (2 / ranks).max(1).to_string();
    let bat = env!("CARGO_BIN_EXE_bat");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = root.join("examples/eight_schools_noncentered.bat");
    let dir = std::env::temp_dir().join(format!("bat-bench-mpi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("draws.h5");
    let args = |threads: &str| -> Vec<String> {
        [
            "run",
            model.to_str().unwrap(),
            "--chains",
            &chains,
            "--warmup",
            &warmup,
            "--samples",
            &samples,
            "--backend",
            "native",
            "--seed",
            "20240601",
            "--threads",
            threads,
            "-o",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    let single = || {
        let mut command = Command::new(bat);
        command.args(args("2"));
        command
    };
    let ranked = || {
        let mut command = mpirun(ranks);
        command.arg(bat).args(args(&rank_threads));
        command
    };
    // Compiles the native code once (cached), outside the timings.
    let _ = timed(single());
    println!(
        "eight schools, {chains} chains × ({warmup} + {samples}), --backend native; \
         sampling, wall and CPU seconds (the busiest rank's)"
    );
    println!(
        "{:>5}  {:>28}  {:>28}",
        "round",
        "1 process × 2 threads",
        format!("{ranks} ranks × {rank_threads} thread")
    );
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let a = timed(single());
        let b = timed(ranked());
        println!(
            "{round:>5}  {:>8.2} {:>9.2} {:>9.2}  {:>8.2} {:>9.2} {:>9.2}",
            a.0, a.1, a.2, b.0, b.1, b.2
        );
        one.push(a);
        many.push(b);
    }
    let med = |xs: &[Run], f: Field| median(&xs.iter().map(f).collect::<Vec<_>>());
    let [sampling, wall, cpu]: [Field; 3] = [|x| x.0, |x| x.1, |x| x.2];
    println!(
        "{:>5}  {:>8.2} {:>9.2} {:>9.2}  {:>8.2} {:>9.2} {:>9.2}",
        "median",
        med(&one, sampling),
        med(&one, wall),
        med(&one, cpu),
        med(&many, sampling),
        med(&many, wall),
        med(&many, cpu)
    );
    println!(
        "MPI sampling time ÷ one process's: {:.3} (medians)",
        med(&many, sampling) / med(&one, sampling)
    );
    println!(
        "busiest rank's CPU ÷ (the one process's ÷ ranks): {:.3} (medians)",
        med(&many, cpu) / (med(&one, cpu) / ranks as f64)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
