//! The batched sampler executors (`bat run --batching pc|local`) against
//! the reference interpreter executor: identical events (draws, statistics,
//! adaptation, totals) chain by chain; a chain's draws do not depend on the
//! number of chains, the executor or the threads; and 64 batched chains
//! recover eight schools' reference posterior (posteriordb).

use backend_cpu::exec::Batching;
use bat::sampler::{
    BatchedExecutor, ChainJob, Event, Init, InterpreterExecutor, SamplerExecutor, Settings,
};
use language::ad::GradProgram;
use language::data::DataFile;
use language::interp::Model;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
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

fn settings(warmup: usize, samples: usize) -> Settings {
    Settings {
        num_warmup: warmup,
        num_samples: samples,
        thin: 1,
        max_depth: 10,
        adapt_delta: 0.8,
        save_warmup: true,
        seed: 20261122,
        init: Init::Radius(2.0),
    }
}

/// Every event of every chain, in order, debug-printed (NaN-safe equality).
fn events(
    executor: &dyn SamplerExecutor,
    model: &Model,
    grad: &GradProgram,
    settings: &Settings,
    chains: &[usize],
) -> BTreeMap<usize, Vec<String>> {
    let job = ChainJob {
        model,
        grad,
        settings,
    };
    let (tx, rx) = mpsc::channel();
    let stop = AtomicBool::new(false);
    executor.run(&job, chains, &tx, &stop);
    drop(tx);
    let mut out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for event in rx {
        let chain = match &event {
            Event::Iteration { chain, .. }
            | Event::Adaptation { chain, .. }
            | Event::Finished { chain, .. } => *chain,
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

/// Slow in a debug build on a shared machine: `cargo test --release --test
/// run_batched -- --ignored`.
#[test]
#[ignore = "slow in a debug build; run with --release -- --ignored"]
fn sixty_four_batched_chains_recover_the_reference_posterior() {
    let (model, grad) = eight_schools();
    let mut s = settings(300, 100);
    s.save_warmup = false;
    let chains: Vec<usize> = (0..64).collect();
    let job = ChainJob {
        model: &model,
        grad: &grad,
        settings: &s,
    };
    let (tx, rx) = mpsc::channel();
    let stop = AtomicBool::new(false);
    batched(Batching::ProgramCounter, 2).run(&job, &chains, &tx, &stop);
    drop(tx);
    // Per chain, the means of each quantity (for Monte-Carlo errors from
    // chain means) and all draws (for the sd).
    let mut draws: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    let mut finished = 0;
    for event in rx {
        match event {
            Event::Iteration { chain, record } => {
                for (name, value) in record.values.expect("kept") {
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
                result.expect("chain finishes");
                finished += 1;
            }
            Event::Adaptation { .. } => {}
        }
    }
    assert_eq!(finished, 64);
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
