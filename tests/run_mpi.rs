//! `bat run` under `mpirun`: the chains shared over 3 ranks on this
//! machine (loopback only) give, chain for chain and bit for bit, the
//! draws of one process, in one file that ArviZ opens and whose summary
//! covers every chain; a rank killed mid-run leaves a readable file and a
//! message naming it; a bad argument on any rank stops every rank with
//! one message. Built without the `mpi` feature, `bat run` started by a
//! launcher refuses.
//!
//! With the feature these tests need `mpirun` (OpenMPI) and the ArviZ
//! venv of scripts/setup.sh, and fail when either is missing.

#[path = "support/run.rs"]
mod support;

use std::process::Command;
use support::{NORMAL_DATA, NORMAL_MEAN, s, text, write};

fn bat_exe() -> &'static str {
    env!("CARGO_BIN_EXE_bat")
}

/// Built without MPI, a `bat run` that an MPI launcher started as one of
/// several processes refuses (rank 0 says why; the others fail quietly)
/// rather than every rank running every chain into the same file.
#[cfg(not(feature = "mpi"))]
#[test]
fn without_mpi_a_launched_run_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let model = write(dir.path(), "m.bat", NORMAL_MEAN);
    write(dir.path(), "m.data.json", NORMAL_DATA);
    let output = dir.path().join("o.h5");
    let launchers = [
        ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
        ("PMI_SIZE", "PMI_RANK"),
        ("SLURM_STEP_NUM_TASKS", "SLURM_PROCID"),
    ];
    for ((size, rank_var), (rank, says)) in launchers
        .into_iter()
        .flat_map(|l| [(l, ("0", true)), (l, ("2", false))])
    {
        let out = Command::new(bat_exe())
            .args(["run", s(&model), "--chains", "2", "-o", s(&output)])
            .env(size, "3")
            .env(rank_var, rank)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert_eq!(
            text(&out.stderr).contains("built without MPI"),
            says,
            "{size} rank {rank}: {}",
            text(&out.stderr)
        );
        assert!(!output.exists(), "no rank samples");
    }
    // One process of one: an ordinary run.
    let out = Command::new(bat_exe())
        .args(["run", s(&model), "--chains", "2", "--samples", "20"])
        .args(["--warmup", "20", "-o", s(&output)])
        .env("OMPI_COMM_WORLD_SIZE", "1")
        .env("OMPI_COMM_WORLD_RANK", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[cfg(feature = "mpi")]
#[path = "support/mpirun.rs"]
mod mpirun;

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::mpirun::mpirun;
    use super::support::venv_python;
    use super::*;
    use bat::output::read_draws;
    use std::path::{Path, PathBuf};
    use std::process::{Output, Stdio};
    use std::time::{Duration, Instant};

    /// Longest a launched run may take before the test calls it a hang.
    const HANG: Duration = Duration::from_secs(180);

    /// Runs `command` to its end, failing the test if it takes longer
    /// than [`HANG`].
    fn finish(mut command: Command) -> Output {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                return child.wait_with_output().unwrap();
            }
            if started.elapsed() > HANG {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "hung for {HANG:?}:\n{}\n{}",
                    text(&out.stdout),
                    text(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn bat(args: &[&str]) -> Output {
        let mut command = Command::new(bat_exe());
        command.args(args);
        finish(command)
    }

    fn bat_ranks(ranks: usize, args: &[&str]) -> Output {
        let mut command = mpirun(ranks);
        command.arg(bat_exe()).args(args);
        finish(command)
    }

    /// ArviZ opens both files; every variable of every group of `ours`
    /// equals, bit for bit, the same variable of `theirs` over the first
    /// `chains` chains and the draws both hold. A `partial` file (of a
    /// killed run) may lack variables written at the end (the adaptation),
    /// and each chain's draws end where its written blocks end (the rest
    /// is the fill value, NaN): only those draws are compared. Prints the
    /// chains of `ours` and the fewest draws of any chain in it.
    fn arviz_equal(ours: &Path, theirs: &Path, chains: usize, partial: bool) -> String {
        let script = r#"
import sys, numpy as np, arviz as az
ours, theirs = az.from_netcdf(sys.argv[1]), az.from_netcdf(sys.argv[2])
chains, partial = int(sys.argv[3]), sys.argv[4] == "1"
assert set(ours.groups()) == set(theirs.groups()), (ours.groups(), theirs.groups())
mu = ours.posterior["mu"].values[:chains]
# Each chain's written draws: a prefix (NaN after it when partial).
written = [int((~np.isnan(row)).sum()) for row in mu]
for row, n in zip(mu, written):
    assert not np.isnan(row[:n]).any(), "a gap inside a chain's draws"
    assert partial or n == len(row), "unwritten draws in a complete file"
compared = 0
for group in ours.groups():
    a, b = ours[group], theirs[group]
    if partial:
        assert set(a.data_vars) <= set(b.data_vars), (group, list(a.data_vars), list(b.data_vars))
    else:
        assert set(a.data_vars) == set(b.data_vars), (group, list(a.data_vars), list(b.data_vars))
    for name in a.data_vars:
        x, y = a[name].values, b[name].values
        if "chain" in a[name].dims:
            x, y = x[:chains], y[:chains]
        pairs = [(x, y)]
        if "draw" in a[name].dims:
            n = [min(w, y.shape[1]) for w in written]
            assert min(n) > 0, (group, name)
            pairs = [(x[c, :n[c]], y[c, :n[c]]) for c in range(chains)]
        for x, y in pairs:
            assert x.shape == y.shape, (group, name, x.shape, y.shape)
            if x.dtype.kind == "f":
                same = np.array_equal(x.view(np.uint64), y.view(np.uint64))
            else:
                same = np.array_equal(x, y)
            assert same, (group, name)
        compared += 1
assert compared > 0
print(mu.shape[0], min(written))
"#;
        let out = Command::new(venv_python())
            .args([
                "-c",
                script,
                s(ours),
                s(theirs),
                &chains.to_string(),
                if partial { "1" } else { "0" },
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} against {}:\n{}",
            ours.display(),
            theirs.display(),
            text(&out.stderr)
        );
        text(&out.stdout).trim().to_string()
    }

    fn run_args<'a>(model: &'a Path, chains: &'a str, out: &'a Path) -> Vec<&'a str> {
        vec![
            "run",
            s(model),
            "--chains",
            chains,
            "--warmup",
            "150",
            "--samples",
            "120",
            "--seed",
            "20240601",
            "--threads",
            "1",
            "-o",
            s(out),
        ]
    }

    /// Chains shared over 3 ranks (in groups of at most 3 chains for 7
    /// chains, 2 for 6, as the ranks ask) give every chain's draws,
    /// sample stats and adaptation of one process bit for bit, in one file that ArviZ opens, summarized
    /// (`bat run`'s table and `bat summary`) over all chains as one
    /// process summarizes them.
    #[test]
    fn three_ranks_give_one_process_draws_in_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let model = write(dir.path(), "m.bat", NORMAL_MEAN);
        write(dir.path(), "m.data.json", NORMAL_DATA);
        let one = dir.path().join("one.h5");
        let alone = bat(&run_args(&model, "7", &one));
        assert!(alone.status.success(), "{}", text(&alone.stderr));
        for chains in ["7", "6"] {
            let three = dir.path().join(format!("three-{chains}.h5"));
            let ranked = bat_ranks(3, &run_args(&model, chains, &three));
            assert!(
                ranked.status.success(),
                "{}\n{}",
                text(&ranked.stdout),
                text(&ranked.stderr)
            );
            assert_eq!(
                arviz_equal(&three, &one, chains.parse().unwrap(), false),
                format!("{chains} 120")
            );
            if chains == "7" {
                // The same summary, printed once (by rank 0).
                assert_eq!(text(&ranked.stdout), text(&alone.stdout));
                let summary = bat(&["summary", s(&three)]);
                assert!(summary.status.success(), "{}", text(&summary.stderr));
                assert_eq!(text(&summary.stdout), text(&alone.stdout));
                let file = read_draws(&three).unwrap();
                assert!(
                    file.attributes
                        .values()
                        .any(|a| a.contains("\"mpi_ranks\":3"))
                );
            }
        }
    }

    /// Pooled warmup pools over every rank's chains: 3 ranks give one
    /// process's draws and adapted kernel bit for bit (7 chains: 3 + 2 + 2).
    #[test]
    fn pooled_warmup_spans_the_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let model = write(dir.path(), "m.bat", NORMAL_MEAN);
        write(dir.path(), "m.data.json", NORMAL_DATA);
        let one = dir.path().join("one.h5");
        let three = dir.path().join("three.h5");
        let pooled = |out| {
            let mut args = run_args(&model, "7", out);
            args.extend(["--adapt", "pooled"]);
            args
        };
        let alone = bat(&pooled(&one));
        assert!(alone.status.success(), "{}", text(&alone.stderr));
        let ranked = bat_ranks(3, &pooled(&three));
        assert!(ranked.status.success(), "{}", text(&ranked.stderr));
        assert_eq!(arviz_equal(&three, &one, 7, false), "7 120");
        // One kernel for all chains.
        let file = read_draws(&one).unwrap();
        assert!(
            file.attributes
                .values()
                .any(|a| a.contains("\"adapt\":\"pooled\""))
        );
    }

    /// Without `--seed`, rank 0 draws the seed and every rank runs with
    /// it: the file's seed given to one process gives the same draws.
    #[test]
    fn three_ranks_share_rank_zeros_seed() {
        let dir = tempfile::tempdir().unwrap();
        let model = write(dir.path(), "m.bat", NORMAL_MEAN);
        write(dir.path(), "m.data.json", NORMAL_DATA);
        let three = dir.path().join("three.h5");
        let mut args = run_args(&model, "5", &three);
        args.drain(8..10);
        let ranked = bat_ranks(3, &args);
        assert!(ranked.status.success(), "{}", text(&ranked.stderr));
        let seed = read_draws(&three).unwrap().attributes["seed"].clone();
        let one = dir.path().join("one.h5");
        let mut args = run_args(&model, "5", &one);
        args[9] = &seed;
        let alone = bat(&args);
        assert!(alone.status.success(), "{}", text(&alone.stderr));
        assert_eq!(arviz_equal(&three, &one, 5, false), "5 120");
    }

    /// Processes a launcher started without MPI's knowledge (`srun`
    /// without an MPI plugin: each a world of one) refuse, rank 0 saying
    /// why, rather than each sampling every chain into the same file.
    #[test]
    fn processes_mpi_does_not_see_as_one_world_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let model = write(dir.path(), "m.bat", NORMAL_MEAN);
        write(dir.path(), "m.data.json", NORMAL_DATA);
        let output = dir.path().join("o.h5");
        for (rank, says) in [("0", true), ("1", false)] {
            let mut command = Command::new(bat_exe());
            command
                .args(run_args(&model, "4", &output))
                .env("SLURM_STEP_NUM_TASKS", "2")
                .env("SLURM_PROCID", rank)
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            let out = finish(command);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{stderr}");
            assert_eq!(
                stderr.contains("the launcher started 2 processes, but MPI sees 1"),
                says,
                "rank {rank}: {stderr}"
            );
            assert!(!output.exists(), "no rank samples");
        }
    }

    /// The pid of the process of rank `rank` under the launcher `parent`.
    fn rank_pid(parent: u32, rank: usize) -> Option<u32> {
        let want = format!("OMPI_COMM_WORLD_RANK={rank}");
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
            let has_rank = environ.split(|&b| b == 0).any(|v| v == want.as_bytes());
            if ppid == Some(parent) && has_rank {
                return Some(pid);
            }
        }
        None
    }

    /// A run stopped from outside: far more iterations than the compiled
    /// backend makes before the test stops it, thinned so that its file
    /// stays small enough for `bat summary` (which the test polls) to read
    /// quickly; the run alone that it is compared with keeps 400 draws of
    /// each chain with the same thinning.
    const LONG_RUN_SAMPLES: &str = "20000000";
    const LONG_RUN_THIN: &str = "100";
    const ONE_RUN_SAMPLES: &str = "40000";

    /// Waits until every one of the `chains` chains in `output` holds at
    /// least `draws` draws (read without HDF5's file lock, which the writer
    /// holds). A chain without draws yet is left out of the summary, so
    /// its count of chains must be all of them (the ranks' blocks arrive
    /// at different times).
    fn wait_for_draws(output: &Path, chains: u64, draws: u64) {
        let started = Instant::now();
        loop {
            let out = Command::new(bat_exe())
                .args(["summary", "--format", "json", s(output)])
                .env("HDF5_USE_FILE_LOCKING", "FALSE")
                .output()
                .unwrap();
            let json = serde_json::from_slice::<serde_json::Value>(&out.stdout).ok();
            let count = |key: &str| json.as_ref().and_then(|v| v[key].as_u64());
            if out.status.success()
                && count("n_chains") == Some(chains)
                && count("n_draws").is_some_and(|n| n >= draws)
            {
                return;
            }
            assert!(
                started.elapsed() < HANG,
                "no {draws} draws of {chains} chains in {}",
                output.display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A long 3-rank run of 5 chains to be stopped from outside, started
    /// and seen writing, with the run alone it is compared with.
    struct LongRun {
        _dir: tempfile::TempDir,
        /// One process's draws of the same chains (400 kept each).
        one: PathBuf,
        /// The ranks' draws file.
        output: PathBuf,
        child: std::process::Child,
    }

    /// Runs the 5 chains alone, then starts them over 3 ranks (`mpirun`
    /// with `extra` arguments) writing `name`, and waits until every chain
    /// has 200 draws in the file.
    fn start_long_run(name: &str, extra: &[&str]) -> LongRun {
        let dir = tempfile::tempdir().unwrap();
        let model = write(dir.path(), "m.bat", NORMAL_MEAN);
        write(dir.path(), "m.data.json", NORMAL_DATA);
        let one = dir.path().join("one.h5");
        let mut args = run_args(&model, "5", &one);
        args[7] = ONE_RUN_SAMPLES;
        args.extend(["--thin", LONG_RUN_THIN]);
        let alone = bat(&args);
        assert!(alone.status.success(), "{}", text(&alone.stderr));
        let output = dir.path().join(name);
        let mut args = run_args(&model, "5", &output);
        args[7] = LONG_RUN_SAMPLES;
        args.extend(["--thin", LONG_RUN_THIN]);
        let mut launcher = mpirun(3);
        launcher
            .args(extra)
            .arg(bat_exe())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = launcher.spawn().unwrap();
        wait_for_draws(&output, 5, 200);
        LongRun {
            _dir: dir,
            one,
            output,
            child,
        }
    }

    /// Waits for the stopped run's end (a test failure after [`HANG`],
    /// saying `after`); its output.
    fn wait_for_end(mut child: std::process::Child, after: &str) -> Output {
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > HANG {
                let _ = child.kill();
                panic!("the ranks hung after {after}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    }

    /// Rank 1 of 3 killed (SIGKILL) mid-run: the run fails with a message
    /// naming rank 1, and the file opens in `bat summary` and ArviZ with
    /// every chain's draws so far, each the draw one process makes.
    #[test]
    fn a_rank_killed_mid_run_leaves_a_readable_file_and_is_named() {
        let run = start_long_run("killed.h5", &[]);
        let pid = rank_pid(run.child.id(), 1).expect("rank 1's process");
        let kill = Command::new("kill").args(["-9", &pid.to_string()]).status();
        assert!(kill.unwrap().success());
        let out = wait_for_end(run.child, "rank 1 was killed");
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("rank 1"), "{stderr}");
        let summary = bat(&["summary", s(&run.output)]);
        assert!(summary.status.success(), "{}", text(&summary.stderr));
        assert!(text(&summary.stdout).contains("mu"));
        let held = arviz_equal(&run.output, &run.one, 5, true);
        let (chains, draws) = held.split_once(' ').unwrap();
        assert_eq!(chains, "5");
        assert!(draws.parse::<usize>().unwrap() >= 200, "{held}");
    }

    /// Ctrl-C (SIGINT) to `mpirun`: it ends the ranks with SIGTERM, which
    /// stops every rank's chains as Ctrl-C stops one process's; rank 0
    /// closes the file with the draws every chain has (no chain padded,
    /// each the draw one process makes) and the adaptation.
    #[test]
    fn ctrl_c_to_mpirun_stops_every_rank_and_closes_the_file() {
        // mpirun sends SIGKILL 1 s after its SIGTERM by default; a loaded
        // test machine may need longer to close the file.
        let run = start_long_run("stopped.h5", &["--mca", "odls_base_sigkill_timeout", "30"]);
        let signal = Command::new("kill")
            .args(["-INT", &run.child.id().to_string()])
            .status();
        assert!(signal.unwrap().success());
        let out = wait_for_end(run.child, "Ctrl-C");
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("interrupted: the file holds the draws made so far"),
            "{stderr}"
        );
        let held = arviz_equal(&run.output, &run.one, 5, false);
        let (chains, draws) = held.split_once(' ').unwrap();
        assert_eq!(chains, "5");
        assert!(draws.parse::<usize>().unwrap() >= 200, "{held}");
    }

    /// `--target-ess` over 3 ranks: rank 0's collector decides and every
    /// rank stops its chains (far sooner than `--samples`, which would
    /// outlast [`HANG`]); the file is one process's, bit for bit, stopped
    /// at the same draw.
    #[test]
    fn a_target_reached_stops_every_rank() {
        let dir = tempfile::tempdir().unwrap();
        let model = write(dir.path(), "m.bat", NORMAL_MEAN);
        write(dir.path(), "m.data.json", NORMAL_DATA);
        let args = |out: &Path| {
            let mut args = run_args(&model, "6", out);
            let samples = args.iter().position(|&a| a == "--samples").unwrap();
            args[samples + 1] = "50000000";
            args.extend(["--target-ess", "400", "--ignore-disk-space"]);
            args.into_iter().map(String::from).collect::<Vec<_>>()
        };
        let one = dir.path().join("one.h5");
        let one_args = args(&one);
        let alone = bat(&one_args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(alone.status.success(), "{}", text(&alone.stderr));
        let three = dir.path().join("three.h5");
        let three_args = args(&three);
        let ranked = bat_ranks(
            3,
            &three_args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let stderr = text(&ranked.stderr);
        assert!(ranked.status.success(), "{stderr}");
        let reached = stderr
            .lines()
            .find(|l| l.starts_with("target reached after "))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(text(&alone.stderr).contains(reached.split(':').next().unwrap()));
        let held = arviz_equal(&three, &one, 6, false);
        let file = read_draws(&three).unwrap();
        assert_eq!(file.attributes["stop_reason"], "target_reached");
        assert_eq!(
            held,
            format!("6 {}", file.attributes["stop_draws_per_chain"])
        );
    }

    /// A bad argument stops every rank, quickly and with one message,
    /// whether all ranks have it or one alone; so do arguments that differ
    /// between ranks, and a setup failure (a missing init file).
    #[test]
    fn a_bad_argument_on_any_rank_stops_all_with_one_message() {
        let dir = tempfile::tempdir().unwrap();
        let model = write(dir.path(), "m.bat", NORMAL_MEAN);
        write(dir.path(), "m.data.json", NORMAL_DATA);
        let out = dir.path().join("o.h5");
        let good = run_args(&model, "4", &out);
        let count = |stderr: &str, what: &str| stderr.matches(what).count();

        // The same bad argument on every rank.
        let mut bad = good.clone();
        bad[3] = "0";
        let ran = bat_ranks(3, &bad);
        let stderr = text(&ran.stderr);
        assert!(!ran.status.success(), "{stderr}");
        assert_eq!(
            count(&stderr, "invalid value '0' for '--chains"),
            1,
            "{stderr}"
        );

        // A bad argument on rank 2 alone (`mpirun A : B`).
        let mut bad = good.clone();
        bad.extend(["--adapt-delta", "2"]);
        let mut command = mpirun(2);
        command
            .arg(bat_exe())
            .args(&good)
            .args([":", "-n", "1", bat_exe()])
            .args(&bad);
        let ran = finish(command);
        let stderr = text(&ran.stderr);
        assert!(!ran.status.success(), "{stderr}");
        assert_eq!(count(&stderr, "--adapt-delta"), 1, "{stderr}");
        assert!(stderr.contains("error: rank 2 of 3:"), "{stderr}");

        // Good arguments, but not the same on every rank.
        let mut other = good.clone();
        other[9] = "7";
        let mut command = mpirun(2);
        command
            .arg(bat_exe())
            .args(&good)
            .args([":", "-n", "1", bat_exe()])
            .args(&other);
        let ran = finish(command);
        let stderr = text(&ran.stderr);
        assert!(!ran.status.success(), "{stderr}");
        assert!(
            stderr.contains("rank 2 of 3 was started with other arguments"),
            "{stderr}"
        );

        // A failure setting up (every rank): rank 0's message alone.
        let mut missing = good.clone();
        missing.extend(["--init", "no_such_init.json"]);
        let ran = bat_ranks(3, &missing);
        let stderr = text(&ran.stderr);
        assert!(!ran.status.success(), "{stderr}");
        assert_eq!(count(&stderr, "no_such_init.json"), 1, "{stderr}");
        assert!(!out.exists(), "nothing sampled");
    }
}
