//! The batched sampler executors (`bat run --batching pc|local`) and the
//! native one (`bat run --backend native`: sampler and gradient compiled
//! with g++) against the reference interpreter executor: identical events
//! (draws, statistics, adaptation, totals) chain by chain; a chain's draws
//! do not depend on the number of chains, the executor or the threads; and
//! 64 batched chains recover eight schools' reference posterior
//! (posteriordb).

use backend_cpu::exec::Batching;
use backend_native::sampler::Start;
use bat::sampler::native::NativeExecutor;
use bat::sampler::{
    BatchedExecutor, ChainJob, DrawValues, Event, InterpreterExecutor, SamplerExecutor, Settings,
};
use language::data::DataFile;
use language::mir::GradProgram;
use runtime::Model;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

fn posteriordb() -> PathBuf {
    let corpus = std::env::var_os("BAT_CORPUS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
        PathBuf::from,
    );
    let dir = corpus.join("posteriordb");
    assert!(
        dir.is_dir(),
        "corpus not found at {}: set BAT_CORPUS",
        dir.display()
    );
    dir
}

fn eight_schools() -> (Model, GradProgram) {
    let dir = posteriordb().join("eight_schools-eight_schools_noncentered");
    let source = std::fs::read_to_string(dir.join("model.stan")).unwrap();
    let (program, diagnostics) = language::compile_model(&source, "eight_schools");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    let data = DataFile::parse(&std::fs::read_to_string(dir.join("data.json")).unwrap()).unwrap();
    (Model::new(&program, &data).unwrap(), grad)
}

/// `examples/NAME.bat` with its data.
fn example(name: &str) -> (Model, GradProgram) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let source = std::fs::read_to_string(dir.join(format!("{name}.bat"))).unwrap();
    let (program, diagnostics) = language::compile_model(&source, name);
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    let data = std::fs::read_to_string(dir.join(format!("{name}.data.json"))).unwrap();
    (
        Model::new(&program, &DataFile::parse(&data).unwrap()).unwrap(),
        grad,
    )
}

fn settings(warmup: usize, samples: usize) -> Settings {
    Settings {
        save_warmup: true,
        ..Settings::stan_defaults(warmup, samples, 20261122)
    }
}

/// The messages `executor` sends for `chains`, as sent (not flattened).
fn messages(
    executor: &dyn SamplerExecutor,
    model: &Model,
    grad: &GradProgram,
    settings: &Settings,
    chains: &[usize],
) -> Vec<Event> {
    let job = ChainJob {
        model,
        grad,
        settings,
    };
    let (tx, rx) = mpsc::channel();
    let control = bat::sampler::Control::new();
    executor.run(&job, chains, &tx, &control);
    drop(tx);
    rx.into_iter().collect()
}

/// Every event of every chain, in order, debug-printed (NaN-safe equality),
/// draws as the file stores them (the native executor gives them so, the
/// others by name).
fn events(
    executor: &dyn SamplerExecutor,
    model: &Model,
    grad: &GradProgram,
    settings: &Settings,
    chains: &[usize],
) -> BTreeMap<usize, Vec<String>> {
    let mut out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for event in messages(executor, model, grad, settings, chains)
        .into_iter()
        .flat_map(Event::flatten)
    {
        let chain = match &event {
            Event::Iteration { chain, .. }
            | Event::Adaptation { chain, .. }
            | Event::Trajectory { chain, .. }
            | Event::Finished { chain, .. } => *chain,
            // Executor statistics, not a chain's.
            Event::Batches(_) => continue,
            Event::Many(_) => unreachable!("flattened"),
        };
        let event = match event {
            Event::Iteration { chain, mut record } => {
                record.values = (record.values.map(DrawValues::into_stored))
                    .transpose()
                    .unwrap_or_else(|e| panic!("chain {chain}: {e}"));
                Event::Iteration { chain, record }
            }
            other => other,
        };
        out.entry(chain).or_default().push(format!("{event:?}"));
    }
    out
}

fn batched(batching: Batching, threads: usize) -> BatchedExecutor {
    BatchedExecutor {
        batching,
        threads,
        gemm: true,
        lanes: 0,
    }
}

#[test]
fn batched_chains_equal_the_interpreter_chains() {
    let (model, grad) = eight_schools();
    let s = settings(40, 20);
    let chains = [0, 1, 2];
    let truth = events(
        &InterpreterExecutor { threads: 1 },
        &model,
        &grad,
        &s,
        &chains,
    );
    assert_eq!(truth.len(), 3);
    for chain in &chains {
        let evs = &truth[chain];
        assert_eq!(evs.len(), 40 + 20 + 2, "iterations, adaptation, finish");
        assert!(evs.last().unwrap().contains("Ok(ChainTotals"), "{evs:?}");
    }
    for batching in [Batching::ProgramCounter, Batching::Local] {
        let ours = events(&batched(batching, 1), &model, &grad, &s, &chains);
        for chain in &chains {
            for (k, (a, b)) in ours[chain].iter().zip(&truth[chain]).enumerate() {
                assert_eq!(a, b, "chain {chain} event {k}, {batching:?}");
            }
            assert_eq!(ours[chain].len(), truth[chain].len());
        }
    }
}

/// The emits of all lanes waiting in one batched host call reach the driver
/// as ONE message (`Event::Many`, iterations and adaptations only, one
/// per chain), not one per chain; flattened, every chain's events are the
/// interpreter's (the tests above).
#[test]
fn emits_of_a_batch_are_one_message() {
    let (model, grad) = eight_schools();
    let s = settings(10, 10);
    let chains: Vec<usize> = (0..8).collect();
    let sent = messages(
        &batched(Batching::ProgramCounter, 1),
        &model,
        &grad,
        &s,
        &chains,
    );
    let (mut messages, mut iterations, mut many) = (0, 0, 0);
    for event in sent {
        messages += 1;
        let events = match event {
            Event::Many(events) => {
                many += 1;
                assert!(events.len() > 1, "a single event is sent as itself");
                events
            }
            event => vec![event],
        };
        let mut seen = Vec::new();
        for event in events {
            match event {
                Event::Iteration { chain, .. } => {
                    iterations += 1;
                    seen.push(chain);
                }
                Event::Adaptation { chain, .. } | Event::Trajectory { chain, .. } => {
                    seen.push(chain)
                }
                Event::Finished { .. } | Event::Batches(_) => assert!(seen.is_empty()),
                Event::Many(_) => panic!("nested Event::Many"),
            }
        }
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n, "one event per chain in a message");
    }
    assert_eq!(iterations, 8 * 20);
    assert!(many > 0, "no batched emits");
    // Per chain 20 iterations, an adaptation and finished, plus the
    // batch's totals.
    let events = 8 * 22 + 1;
    eprintln!("{messages} messages for {events} events");
    assert!(messages < events, "{messages} messages for {events} events");
}

#[test]
fn a_chain_does_not_depend_on_chains_executor_or_threads() {
    let (model, grad) = eight_schools();
    let s = settings(30, 10);
    let reference = events(
        &batched(Batching::ProgramCounter, 1),
        &model,
        &grad,
        &s,
        &[0, 1],
    );
    for batching in [Batching::ProgramCounter, Batching::Local] {
        for threads in [1, 2] {
            let five = events(
                &batched(batching, threads),
                &model,
                &grad,
                &s,
                &[0, 1, 2, 3, 4],
            );
            assert_eq!(five.len(), 5);
            for chain in [0, 1] {
                assert_eq!(
                    five[&chain], reference[&chain],
                    "chain {chain}, {batching:?}, {threads} threads"
                );
            }
            assert_ne!(five[&0], five[&1], "chains differ from each other");
        }
    }
}

/// Fewer lanes than chains: a lane whose chain is done starts the next
/// waiting chain (the sub-batches share one queue), and every chain's events
/// are still the interpreter's — including chains that start in a lane
/// another chain used, at any point of the other lanes' trajectories.
#[test]
fn chains_queued_for_fewer_lanes_equal_the_interpreter_chains() {
    let (model, grad) = eight_schools();
    let s = settings(30, 10);
    let chains: Vec<usize> = (0..7).collect();
    let truth = events(
        &InterpreterExecutor { threads: 1 },
        &model,
        &grad,
        &s,
        &chains,
    );
    for (lanes, threads) in [(1, 1), (3, 1), (4, 2)] {
        let executor = BatchedExecutor {
            lanes,
            ..batched(Batching::ProgramCounter, threads)
        };
        let ours = events(&executor, &model, &grad, &s, &chains);
        assert_eq!(ours.len(), chains.len(), "{lanes} lanes: every chain ran");
        for chain in &chains {
            assert_eq!(
                ours[chain], truth[chain],
                "chain {chain}, {lanes} lanes, {threads} threads"
            );
        }
    }
}

/// A model whose draws have transformed parameters and generated
/// quantities with random draws (real and int), and a rare `reject` in
/// generated quantities that ends its chain.
fn generated() -> (Model, GradProgram) {
    let source = "data { int N; vector[N] y; }\n\
                  parameters { real mu; real<lower=0> sigma; }\n\
                  transformed parameters { real s2 = square(sigma); }\n\
                  model {\n  mu ~ normal(0, 5);\n  sigma ~ exponential(1);\n  \
                  y ~ normal(mu, sigma);\n}\n\
                  generated quantities {\n  \
                  array[N] real y_rep = normal_rng(mu + y, sigma);\n  \
                  int k = poisson_rng(3);\n  \
                  real m = mean(y_rep) + k;\n  \
                  if (uniform_rng(0, 1) < 0.03) reject(\"rare draw \", m);\n}\n";
    let (program, diagnostics) = language::compile_model(source, "generated");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    let data = DataFile::parse(r#"{"N": 5, "y": [0.3, -1.2, 2.5, 0.8, 1.1]}"#).unwrap();
    (Model::new(&program, &data).unwrap(), grad)
}

/// The draws' values of all lanes at an `emit_draw` are computed together
/// by the batched generated-quantities program (by the native executor, in
/// batches of draws): each chain's values,
/// random draws and `reject` (some chains end with it) are still the
/// interpreter's, with thinning and with or without warmup draws.
#[test]
fn batched_draws_values_equal_the_interpreters() {
    let (model, grad) = generated();
    let chains: Vec<usize> = (0..9).collect();
    for save_warmup in [true, false] {
        let s = Settings {
            thin: 3,
            save_warmup,
            ..settings(40, 40)
        };
        let truth = events(
            &InterpreterExecutor { threads: 1 },
            &model,
            &grad,
            &s,
            &chains,
        );
        let rejected = truth
            .values()
            .filter(|evs| evs.last().unwrap().contains("rare draw"))
            .count();
        assert!(
            (1..chains.len()).contains(&rejected),
            "some chains but not all end with the reject: {rejected}"
        );
        // The native executor computes kept draws' values in batches after
        // the lanes have moved on: a `reject` still ends its chain at that
        // draw (later draws the lane made are dropped).
        let executors: [(String, Box<dyn SamplerExecutor>); 4] = [
            (
                "pc, 1 thread".into(),
                Box::new(batched(Batching::ProgramCounter, 1)),
            ),
            (
                "pc, 2 threads".into(),
                Box::new(batched(Batching::ProgramCounter, 2)),
            ),
            (
                "local, 1 thread".into(),
                Box::new(batched(Batching::Local, 1)),
            ),
            (
                "native, 2 threads".into(),
                Box::new(native(&model, &grad, &s, 2)),
            ),
        ];
        for (name, executor) in &executors {
            let ours = events(executor.as_ref(), &model, &grad, &s, &chains);
            for chain in &chains {
                assert_eq!(
                    ours[chain], truth[chain],
                    "chain {chain}, {name}, save_warmup {save_warmup}"
                );
            }
        }
    }
}

/// The native executor compiled for `model` (the compile is cached).
fn native(model: &Model, grad: &GradProgram, s: &Settings, threads: usize) -> NativeExecutor {
    let job = ChainJob {
        model,
        grad,
        settings: s,
    };
    NativeExecutor::new(&job, threads).unwrap_or_else(|e| panic!("{e}"))
}

/// The compiled sampler gives every chain the interpreter's events, bit
/// for bit, with more chains than a group of lanes
/// (`backend_native::sampler::LANES_PER_GROUP`) on one and two
/// threads.
#[test]
fn native_chains_equal_the_interpreter_chains() {
    let (model, grad) = eight_schools();
    native_chains_equal_the_interpreters(&model, &grad, settings(40, 20), 19);
}

/// The same for a model with (0, 1)-bounded parameters (`inv_logit`, whose
/// branch-free `exp` the generated code must reproduce: with the C
/// library's `exp` a chain drifted off in the last bit after a dozen draws)
/// and loops that leave early.
#[test]
fn native_loop_jumps_chains_equal_the_interpreter_chains() {
    let (model, grad) = example("loop_jumps");
    native_chains_equal_the_interpreters(&model, &grad, settings(100, 50), 3);
}

/// Every chain of `n_chains` run by the native executor on one and two
/// threads equals the interpreter's, event for event; the interpreter's
/// events (for assertions about them).
fn native_chains_equal_the_interpreters(
    model: &Model,
    grad: &GradProgram,
    s: Settings,
    n_chains: usize,
) -> BTreeMap<usize, Vec<String>> {
    let chains: Vec<usize> = (0..n_chains).collect();
    let truth = events(
        &InterpreterExecutor { threads: 2 },
        model,
        grad,
        &s,
        &chains,
    );
    for threads in [1, 2] {
        let ours = events(&native(model, grad, &s, threads), model, grad, &s, &chains);
        assert_eq!(ours.len(), chains.len(), "every chain ran");
        for chain in &chains {
            assert_eq!(
                ours[chain], truth[chain],
                "chain {chain}, {threads} threads"
            );
        }
    }
    truth
}

/// A run that starts on the quick builds of the sampler and gradient
/// programs (g++ at a low `-O` level, compiled in a second where the full
/// build takes several) and takes the full builds between two turns gives
/// every chain the interpreter's events, bit for bit: the builds share
/// their source, so the lanes' state carries over and every value is
/// computed the same (eight schools, and a model with the generated code's
/// own branch-free `exp` and loops that leave early).
#[test]
fn native_chains_switching_builds_mid_run_equal_the_interpreter_chains() {
    for (name, (model, grad)) in [
        ("eight schools", eight_schools()),
        ("loop_jumps", example("loop_jumps")),
    ] {
        let s = settings(40, 20);
        // Two groups of lanes: four turns each.
        let chains: Vec<usize> = (0..19).collect();
        let truth = events(
            &InterpreterExecutor { threads: 2 },
            &model,
            &grad,
            &s,
            &chains,
        );
        for threads in [1, 2] {
            let job = ChainJob {
                model: &model,
                grad: &grad,
                settings: &s,
            };
            let switch_at = 3;
            let executor = NativeExecutor::starting(&job, threads, Start::Upgraded, switch_at)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                executor.starts_quick(),
                "{name}: starts on the quick builds"
            );
            let ours = events(&executor, &model, &grad, &s, &chains);
            assert_eq!(ours.len(), chains.len(), "{name}: every chain ran");
            for chain in &chains {
                assert_eq!(
                    ours[chain], truth[chain],
                    "{name}, chain {chain}, {threads} threads"
                );
            }
            let quick = executor.quick_turns.load(Ordering::Relaxed);
            let full = executor.full_turns.load(Ordering::Relaxed);
            assert_eq!(quick, switch_at, "{name}: turns on the quick builds");
            assert!(full >= 2, "{name}: turns on the full builds: {full}");
        }
    }
}

/// A model rejected where x > `limit`: with 0.8 every leapfrog step past
/// it fails the gradient; with −10 every initial point does.
fn rejecting(limit: &str) -> (Model, GradProgram) {
    let source = format!(
        "parameters {{ real x; }}\n\
         model {{\n  if (x > {limit}) reject(\"x too large: \", x);\n  x ~ normal(0, 1);\n}}\n"
    );
    let (program, diagnostics) = language::compile_model(&source, "rejecting");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    let data = DataFile::parse("{}").unwrap();
    (Model::new(&program, &data).unwrap(), grad)
}

/// The compiled sampler's dispatcher evaluates a lane's gradient itself
/// and hands a failed evaluation to the host, which evaluates it again
/// for the lane's error: chains whose proposals are rejected get the
/// interpreter's events too, and chains that cannot start fail with the
/// interpreter's error (the rejection's message).
#[test]
fn native_chains_with_rejections_equal_the_interpreter_chains() {
    let (model, grad) = rejecting("-10");
    let truth = native_chains_equal_the_interpreters(&model, &grad, settings(10, 10), 2);
    let failed = truth
        .values()
        .flatten()
        .filter(|e| e.contains("x too large"))
        .count();
    assert_eq!(failed, 2, "both chains fail with the rejection: {truth:?}");

    let (model, grad) = rejecting("0.8");
    let truth = native_chains_equal_the_interpreters(&model, &grad, settings(40, 30), 5);
    let divergent: usize = truth
        .values()
        .flatten()
        .filter(|e| e.contains("divergent: true"))
        .count();
    assert!(divergent > 10, "rejections make divergences: {divergent}");
}

/// A model with an op the compiled backend has no code for (`gamma_p`),
/// rejected where mu > `limit`.
fn gamma_p(limit: &str) -> (Model, GradProgram) {
    let source = format!(
        "parameters {{ real mu; real<lower=0, upper=1> x; }}\n\
         model {{\n  if (mu > {limit}) reject(\"mu too large: \", mu);\n  \
         mu ~ normal(1, 2);\n  target += gamma_p(2, x);\n}}\n"
    );
    let (program, diagnostics) = language::compile_model(&source, "gamma_p");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    (Model::new(&program, &DataFile::empty()).unwrap(), grad)
}

/// A gradient program the compiled backend cannot build runs on the CPU
/// backend's, the sampler program compiled: every chain gets the
/// interpreter's events bit for bit, rejections and chains that cannot
/// start included, on one and two threads, and when the run starts on the
/// sampler's quick build and takes its full build mid-run.
#[test]
fn native_chains_with_the_gradient_on_the_cpu_equal_the_interpreter_chains() {
    let (model, grad) = gamma_p("-10");
    let s = settings(10, 10);
    let job = ChainJob {
        model: &model,
        grad: &grad,
        settings: &s,
    };
    let executor = NativeExecutor::new(&job, 1).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(
            executor.gradient_fallback,
            Some(codegen::gradient::GeneratedCodeError::Refused(_))
        ),
        "the generator refuses gamma_p"
    );
    let truth = native_chains_equal_the_interpreters(&model, &grad, s, 2);
    let failed = (truth.values().flatten())
        .filter(|e| e.contains("mu too large"))
        .count();
    assert_eq!(failed, 2, "both chains fail with the rejection: {truth:?}");

    let (model, grad) = gamma_p("2.5");
    let s = settings(40, 20);
    let truth = native_chains_equal_the_interpreters(&model, &grad, s.clone(), 19);
    let divergent = (truth.values().flatten())
        .filter(|e| e.contains("divergent: true"))
        .count();
    assert!(divergent > 0, "rejections make divergences");
    let job = ChainJob {
        model: &model,
        grad: &grad,
        settings: &s,
    };
    let switch_at = 3;
    let executor = NativeExecutor::starting(&job, 2, Start::Upgraded, switch_at)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(executor.starts_quick(), "starts on the quick sampler build");
    let chains: Vec<usize> = (0..19).collect();
    let ours = events(&executor, &model, &grad, &s, &chains);
    assert_eq!(ours, truth);
    assert_eq!(executor.quick_turns.load(Ordering::Relaxed), switch_at);
    assert!(executor.full_turns.load(Ordering::Relaxed) >= 2);
}

/// Linear regression: the gradient multiplies a data matrix by every
/// lane's vector in one lane-parallel product (backend-cpu's GEMM path).
fn regression() -> (Model, GradProgram) {
    let source = "data { int N; int D; matrix[N, D] X; vector[N] y; }\n\
                  parameters { vector[D] beta; real<lower=0> sigma; }\n\
                  model {\n  beta ~ normal(0, 2);\n  sigma ~ exponential(1);\n  \
                  y ~ normal(X * beta, sigma);\n}\n";
    let (program, diagnostics) = language::compile_model(source, "regression");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    let (n, d) = (37, 6);
    let x: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..d).map(|j| ((7 * i + 3 * j) as f64).sin()).collect())
        .collect();
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mean: f64 = row
                .iter()
                .enumerate()
                .map(|(j, v)| v / (j + 1) as f64)
                .sum();
            mean + 0.3 * ((11 * i) as f64).cos()
        })
        .collect();
    let json = serde_json::json!({"N": n, "D": d, "X": x, "y": y}).to_string();
    let data = DataFile::parse(&json).unwrap();
    (Model::new(&program, &data).unwrap(), grad)
}

/// The matrix product is summed in the interpreter's order for every lane,
/// so a chain's draws equal the interpreter's bit for bit and do not depend
/// on how many chains share the batch or on the threads (a BLAS GEMM's
/// blocking would make them depend on the lane's position).
#[test]
fn a_regression_chain_is_the_interpreters_whatever_the_batch() {
    let (model, grad) = regression();
    let s = settings(30, 10);
    let truth = events(
        &InterpreterExecutor { threads: 1 },
        &model,
        &grad,
        &s,
        &[0, 1],
    );
    for (batching, threads, chains) in [
        (Batching::ProgramCounter, 1, vec![0, 1]),
        (Batching::ProgramCounter, 2, (0..13).collect()),
        (Batching::Local, 1, (0..5).collect()),
    ] {
        let ours = events(&batched(batching, threads), &model, &grad, &s, &chains);
        for chain in [0, 1] {
            assert_eq!(
                ours[&chain],
                truth[&chain],
                "chain {chain}, {batching:?}, {threads} threads, {} chains",
                chains.len()
            );
        }
    }
}

/// Slow in a debug build on a shared machine: `cargo test --release --test
/// run_batched -- --ignored`.
#[test]
#[ignore = "slow in a debug build; run with --release -- --ignored"]
fn sixty_four_batched_chains_recover_the_reference_posterior() {
    let (model, grad) = eight_schools();
    let mut s = settings(300, 100);
    s.save_warmup = false;
    let chains: Vec<usize> = (0..64).collect();
    let sent = messages(
        &batched(Batching::ProgramCounter, 2),
        &model,
        &grad,
        &s,
        &chains,
    );
    // Per chain, the means of each quantity (for Monte-Carlo errors from
    // chain means) and all draws (for the sd).
    let mut draws: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    let mut finished = 0;
    let mut gradient_evaluations = 0;
    let mut batches = bat::sampler::BatchTotals::default();
    for event in sent.into_iter().flat_map(Event::flatten) {
        match event {
            Event::Batches(totals) => batches.add(totals),
            Event::Iteration { chain, record } => {
                // Warmup iterations are not kept (`save_warmup` is off).
                let Some(values) = record.values else {
                    assert!(record.warmup, "a sampling iteration without values");
                    continue;
                };
                let DrawValues::Named(values) = values else {
                    panic!("the batched executors' draws by name")
                };
                for (name, value) in values {
                    let mut flat = Vec::new();
                    value.flatten_reals(&mut flat);
                    for (k, x) in flat.into_iter().enumerate() {
                        let key = if name == "mu" || name == "tau" {
                            name.clone()
                        } else {
                            format!("{name}[{}]", k + 1)
                        };
                        let per_chain = draws.entry(key).or_insert_with(|| vec![Vec::new(); 64]);
                        per_chain[chain].push(x);
                    }
                }
            }
            Event::Finished { result, .. } => {
                gradient_evaluations += result.expect("chain finishes").gradient_evaluations;
                finished += 1;
            }
            Event::Adaptation { .. } | Event::Trajectory { .. } | Event::Many(_) => {}
        }
    }
    assert_eq!(finished, 64);
    // Every gradient was evaluated in a batched call, and the chains met
    // at the gradient: 64 chains on 2 threads are two sub-batches of 32;
    // the gradient barrier keeps the calls well filled.
    assert_eq!(batches.lanes, gradient_evaluations);
    assert_eq!(batches.slots, 32 * batches.calls);
    let fullness = batches.fullness().expect("batched calls");
    assert!(
        fullness > 0.5,
        "gradient calls were {:.0}% full on average ({batches:?})",
        100.0 * fullness
    );
    // Eight schools' gradient is straight-line code run for exactly the
    // chains that asked: every lane slot of its blocks is useful, and
    // each call ran at least its statements once per lane.
    let blocks = batches.gradient_blocks;
    assert!(blocks.slots >= batches.lanes, "{batches:?}");
    assert_eq!(blocks.useful, blocks.slots, "{batches:?}");
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            posteriordb().join("eight_schools-eight_schools_noncentered/reference.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let params = reference["params"].as_object().unwrap();
    assert!(params.len() >= 10);
    for (name, r) in params {
        let per_chain = &draws[name];
        assert!(per_chain.iter().all(|c| c.len() == 100), "{name}");
        let means: Vec<f64> = per_chain.iter().map(|c| mean(c)).collect();
        let all: Vec<f64> = per_chain.iter().flatten().copied().collect();
        let (m, sd) = (mean(&all), sd(&all));
        // MCSE from the spread of the 64 chain means (independent chains).
        let mcse = sd_of(&means) / (means.len() as f64).sqrt();
        let ref_mean = r["mean"].as_f64().unwrap();
        let ref_sd = r["sd"].as_f64().unwrap();
        let ref_mcse = ref_sd / (r["n_draws"].as_f64().unwrap()).sqrt();
        let tol = 5.0 * (mcse * mcse + ref_mcse * ref_mcse).sqrt();
        assert!(
            (m - ref_mean).abs() <= tol,
            "{name}: mean {m} vs reference {ref_mean} (tolerance {tol})"
        );
        assert!(
            (sd / ref_sd - 1.0).abs() <= 0.2,
            "{name}: sd {sd} vs reference {ref_sd}"
        );
    }
}

/// The acceptance statistic of every iteration of `chains` run by the
/// program-counter executor on two threads.
fn accept_stats(
    model: &Model,
    grad: &GradProgram,
    settings: &Settings,
    chains: &[usize],
) -> Vec<f64> {
    messages(
        &batched(Batching::ProgramCounter, 2),
        model,
        grad,
        settings,
        chains,
    )
    .into_iter()
    .flat_map(Event::flatten)
    .filter_map(|e| match e {
        Event::Iteration { record, .. } => Some(record.stats.accept_stat),
        _ => None,
    })
    .collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn sd_of(xs: &[f64]) -> f64 {
    sd(xs)
}

fn sd(xs: &[f64]) -> f64 {
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() as f64 - 1.0)).sqrt()
}

/// Pooled warmup (NUTS or ChEES, as `settings` says) of `chains` on
/// `executor`, in one process.
fn pooled_warmup(
    executor: &dyn SamplerExecutor,
    model: &Model,
    grad: &GradProgram,
    settings: &Settings,
    chains: &[usize],
) -> bat::sampler::pooled::Pooled {
    let job = ChainJob {
        model,
        grad,
        settings,
    };
    let control = bat::sampler::Control::new();
    let one_process = bat::sampler::pooled::OneProcess;
    bat::sampler::pooled::warmup(executor, &job, chains, chains.len(), &one_process, &control)
        .unwrap_or_else(|e| panic!("{e:?}"))
}

/// Pooled warmup pools in chain order, so its kernel and every chain's
/// end point are the same bit for bit whatever runs the segments: the
/// interpreter, the batched executors on one or two threads, or the
/// compiled sampler; and the kernel is a real adaptation (a step size
/// whose mean acceptance over the chains is near the target, a metric
/// near the posterior's variances of the unconstrained coordinates).
#[test]
fn pooled_warmup_is_the_same_on_every_executor() {
    let (model, grad) = eight_schools();
    let s = settings(60, 0);
    let chains: Vec<usize> = (0..24).collect();
    let run = |executor: &dyn SamplerExecutor| pooled_warmup(executor, &model, &grad, &s, &chains);
    let truth = run(&InterpreterExecutor { threads: 2 });
    for threads in [1, 2] {
        for batching in [Batching::ProgramCounter, Batching::Local] {
            let ours = run(&batched(batching, threads));
            assert_eq!(ours.kernel, truth.kernel, "{batching:?}, {threads} threads");
            assert_eq!(ours.starts, truth.starts, "{batching:?}, {threads} threads");
        }
        let ours = run(&native(&model, &grad, &s, threads));
        assert_eq!(ours.kernel, truth.kernel, "native, {threads} threads");
        assert_eq!(ours.starts, truth.starts, "native, {threads} threads");
    }
    assert_eq!(truth.starts.len(), chains.len());
    assert!(truth.starts.iter().flatten().all(|x| x.is_finite()));
    // Eight schools (non-centered): the unconstrained coordinates are
    // eight standard normals (theta_trans), mu and log tau; their
    // posterior variances are about 1, 3.3² and 1.1² (posteriordb's
    // reference draws).
    let bat::sampler::InvMetric::Diag(metric) = &truth.kernel.inv_metric else {
        panic!("a diagonal metric: {:?}", truth.kernel.inv_metric);
    };
    assert_eq!(metric.len(), 10);
    for (i, v) in metric.iter().enumerate().take(8) {
        assert!((0.5..2.0).contains(v), "theta_trans[{}]: {metric:?}", i + 1);
    }
    assert!((3.0..25.0).contains(&metric[8]), "mu: {metric:?}");
    assert!((0.3..4.0).contains(&metric[9]), "log tau: {metric:?}");
    // The sampling run with this kernel accepts about as often as the
    // target asks.
    let sampling = Settings {
        num_warmup: 0,
        num_samples: 40,
        init: bat::sampler::Init::PerChain(truth.starts.clone()),
        kernel: Some(truth.kernel.clone()),
        ..settings(0, 40)
    };
    let stats = accept_stats(&model, &grad, &sampling, &chains);
    assert_eq!(stats.len(), chains.len() * 40);
    let accept = mean(&stats);
    assert!((0.7..0.9).contains(&accept), "mean acceptance {accept}");
}

/// ChEES-HMC (`--algorithm chees`): its pooled warmup pools in chain
/// order too, so the adapted kernel (step size, metric, trajectory length)
/// and every chain's end point are the same bit for bit on the
/// interpreter, the batched executor and the compiled sampler, and so are
/// the draws of the sampling run that follows; the trajectory length is
/// adapted (several leapfrog steps, not the one it starts from), and the
/// sampling run accepts about as often as the target asks.
#[test]
fn chees_is_the_same_on_every_executor() {
    use bat::sampler::{Algorithm, Init};
    let (model, grad) = eight_schools();
    let s = Settings {
        algorithm: Algorithm::Chees,
        adapt_delta: 0.651,
        ..settings(100, 0)
    };
    let chains: Vec<usize> = (0..16).collect();
    let run = |executor: &dyn SamplerExecutor| pooled_warmup(executor, &model, &grad, &s, &chains);
    let truth = run(&InterpreterExecutor { threads: 2 });
    let ours = run(&batched(Batching::ProgramCounter, 2));
    assert_eq!(ours.kernel, truth.kernel, "pc");
    assert_eq!(ours.starts, truth.starts, "pc");
    let ours = run(&native(&model, &grad, &s, 2));
    assert_eq!(ours.kernel, truth.kernel, "native");
    assert_eq!(ours.starts, truth.starts, "native");
    let kernel = &truth.kernel;
    let length = kernel.trajectory_length.expect("a trajectory length");
    let steps = length / kernel.step_size;
    assert!(steps > 2.0, "{steps} steps of {}", kernel.step_size);
    let sampling = Settings {
        num_warmup: 0,
        num_samples: 30,
        init: Init::PerChain(truth.starts.clone()),
        kernel: Some(truth.kernel.clone()),
        jitter_start: 100,
        ..s.clone()
    };
    let reference = events(
        &InterpreterExecutor { threads: 1 },
        &model,
        &grad,
        &sampling,
        &chains,
    );
    assert_eq!(reference.len(), chains.len());
    assert_eq!(
        events(
            &native(&model, &grad, &sampling, 2),
            &model,
            &grad,
            &sampling,
            &chains
        ),
        reference,
        "native"
    );
    let stats: Vec<(f64, i64)> = messages(
        &batched(Batching::ProgramCounter, 2),
        &model,
        &grad,
        &sampling,
        &chains,
    )
    .into_iter()
    .flat_map(Event::flatten)
    .filter_map(|e| match e {
        Event::Iteration { record, .. } => {
            Some((record.stats.accept_stat, record.stats.n_leapfrog))
        }
        Event::Trajectory { .. } => panic!("a sampling run reports no trajectories"),
        _ => None,
    })
    .collect();
    assert_eq!(stats.len(), chains.len() * 30);
    let accept = mean(&stats.iter().map(|s| s.0).collect::<Vec<_>>());
    assert!((0.5..0.85).contains(&accept), "mean acceptance {accept}");
    // Jittered lengths: every chain takes ceil(u·T/ε) steps, u in (0, 1).
    let most = steps.ceil() as i64;
    assert!(stats.iter().all(|s| (1..=most).contains(&s.1)), "{most}");
    assert!(stats.iter().any(|s| s.1 > 1));
}

/// `examples/NAME.bat` with `data` (Stan JSON) instead of its data file.
fn example_with(name: &str, data: &str) -> (Model, GradProgram) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let source = std::fs::read_to_string(dir.join(format!("{name}.bat"))).unwrap();
    let (program, diagnostics) = language::compile_model(&source, name);
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let grad = language::ad::gradient(&program).unwrap();
    (
        Model::new(&program, &DataFile::parse(data).unwrap()).unwrap(),
        grad,
    )
}

/// The d×d inverse metric of a dense kernel.
fn dense_matrix(kernel: &bat::sampler::Kernel) -> Vec<f64> {
    match &kernel.inv_metric {
        bat::sampler::InvMetric::Dense { matrix, .. } => matrix.to_vec(),
        other => panic!("a dense metric: {other:?}"),
    }
}

/// Pooled warmup of a dense metric (`--metric dense`) pools in chain
/// order too: the kernel and every chain's end point are the same bit for
/// bit on the interpreter, the batched executors (one and two threads)
/// and the compiled sampler, and so are the events of the sampling run
/// with that kernel; the same holds with ChEES. The adapted matrix is
/// eight schools' posterior covariance of the unconstrained coordinates
/// (variances as the diagonal test's, symmetric, positive definite).
#[test]
fn dense_pooled_warmup_is_the_same_on_every_executor() {
    use bat::sampler::{Algorithm, Init, Metric};
    let (model, grad) = eight_schools();
    let s = Settings {
        metric: Metric::Dense,
        ..settings(60, 0)
    };
    let chains: Vec<usize> = (0..24).collect();
    let run = |executor: &dyn SamplerExecutor| pooled_warmup(executor, &model, &grad, &s, &chains);
    let truth = run(&InterpreterExecutor { threads: 2 });
    for threads in [1, 2] {
        for batching in [Batching::ProgramCounter, Batching::Local] {
            let ours = run(&batched(batching, threads));
            assert_eq!(ours.kernel, truth.kernel, "{batching:?}, {threads} threads");
            assert_eq!(ours.starts, truth.starts, "{batching:?}, {threads} threads");
        }
        let ours = run(&native(&model, &grad, &s, threads));
        assert_eq!(ours.kernel, truth.kernel, "native, {threads} threads");
        assert_eq!(ours.starts, truth.starts, "native, {threads} threads");
    }
    assert!(truth.starts.iter().flatten().all(|x| x.is_finite()));
    let matrix = dense_matrix(&truth.kernel);
    assert_eq!(matrix.len(), 100);
    for i in 0..10 {
        for j in 0..10 {
            assert_eq!(matrix[i * 10 + j], matrix[j * 10 + i]);
        }
    }
    let variance = |i: usize| matrix[i * 10 + i];
    for i in 0..8 {
        assert!((0.5..2.0).contains(&variance(i)), "theta_trans[{}]", i + 1);
    }
    assert!((3.0..25.0).contains(&variance(8)), "mu: {}", variance(8));
    assert!(
        (0.3..4.0).contains(&variance(9)),
        "log tau: {}",
        variance(9)
    );
    // The sampling run with the dense kernel: every executor's events are
    // the interpreter's, and it accepts about as often as the target asks.
    let sampling = Settings {
        num_warmup: 0,
        num_samples: 20,
        init: Init::PerChain(truth.starts.clone()),
        kernel: Some(truth.kernel.clone()),
        ..s.clone()
    };
    let reference = events(
        &InterpreterExecutor { threads: 1 },
        &model,
        &grad,
        &sampling,
        &chains,
    );
    assert_eq!(reference.len(), chains.len());
    for batching in [Batching::ProgramCounter, Batching::Local] {
        let ours = events(&batched(batching, 2), &model, &grad, &sampling, &chains);
        assert_eq!(ours, reference, "{batching:?}");
    }
    let ours = events(
        &native(&model, &grad, &sampling, 2),
        &model,
        &grad,
        &sampling,
        &chains,
    );
    assert_eq!(ours, reference, "native");
    let accept = mean(&accept_stats(&model, &grad, &sampling, &chains));
    assert!((0.7..0.9).contains(&accept), "mean acceptance {accept}");
    // ChEES with a dense metric.
    let chees = Settings {
        algorithm: Algorithm::Chees,
        adapt_delta: 0.651,
        ..s.clone()
    };
    let run = |executor: &dyn SamplerExecutor| {
        pooled_warmup(executor, &model, &grad, &chees, &chains[..16])
    };
    let truth = run(&InterpreterExecutor { threads: 2 });
    let ours = run(&batched(Batching::ProgramCounter, 2));
    assert_eq!(ours.kernel, truth.kernel, "chees, pc");
    assert_eq!(ours.starts, truth.starts, "chees, pc");
    let ours = run(&native(&model, &grad, &chees, 2));
    assert_eq!(ours.kernel, truth.kernel, "chees, native");
    assert_eq!(ours.starts, truth.starts, "chees, native");
    dense_matrix(&truth.kernel);
    let length = truth.kernel.trajectory_length.expect("a trajectory length");
    assert!(length / truth.kernel.step_size > 2.0, "{length}");
}

/// A 4-d Gaussian with the AR(1) covariance Σᵢⱼ = 0.9^|i−j| (correlation
/// 0.9 between neighbours) and mean linspaced(−1, 1): pooled warmup of a
/// dense metric finds Σ, and the draws of the sampling run with it have
/// the posterior's mean and covariance.
#[test]
fn dense_pooled_warmup_learns_a_correlated_gaussian() {
    use bat::sampler::{Init, Metric};
    let (model, grad) = example_with("correlated_gaussian_100", r#"{"D": 4, "rho": 0.9}"#);
    let dim = 4;
    let sigma = |i: usize, j: usize| 0.9f64.powi((i as i32 - j as i32).abs());
    let mu = |i: usize| -1.0 + 2.0 * i as f64 / 3.0;
    let s = Settings {
        metric: Metric::Dense,
        ..settings(200, 0)
    };
    let chains: Vec<usize> = (0..64).collect();
    let executor = batched(Batching::ProgramCounter, 2);
    let warmed = pooled_warmup(&executor, &model, &grad, &s, &chains);
    // The last window (iterations 100..150 of Stan's windows for 200)
    // holds 50 × 64 = 3,200 draws; at an effective quarter of them, an
    // entry's standard error is at most √(2/800) = 0.05 (Σᵢᵢ = 1): 0.2 is
    // four of them.
    let matrix = dense_matrix(&warmed.kernel);
    for i in 0..dim {
        for j in 0..dim {
            let got = matrix[i * dim + j];
            assert!(
                (got - sigma(i, j)).abs() < 0.2,
                "inverse metric [{i}, {j}] {got} vs {}: {matrix:?}",
                sigma(i, j)
            );
        }
    }
    let samples = 200;
    let sampling = Settings {
        num_warmup: 0,
        num_samples: samples,
        init: Init::PerChain(warmed.starts.clone()),
        kernel: Some(warmed.kernel.clone()),
        ..s.clone()
    };
    let mut draws: Vec<Vec<Vec<f64>>> = vec![Vec::new(); chains.len()];
    for event in messages(&executor, &model, &grad, &sampling, &chains)
        .into_iter()
        .flat_map(Event::flatten)
    {
        if let Event::Iteration { chain, record } = event {
            let values = record.values.expect("a kept draw").into_stored().unwrap();
            let DrawValues::Stored { numbers, .. } = values else {
                unreachable!()
            };
            draws[chain].push(numbers[..dim].to_vec());
        }
    }
    assert!(draws.iter().all(|d| d.len() == samples));
    // Each chain's mean, and its mean of (xᵢ − μᵢ)(xⱼ − μⱼ) about the
    // known mean (unbiased for Σᵢⱼ): the chains are independent, so the
    // spread of these over the 64 chains gives their MCSE.
    let per_chain = |f: &dyn Fn(&[f64]) -> f64| -> Vec<f64> {
        draws
            .iter()
            .map(|chain| chain.iter().map(|x| f(x)).sum::<f64>() / samples as f64)
            .collect()
    };
    let within = |values: Vec<f64>, truth: f64, what: &str| {
        let estimate = mean(&values);
        let mcse = sd(&values) / (values.len() as f64).sqrt();
        assert!(
            (estimate - truth).abs() <= 5.0 * mcse,
            "{what}: {estimate} vs {truth} (MCSE {mcse})"
        );
    };
    for i in 0..dim {
        within(per_chain(&|x| x[i]), mu(i), &format!("mean of x[{i}]"));
        for j in 0..=i {
            let product = move |x: &[f64]| (x[i] - mu(i)) * (x[j] - mu(j));
            within(per_chain(&product), sigma(i, j), &format!("Σ[{i}, {j}]"));
        }
    }
}
