//! The CUDA benchmark's whole path (`bat::cuda_bench`, `cargo bench
//! --bench cuda`) on the stub driver with tiny settings, as
//! `BAT_BENCH_ALLOW_STUB=1` runs it: gradient evaluations, the sampler on
//! the device, the draws file and its summary, the bandwidth model. The
//! table must have a row per problem and chain count, every figure finite
//! and positive, and say that the stub's figures are not GPU speeds.
//!
//! cudarc loads libcuda once per process, so the benchmark runs in a child
//! process (this test binary again, running one `#[ignore]`d test) whose
//! library path starts with the stub.

use std::path::PathBuf;
use std::process::Command;

use bat::cuda_bench::{BenchSettings, COLUMNS, run};

const PROBLEMS: [&str; 2] = ["gaussian_100", "eight_schools"];
const CHAINS: [usize; 2] = [1, 3];

fn settings(allow_stub: bool, scratch: PathBuf) -> BenchSettings {
    BenchSettings {
        // The logistic regression (10,000 × 100 data) runs the same code;
        // on the CPU behind the stub it is too slow for a test.
        problems: PROBLEMS.iter().map(|p| p.to_string()).collect(),
        chains: CHAINS.to_vec(),
        warmup: 30,
        samples: 30,
        gradient_seconds: 0.05,
        allow_stub,
        examples: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples"),
        scratch,
    }
}

#[test]
fn the_benchmark_runs_its_whole_path_on_the_stub_driver() {
    let stub = tempfile::tempdir().unwrap();
    backend_cuda::stub::build_stub_libcuda(stub.path()).unwrap();
    let path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_runs_the_benchmark",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:{path}", stub.path().display()),
        )
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "{text}"
    );
    eprintln!("{text}");
}

#[test]
#[ignore = "child process of the_benchmark_runs_its_whole_path_on_the_stub_driver"]
fn child_runs_the_benchmark() {
    let scratch = tempfile::tempdir().unwrap();
    // Without BAT_BENCH_ALLOW_STUB the stub is not a GPU: skipped.
    let mut out = Vec::new();
    run(&settings(false, scratch.path().into()), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "skipped: `bat stub device (CUDA on CPU)` is the stub driver of the tests, not a GPU \
         (BAT_BENCH_ALLOW_STUB=1 runs on it anyway)\n"
    );

    let mut out = Vec::new();
    run(&settings(true, scratch.path().into()), &mut out).unwrap();
    let table = String::from_utf8(out).unwrap();
    println!("{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "device: bat stub device (CUDA on CPU) (compute capability 9.0)"
    );
    assert!(
        lines[1].starts_with("STUB DRIVER") && lines[1].ends_with("are not GPU speeds"),
        "{table}"
    );
    assert_eq!(
        lines[2],
        "peak memory bandwidth 16.0 GB/s (2 x 1000 MHz memory clock x 64-bit bus)"
    );
    assert!(lines[3].starts_with("bandwidth % = "), "{table}");
    assert!(
        lines[4].starts_with("NUTS: 30 warmup + 30 sampling"),
        "{table}"
    );
    // The header names every column, in order.
    let mut rest = lines[5];
    for column in COLUMNS {
        let at = rest
            .find(column)
            .unwrap_or_else(|| panic!("no column `{column}` in order: {table}"));
        rest = &rest[at + column.len()..];
    }
    assert!(rest.is_empty(), "{table}");
    let rows = &lines[6..];
    assert_eq!(rows.len(), PROBLEMS.len() * CHAINS.len(), "{table}");
    let mut expected = Vec::new();
    for problem in ["gaussian_100", "eight_schools"] {
        for chains in CHAINS {
            expected.push((problem, chains));
        }
    }
    for (row, (problem, chains)) in rows.iter().zip(expected) {
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields.len(), COLUMNS.len(), "{row}");
        assert_eq!(fields[0], problem, "{row}");
        assert_eq!(fields[1], chains.to_string(), "{row}");
        for (column, field) in COLUMNS[2..].iter().zip(&fields[2..]) {
            let value: f64 = field
                .parse()
                .unwrap_or_else(|_| panic!("{column} is `{field}`: {row}"));
            assert!(
                value.is_finite() && value > 0.0,
                "{column} is {value}: {row}"
            );
        }
    }
}

#[test]
fn without_a_driver_the_benchmark_says_why_it_skipped() {
    if backend_cuda::probe::driver_library_present() {
        return; // a machine with a driver runs the benchmark instead
    }
    let scratch = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    run(&settings(true, scratch.path().into()), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "skipped: no CUDA driver found; use --backend cpu\n"
    );
}
