//! `bat run --target-ess N --max-rhat R`: a run stopped once its draws are
//! enough keeps, in every chain, the first draws of the same run without a
//! target, bit for bit; those draws meet the target by `bat summary`'s own
//! reading of the file, and the checkpoint before did not; a target out of
//! reach runs to `--samples`; the file says which happened; bad input is
//! refused with a message.

#[path = "support/run.rs"]
mod support;

use bat::output::{DrawFile, DrawReader, StoredVariable, read_draws};
use bat::sampler::target::{Checkpoints, EssTarget};
use bat::summary::{ChainDraws, QuantitySummary, report_for_file};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{bat, s, text, venv_python};

fn eight_schools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/eight_schools_noncentered.bat")
}

const CHAINS: usize = 6;
const SAMPLES: usize = 400;
const TARGET: f64 = 300.0;
const MAX_RHAT: f64 = 1.01;

/// Eight schools, 6 chains, on `backend`, with `extra` flags: the draws
/// file and stderr (the run must succeed).
fn run(dir: &Path, name: &str, backend: &str, extra: &[&str]) -> (DrawFile, String) {
    let output = dir.join(name);
    let samples = SAMPLES.to_string();
    let chains = CHAINS.to_string();
    let model = eight_schools();
    let mut args = vec![
        "run",
        s(&model),
        "--backend",
        backend,
        "--chains",
        &chains,
        "--warmup",
        "150",
        "--samples",
        &samples,
        "--seed",
        "4242",
        "-o",
        s(&output),
    ];
    args.extend(extra);
    let out = bat(&args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
    (read_draws(&output).unwrap(), stderr)
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|x| x.to_bits()).collect()
}

/// The first `draws` draws of each chain of `variable`, as stored.
fn first_draws(variable: &StoredVariable, draws: usize) -> Vec<f64> {
    let per_draw = variable.elements_per_draw().max(1);
    let row = variable.n_draws * per_draw;
    (0..variable.n_chains)
        .flat_map(|c| &variable.values[c * row..c * row + draws * per_draw])
        .copied()
        .collect()
}

/// Every (chain, draw) variable of the stopped file equals the first
/// `draws` draws of the full run's, bit for bit.
fn assert_prefix(stopped: &DrawFile, full: &DrawFile, draws: usize) {
    let stats = |f: &DrawFile| f.sample_stats.clone().expect("sample_stats");
    for (ours, theirs) in [
        (&stopped.posterior, &full.posterior),
        (&stats(stopped), &stats(full)),
    ] {
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(theirs) {
            assert_eq!((&a.name, &a.dims), (&b.name, &b.dims));
            assert_eq!((a.n_chains, a.n_draws), (CHAINS, draws), "{}", a.name);
            assert_eq!(bits(&a.values), bits(&first_draws(b, draws)), "{}", a.name);
        }
    }
}

/// The root attribute `name` (bat's reader gives numbers as text).
fn attribute(file: &DrawFile, name: &str) -> String {
    file.attributes
        .get(name)
        .unwrap_or_else(|| panic!("no attribute {name}: {:?}", file.attributes))
        .clone()
}

/// Whether `lp__` and every element of every posterior variable of
/// `file`, over each chain's first `draws` draws, have ESS_bulk ≥
/// [`TARGET`] and R-hat < [`MAX_RHAT`], by the summary's statistics of
/// those draws.
fn meets_target(file: &DrawFile, draws: usize) -> bool {
    let stats = file.sample_stats.as_ref().expect("sample_stats");
    let lp = stats.iter().find(|v| v.name == "lp").expect("lp");
    file.posterior.iter().chain([lp]).all(|variable| {
        let first = StoredVariable {
            n_draws: draws,
            values: first_draws(variable, draws),
            ..variable.clone()
        };
        (0..first.elements_per_draw().max(1)).all(|element| {
            let values = first.element_draws(element);
            let view = ChainDraws::new(&values, CHAINS, draws).unwrap();
            let q = QuantitySummary::compute("q", view);
            q.ess_bulk >= TARGET && q.r_hat < MAX_RHAT
        })
    })
}

#[test]
fn a_target_stops_every_chain_at_the_same_draws_of_the_full_run_on_cpu() {
    target_stops_every_chain_at_the_same_draws("cpu");
}

#[test]
fn a_target_stops_every_chain_at_the_same_draws_of_the_full_run_on_native() {
    target_stops_every_chain_at_the_same_draws("native");
}

fn target_stops_every_chain_at_the_same_draws(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (full, _) = run(dir.path(), "full.h5", backend, &[]);
    let target = TARGET.to_string();
    let (stopped, stderr) = run(
        dir.path(),
        "stopped.h5",
        backend,
        &["--target-ess", &target, "--max-rhat", "1.01"],
    );
    // (a) Stopped early, at a checkpoint, and the file says why.
    let draws: usize = attribute(&stopped, "stop_draws_per_chain").parse().unwrap();
    assert!(draws < SAMPLES, "not stopped early: {stderr}");
    let schedule = Checkpoints::new(
        EssTarget {
            min_ess_bulk: TARGET,
            max_rhat: MAX_RHAT,
        },
        CHAINS,
    );
    assert_eq!(schedule.first(), 50, "300 ÷ 6 chains");
    let mut checkpoints = vec![schedule.first()];
    while *checkpoints.last().unwrap() < draws {
        let last = *checkpoints.last().unwrap();
        checkpoints.push(schedule.after(last));
    }
    assert_eq!(*checkpoints.last().unwrap(), draws, "not a checkpoint");
    assert_eq!(attribute(&stopped, "stop_reason"), "target_reached");
    assert_eq!(attribute(&stopped, "run_status"), "complete");
    assert_eq!(attribute(&stopped, "target_ess_bulk"), "300");
    assert_eq!(attribute(&stopped, "target_max_rhat"), "1.01");
    let reader = DrawReader::open(&stopped.path).unwrap();
    for group in ["posterior", "sample_stats"] {
        assert_eq!(reader.draws_per_chain(group), Some(vec![draws; CHAINS]));
        let attributes = group_attributes(&stopped.path, group);
        assert!(
            attributes.contains("stop_reason=target_reached"),
            "{attributes}"
        );
    }
    let line = format!("target reached after {draws} draws per chain");
    assert!(stderr.contains(&line), "{stderr}");
    assert!(!stderr.contains("interrupted"), "{stderr}");
    // (b) Each chain's draws are the full run's first ones.
    assert_prefix(&stopped, &full, draws);
    // (c) They meet the target by the summary of the file, and by the
    // summary of the full run's draws; the checkpoint before did not.
    let summary = report_for_file(&stopped.path).unwrap();
    assert_eq!((summary.n_chains, summary.n_draws), (CHAINS, draws));
    let posterior: Vec<_> = summary.quantities.iter().collect();
    assert_eq!(
        posterior.len(),
        1 + 1 + 1 + 8 + 8 + 8,
        "lp__, mu, tau, θ̃, θ, y_rep"
    );
    for q in &posterior {
        assert!(q.ess_bulk >= TARGET && q.r_hat < MAX_RHAT, "{q:?}");
    }
    let smallest = posterior
        .iter()
        .map(|q| q.ess_bulk)
        .fold(f64::INFINITY, f64::min);
    let largest = posterior.iter().map(|q| q.r_hat).fold(0.0, f64::max);
    let recorded = |name: &str| attribute(&stopped, name).parse::<f64>().unwrap();
    assert_eq!(recorded("stop_min_ess_bulk").to_bits(), smallest.to_bits());
    assert_eq!(recorded("stop_max_rhat").to_bits(), largest.to_bits());
    assert!(meets_target(&full, draws));
    assert!(
        checkpoints.len() >= 2,
        "the target set so that the first check fails"
    );
    let before = checkpoints[checkpoints.len() - 2];
    assert!(!meets_target(&full, before), "met at {before} already");
    // ArviZ opens it, a rectangle of the draws kept.
    let out = Command::new(venv_python())
        .args([
            "-c",
            "import sys, arviz as az\n\
             p = az.from_netcdf(sys.argv[1]).posterior\n\
             print(p.sizes['chain'], p.sizes['draw'], p.attrs['stop_reason'])",
            s(&stopped.path),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        format!("{CHAINS} {draws} target_reached")
    );
}

/// `name=value` lines of a group's text attributes, as h5py reads them.
fn group_attributes(path: &Path, group: &str) -> String {
    let out = Command::new(venv_python())
        .args([
            "-c",
            "import sys, h5py\n\
             g = h5py.File(sys.argv[1], 'r')[sys.argv[2]]\n\
             for k, v in g.attrs.items():\n\
             \x20   print(f'{k}={v}')",
            s(path),
            group,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// (d) A target out of reach: the run makes its `--samples`, the same
/// draws as without a target, and says the target was not reached.
#[test]
fn an_unreachable_target_runs_to_samples_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (full, _) = run(dir.path(), "full.h5", "native", &[]);
    let (stopped, stderr) = run(
        dir.path(),
        "unreached.h5",
        "native",
        &["--target-ess", "1000000"],
    );
    assert_eq!(attribute(&stopped, "stop_reason"), "num_samples_reached");
    assert_eq!(attribute(&stopped, "run_status"), "complete");
    assert_eq!(
        attribute(&stopped, "target_max_rhat"),
        "1.01",
        "the default"
    );
    assert_eq!(
        attribute(&stopped, "stop_draws_per_chain"),
        SAMPLES.to_string()
    );
    assert!(!stopped.attributes.contains_key("stop_min_ess_bulk"));
    assert_prefix(&stopped, &full, SAMPLES);
    assert!(
        stderr.contains(&format!(
            "target not reached: not every quantity has ESS_bulk ≥ 1000000 and R-hat < 1.01 within {SAMPLES} draws per chain"
        )),
        "{stderr}"
    );
    // Without a target nothing is said, nothing recorded.
    assert!(!full.attributes.contains_key("stop_reason"));
}

/// Bad input is refused with a message (a usage error, status 2, where
/// the flag alone is wrong), never a panic.
#[test]
fn bad_target_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("o.h5");
    let model = eight_schools();
    let cases: [(&[&str], i32, &str); 9] = [
        (&["--target-ess", "0"], 2, "--target-ess"),
        (&["--target-ess=-5"], 2, "--target-ess"),
        (&["--target-ess", "many"], 2, "--target-ess"),
        (
            &["--target-ess", "400", "--max-rhat", "1"],
            2,
            "greater than 1",
        ),
        (
            &["--target-ess", "400", "--max-rhat", "0.5"],
            2,
            "greater than 1",
        ),
        (
            &["--target-ess", "400", "--max-rhat", "inf"],
            2,
            "greater than 1",
        ),
        (
            &["--target-ess", "400", "--max-rhat", "NaN"],
            2,
            "greater than 1",
        ),
        (&["--max-rhat", "1.05"], 2, "--target-ess"),
        (
            &["--target-ess", "400", "--chains", "1"],
            1,
            "at least 2 chains",
        ),
    ];
    for (flags, code, says) in cases {
        let mut args = vec!["run", s(&model), "-o", s(&output)];
        args.extend(flags);
        let out = bat(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{flags:?}: {stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flags:?}: {stderr}");
    }
    let out = bat(&[
        "run",
        s(&model),
        "--samples",
        "0",
        "--save-warmup",
        "--target-ess",
        "400",
        "-o",
        s(&output),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--samples 0"), "{stderr}");
    assert!(!output.exists());
}
