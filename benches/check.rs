//! `cargo bench --bench check`: time parse + check of a generated
//! 10,000-line model with a realistic mix of declarations, loops,
//! distributions and function calls. Prints a table; target < 50 ms total.

use std::fmt::Write;
use std::time::{Duration, Instant};

const TARGET_LINES: usize = 10_000;
const RUNS: usize = 15;
const TARGET_TOTAL: Duration = Duration::from_millis(50);

/// One model "unit" per index contributes lines to every block; units are
/// added until the program reaches `TARGET_LINES`.
#[derive(Default)]
struct Blocks {
    functions: String,
    data: String,
    transformed_data: String,
    parameters: String,
    transformed_parameters: String,
    model: String,
    generated_quantities: String,
}

impl Blocks {
    fn add_unit(&mut self, i: usize) {
        let b = self;
        let _ = write!(
            b.functions,
            "  real scaled_sq_{i}(real x, real s) {{\n    real y = x / s;\n    return y * y;\n  }}\n"
        );
        let _ = write!(
            b.data,
            "  vector[N] x_{i};\n  array[N] int<lower=0, upper=1> flag_{i};\n"
        );
        let _ = write!(
            b.transformed_data,
            "  real mean_x_{i} = mean(x_{i});\n  vector[N] xc_{i} = x_{i} - mean_x_{i};\n"
        );
        let _ = write!(
            b.parameters,
            "  real beta_{i};\n  real<lower=0> sigma_{i};\n  vector[K] z_{i};\n"
        );
        let _ = writeln!(
            b.transformed_parameters,
            "  vector[K] gamma_{i} = sigma_{i} * z_{i};"
        );
        let _ = write!(
            b.model,
            "  beta_{i} ~ normal(0, 2.5);\n  sigma_{i} ~ exponential(1);\n  \
             z_{i} ~ std_normal();\n  for (n in 1:N) {{\n    if (flag_{i}[n] == 1) {{\n      \
             target += -0.5 * scaled_sq_{i}(y[n] - beta_{i} * xc_{i}[n], sigma_{i});\n    \
             }} else {{\n      y[n] ~ normal(gamma_{i}[group[n]] + beta_{i} * xc_{i}[n], sigma_{i});\n    \
             }}\n  }}\n"
        );
        let _ = writeln!(
            b.generated_quantities,
            "  real y_rep_{i} = normal_rng(beta_{i} * mean_x_{i}, sigma_{i});"
        );
    }

    fn program(&self) -> String {
        format!(
            "functions {{\n{}}}\ndata {{\n  int<lower=1> N;\n  int<lower=1> K;\n  \
             array[N] int<lower=1, upper=K> group;\n  vector[N] y;\n{}}}\n\
             transformed data {{\n{}}}\nparameters {{\n{}}}\ntransformed parameters {{\n{}}}\n\
             model {{\n{}}}\ngenerated quantities {{\n{}}}\n",
            self.functions,
            self.data,
            self.transformed_data,
            self.parameters,
            self.transformed_parameters,
            self.model,
            self.generated_quantities
        )
    }
}

fn generate_model(target_lines: usize) -> String {
    let mut blocks = Blocks::default();
    let mut i = 0;
    loop {
        blocks.add_unit(i);
        i += 1;
        let program = blocks.program();
        if program.lines().count() >= target_lines {
            return program;
        }
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let source = generate_model(TARGET_LINES);
    let lines = source.lines().count();

    // Make sure the benchmark measures a valid program, not error paths.
    let front_end = language::compile_front_end(&source);
    let errors: Vec<_> = front_end
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    if let Some(first) = errors.first() {
        let rendered = language::diagnostic::render(
            "generated.stan",
            &source,
            std::slice::from_ref(*first),
            false,
        );
        panic!(
            "generated model has {} errors; first:\n{rendered}",
            errors.len()
        );
    }

    let mut parse_times = Vec::new();
    let mut check_times = Vec::new();
    let mut total_times = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let (program, _) = language::syntax::parse(&source);
        let parsed = Instant::now();
        let (checked, _) = language::check::check_program(&program);
        let done = Instant::now();
        std::hint::black_box(&checked);
        parse_times.push(parsed - start);
        check_times.push(done - parsed);
        total_times.push(done - start);
    }

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let total = median(total_times);
    println!(
        "front end on a generated model: {lines} lines, {} bytes, median of {RUNS} runs",
        source.len()
    );
    println!("{:<16} {:>10}", "phase", "time (ms)");
    println!("{:<16} {:>10.2}", "parse", ms(median(parse_times)));
    println!("{:<16} {:>10.2}", "check", ms(median(check_times)));
    println!("{:<16} {:>10.2}", "parse + check", ms(total));
    println!(
        "target < {} ms: {}",
        TARGET_TOTAL.as_millis(),
        if total < TARGET_TOTAL {
            "met"
        } else {
            "MISSED"
        }
    );
}
