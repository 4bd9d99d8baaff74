//! Checking must stay linear: a 10,000-line model checks in < 50 ms in a
//! release build (the debug build gets a looser bound that still catches
//! quadratic behaviour).

use std::fmt::Write;
use std::time::{Duration, Instant};

/// A realistic 10,000+ line program: many variables in scope, user
/// functions, overloaded built-ins, distributions, loops and indexing.
fn big_model() -> String {
    let mut s = String::from("functions {\n");
    for i in 0..200 {
        writeln!(
            s,
            "  real f{i}(real x, vector v) {{\n    return x * sum(v) + log1p_exp(x) + {i};\n  }}"
        )
        .unwrap();
    }
    s.push_str("}\ndata {\n  int N;\n  vector[N] y;\n  matrix[N, N] X;\n");
    for i in 0..1000 {
        writeln!(s, "  real d{i};").unwrap();
    }
    s.push_str("}\nparameters {\n  real mu;\n  real<lower=0> sigma;\n  vector[N] beta;\n}\n");
    s.push_str("model {\n");
    for i in 0..1400 {
        writeln!(
            s,
            "  real t{i} = f{}(d{} + mu, beta) / sigma;",
            i % 200,
            i % 1000
        )
        .unwrap();
        writeln!(s, "  y ~ normal(X * beta + t{i}, sigma);").unwrap();
        writeln!(
            s,
            "  for (k in 1:N) {{\n    target += normal_lpdf(y[k] | mu + t{i}, exp(d{}));\n  }}",
            i % 1000
        )
        .unwrap();
        writeln!(
            s,
            "  target += dot_product(beta, col(X, 1)) * inv_logit(t{i});"
        )
        .unwrap();
    }
    s.push_str("}\n");
    s
}

/// CPU time of this process (all threads: the checker runs on its own
/// thread), from `/proc/self/stat` (user + system, in clock ticks of
/// 10 ms; enough runs make that resolution small).
fn process_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 of the whole line.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

#[test]
fn checking_a_10k_line_model_is_fast() {
    let source = big_model();
    let lines = source.lines().count();
    assert!(lines >= 10_000, "model has only {lines} lines");
    let (program, parse_diags) = language::syntax::parse(&source);
    assert!(parse_diags.is_empty(), "{parse_diags:#?}");
    // Warm the built-in table (built once per process, not per check).
    let _ = language::builtins::signatures_ref("normal_lpdf");
    // The machine is shared: measure the CPU time spent checking rather
    // than wall time, which other processes inflate; fall back to wall
    // time where /proc is unavailable.
    let runs = if cfg!(debug_assertions) { 3 } else { 20 };
    let mut best = Duration::MAX;
    let cpu_before = process_cpu_time();
    for _ in 0..runs {
        let start = Instant::now();
        let (checked, diags) = language::check::check_program(&program);
        best = best.min(start.elapsed());
        assert!(
            diags.iter().all(|d| !d.is_error()),
            "{:#?}",
            &diags[..diags.len().min(3)]
        );
        assert!(
            checked.expr_types.len() > 30_000,
            "{}",
            checked.expr_types.len()
        );
    }
    if let (Some(before), Some(after)) = (cpu_before, process_cpu_time()) {
        best = (after - before) / runs;
    }
    let limit = if cfg!(debug_assertions) {
        Duration::from_millis(3000)
    } else {
        Duration::from_millis(50)
    };
    println!("checked {lines} lines in {best:?} of CPU per run (limit {limit:?})");
    assert!(best < limit, "checking took {best:?}, limit {limit:?}");
}
