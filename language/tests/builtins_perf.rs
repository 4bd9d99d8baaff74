//! Resolution must be cheap: checking a 10,000-line model (one or two
//! built-in calls per line) must take well under 50 ms in release builds.
//! Debug builds are ~10x slower, so the bound asserted here is loose; the
//! figures are printed with `--nocapture`.

use std::time::Instant;

use language::builtins;
use language::types::{AdLevel, Type};

fn arg(ty: Type) -> (AdLevel, Type) {
    (AdLevel::AutoDiff, ty)
}

#[test]
fn table_builds_once_and_resolution_is_fast() {
    let start = Instant::now();
    assert!(builtins::is_builtin("normal_lpdf"));
    let build = start.elapsed();

    let calls: Vec<(&str, Vec<(AdLevel, Type)>)> = vec![
        (
            "normal_lpdf",
            vec![arg(Type::Vector), arg(Type::Real), arg(Type::Real)],
        ),
        (
            "student_t_lpdf",
            vec![
                arg(Type::Vector),
                arg(Type::Int),
                arg(Type::Vector),
                arg(Type::Real),
            ],
        ),
        ("exp", vec![arg(Type::Vector)]),
        ("multiply", vec![arg(Type::Matrix), arg(Type::Vector)]),
        ("add", vec![arg(Type::Real), arg(Type::Int)]),
        ("pow", vec![arg(Type::Real), arg(Type::Int)]),
        ("log_sum_exp", vec![arg(Type::Vector)]),
        (
            "binomial_logit_lpmf",
            vec![
                arg(Type::array_of(Type::Int, 1)),
                arg(Type::array_of(Type::Int, 1)),
                arg(Type::Vector),
            ],
        ),
        ("inv_logit", vec![arg(Type::array_of(Type::Real, 2))]),
        ("rep_vector", vec![arg(Type::Int), arg(Type::Int)]),
    ];
    let n = 20_000;
    let start = Instant::now();
    for i in 0..n {
        let (name, args) = &calls[i % calls.len()];
        assert!(builtins::resolve(name, args).is_ok(), "{name}");
    }
    let resolve = start.elapsed();
    eprintln!(
        "table build {:.1} ms; {n} resolutions {:.1} ms ({:.2} us each)",
        build.as_secs_f64() * 1e3,
        resolve.as_secs_f64() * 1e3,
        resolve.as_secs_f64() * 1e6 / n as f64
    );
    let limit_ms = if cfg!(debug_assertions) {
        2_000.0
    } else {
        50.0
    };
    assert!(resolve.as_secs_f64() * 1e3 < limit_ms, "{resolve:?}");
}
