//! `cargo bench --bench logdensity`: evaluations per second of the scalar
//! reference path — the interpreter running the log density, and running
//! the gradient program made by bat's AD — one parameter vector at a time,
//! for eight schools and the N = 10,000, D = 100 logistic regression
//! (run `scripts/setup.sh` first: it generates that data set). Prints a
//! table. This is the baseline the batched executors are measured against.
//! The gradient program is run as `language::ad::gradient` makes it
//! (simplified) and as the AD transformation writes it (unsimplified),
//! so the table shows what the simplification gains.

use language::data::DataFile;
use runtime::Model;
use std::path::Path;
use std::time::{Duration, Instant};

const MIN_TIME: Duration = Duration::from_secs(2);

struct Case {
    name: &'static str,
    model: &'static str,
    data: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "eight schools (non-centered)",
        model: "eight_schools_noncentered.bat",
        data: "eight_schools_noncentered.data.json",
    },
    Case {
        name: "logistic regression N=10k D=100",
        model: "logistic_regression.bat",
        data: "logistic_regression.data.json",
    },
];

/// Calls per second of `f`, run for at least `MIN_TIME`.
fn rate(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < MIN_TIME {
        f();
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    println!(
        "{:<34} {:>8} {:>14} {:>14} {:>10} {:>18} {:>12}",
        "model",
        "dims",
        "lp evals/s",
        "grad evals/s",
        "grad/lp",
        "unsimplified grad/s",
        "simplified ×"
    );
    for case in CASES {
        let source = std::fs::read_to_string(examples.join(case.model)).expect("example model");
        let data_path = examples.join(case.data);
        let Ok(data_text) = std::fs::read_to_string(&data_path) else {
            println!(
                "{:<34} missing {} (run scripts/setup.sh)",
                case.name,
                data_path.display()
            );
            continue;
        };
        let (Some(mir), _) = language::compile_model(&source, case.model) else {
            panic!("{}: does not compile", case.model);
        };
        let grad = language::ad::gradient(&mir).expect("differentiates");
        let raw = language::ad::gradient_unsimplified(&mir).expect("differentiates");
        let model = Model::new(&mir, &DataFile::parse(&data_text).expect("data")).expect("model");
        let n = model.num_unconstrained();
        let theta: Vec<f64> = (0..n).map(|i| ((i * 7 % 11) as f64 - 5.0) / 10.0).collect();
        let lp_rate = rate(|| {
            std::hint::black_box(model.log_density(&theta, true).unwrap());
        });
        let grad_rate = rate(|| {
            std::hint::black_box(model.log_density_gradient(&grad, &theta, true).unwrap());
        });
        let raw_rate = rate(|| {
            std::hint::black_box(model.log_density_gradient(&raw, &theta, true).unwrap());
        });
        println!(
            "{:<34} {:>8} {:>14.0} {:>14.0} {:>10.2} {:>18.0} {:>12.2}",
            case.name,
            n,
            lp_rate,
            grad_rate,
            lp_rate / grad_rate,
            raw_rate,
            grad_rate / raw_rate
        );
    }
}
