//! External functions under both executors: every lane that reaches a call
//! of a host function is answered by one [`BatchHost`] call, and each
//! lane's value, error, random stream and the sequence of host calls it
//! made equal the scalar interpreter's (`runtime::run_function`
//! with a per-lane [`Host`]) for that lane alone — for every executor
//! setting, thread split and batch size.

use backend_cpu::exec::{
    BatchHost, BatchedModel, Batching, EarliestFirst, ExecConfig, LaneResult, MostWaiting,
};
use backend_cpu::lanes::{Lanes, Slot};
use language::data::DataFile;
use language::value::Value;
use runtime::{Host, Model, Rng, RuntimeError, run_function};
use std::sync::{Arc, Mutex};

const PROGRAM: &str = "
  functions {
    real bump(real x);
    void note(int k, real v);
    tuple(real, vector) pair(vector v);
    real descend_rng(real x, int d) {
      if (d == 0) return bump(x);
      real below = descend_rng(x + normal_rng(0, 1), d - 1);
      note(d, below);
      return below + bump(x);
    }
    real chain_rng(real x0, int n) {
      real s = x0;
      vector[2] v = [s, 1]';
      for (i in 1:n) {
        int depth = poisson_rng(2);
        s = descend_rng(s, depth) / 10;
        tuple(real, vector[2]) p = pair(v);
        v = p.2 + s;
        if (p.1 > 5) break;
        note(i, s);
      }
      return s + v[1];
    }
  }";

/// The host's answer, the same for the scalar and the batched host: a
/// rejection above 9 (the lane fails with it, as in the interpreter).
fn bump(x: f64) -> Result<f64, RuntimeError> {
    if x > 9.0 {
        return Err(RuntimeError::rejection(format!("bump: {x} too big")));
    }
    Ok(x * x / 4.0 + 1.0)
}

fn answer(
    name: &str,
    args: &[Value],
    log: &mut Vec<String>,
) -> Result<Option<Value>, RuntimeError> {
    log.push(format!("{name}{args:?}"));
    match (name, args) {
        ("bump", [Value::Real(x)]) => bump(*x).map(|v| Some(Value::Real(v))),
        ("note", [Value::Int(_), Value::Real(_)]) => Ok(None),
        ("pair", [Value::Vector(v)]) => Ok(Some(Value::Tuple(vec![
            Value::Real(v.iter().sum()),
            Value::Vector(v.iter().map(|x| x.sin()).collect()),
        ]))),
        _ => Err(RuntimeError::fatal(format!("bad call {name}{args:?}"))),
    }
}

/// An invocation's value or error, and the host calls it made.
type Outcome = (Result<Option<Value>, RuntimeError>, Vec<String>);

struct ScalarHost {
    log: Vec<String>,
}

impl Host for ScalarHost {
    fn call_external(
        &mut self,
        name: &str,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        answer(name, &args, &mut self.log)
    }
}

/// Lane `offset + i` of the whole batch logs into `logs[offset + i]`;
/// `batch_sizes` records how many lanes each host call served.
struct LaneHost<'a> {
    offset: usize,
    logs: &'a Mutex<Vec<Vec<String>>>,
    batch_sizes: &'a Mutex<Vec<usize>>,
}

impl BatchHost for LaneHost<'_> {
    fn call_external(
        &mut self,
        name: &str,
        lanes: &Lanes,
        args: &[Arc<Slot>],
    ) -> Vec<LaneResult<Option<Value>>> {
        self.batch_sizes.lock().unwrap().push(lanes.len());
        let mut logs = self.logs.lock().unwrap();
        lanes
            .iter()
            .map(|l| {
                let values: Vec<Value> = args.iter().map(|a| a.lane_value(l)).collect();
                answer(name, &values, &mut logs[self.offset + l])
            })
            .collect()
    }
}

fn inputs(z: usize) -> Vec<Vec<Value>> {
    (0..z)
        .map(|l| {
            vec![
                Value::Real(l as f64 * 0.7 - 3.0),
                Value::Int(2 + (l % 5) as i64),
            ]
        })
        .collect()
}

fn rngs(z: usize) -> Vec<Rng> {
    (0..z).map(|l| Rng::new(99, l as u32, 0)).collect()
}

fn configs() -> Vec<ExecConfig> {
    let mut out = Vec::new();
    for batching in [Batching::Local, Batching::ProgramCounter] {
        out.push(ExecConfig {
            batching,
            ..ExecConfig::default()
        });
        out.push(ExecConfig {
            batching,
            choice: Arc::new(MostWaiting),
            gather_below: 1.1,
            threads: 2,
            ..ExecConfig::default()
        });
        out.push(ExecConfig {
            batching,
            choice: Arc::new(EarliestFirst),
            gather_below: 0.0,
            max_sub_batch: 3,
            ..ExecConfig::default()
        });
    }
    out
}

/// The scalar interpreter's result and host log for each invocation of
/// `function` with `args` (the truth the executors are held to).
fn interpreter_outcomes(
    mir: &language::mir::Program,
    function: &str,
    args: &[Vec<Value>],
) -> Vec<Outcome> {
    let rngs = rngs(args.len());
    args.iter()
        .zip(rngs)
        .map(|(a, rng)| {
            let mut host = ScalarHost { log: Vec::new() };
            let r = run_function(mir, function, a.clone(), rng, &mut host);
            (r, host.log)
        })
        .collect()
}

#[test]
fn external_calls_match_the_interpreter_lane_by_lane() {
    let (mir, diags) = language::compile_with_externals(PROGRAM, "host");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let z = 23;
    let args = inputs(z);
    let truth = interpreter_outcomes(&mir, "chain_rng", &args);
    assert!(
        truth.iter().any(|(r, _)| r.is_err()),
        "some lane is rejected"
    );
    assert!(truth.iter().filter(|(r, _)| r.is_ok()).count() > z / 2);
    for config in configs() {
        let cfg = language::batch::lower(&mir, &[], 0).expect("lowers");
        let model = Model::new(&mir, &DataFile::empty()).expect("no data");
        let batched = BatchedModel::new(cfg, model, config.clone()).expect("builds");
        let logs = Mutex::new(vec![Vec::new(); z]);
        let batch_sizes = Mutex::new(Vec::new());
        let got = batched
            .run_function_with_host("chain_rng", &args, Some(&rngs(z)), |range| LaneHost {
                offset: range.start,
                logs: &logs,
                batch_sizes: &batch_sizes,
            })
            .expect("runs");
        let logs = logs.into_inner().unwrap();
        for l in 0..z {
            let (want, want_log) = &truth[l];
            // Known difference: a host error carries no source span here
            // (the CFG's call terminator has none); kind and message agree.
            let strip = |r: &Result<Option<Value>, RuntimeError>| {
                r.clone().map_err(|e| (e.kind, e.message))
            };
            assert_eq!(strip(&got[l]), strip(want), "lane {l}, {config:?}");
            assert_eq!(&logs[l], want_log, "host calls of lane {l}, {config:?}");
        }
        let sizes = batch_sizes.into_inner().unwrap();
        let calls: usize = logs.iter().map(Vec::len).sum();
        assert_eq!(sizes.iter().sum::<usize>(), calls);
        assert!(
            sizes.len() < calls,
            "lanes share host calls ({} calls for {calls} lane calls), {config:?}",
            sizes.len()
        );
    }
}

/// A pool of invocations for fewer lanes (`BatchedModel::run_invocations`):
/// invocation `i` of a shared queue goes to whichever lane is free; it logs
/// into `logs[i]`. `bump` is answered for the whole batch at once
/// (`call_external_batch`, rejections as failed lanes), the rest lane by
/// lane.
struct PoolHost<'a> {
    lane_job: Vec<Option<usize>>,
    next: &'a std::sync::atomic::AtomicUsize,
    args: &'a [Vec<Value>],
    logs: &'a Mutex<Vec<Vec<String>>>,
    results: &'a Mutex<Vec<Option<LaneResult<Option<Value>>>>>,
    /// Counts the batch's compactions; `None`: the host declines them.
    compactions: Option<&'a std::sync::atomic::AtomicUsize>,
}

impl BatchHost for PoolHost<'_> {
    fn call_external(
        &mut self,
        name: &str,
        lanes: &Lanes,
        args: &[Arc<Slot>],
    ) -> Vec<LaneResult<Option<Value>>> {
        let mut logs = self.logs.lock().unwrap();
        lanes
            .iter()
            .map(|l| {
                let values: Vec<Value> = args.iter().map(|a| a.lane_value(l)).collect();
                answer(name, &values, &mut logs[self.lane_job[l].unwrap()])
            })
            .collect()
    }

    fn call_external_batch(
        &mut self,
        name: &str,
        lanes: &Lanes,
        args: &[Arc<Slot>],
    ) -> Option<backend_cpu::exec::BatchAnswer> {
        if name != "bump" {
            return None;
        }
        let z = self.lane_job.len();
        let mut logs = self.logs.lock().unwrap();
        let mut values = vec![Value::Real(0.0); z];
        let mut failed = Vec::new();
        for l in lanes.iter() {
            let arg = args[0].lane_value(l);
            match answer(name, &[arg], &mut logs[self.lane_job[l].unwrap()]) {
                Ok(Some(v)) => values[l] = v,
                Ok(None) => unreachable!("bump has a value"),
                Err(e) => failed.push((l, e)),
            }
        }
        Some(backend_cpu::exec::BatchAnswer {
            value: Slot::from_lane_values(values),
            failed,
        })
    }

    fn next_invocation(&mut self, lane: usize) -> Option<(Vec<Value>, Option<Rng>)> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lane_job[lane] = None;
        let args = self.args.get(i)?;
        self.lane_job[lane] = Some(i);
        Some((args.clone(), Some(Rng::new(99, i as u32, 0))))
    }

    fn compact(&mut self, keep: &[usize]) -> bool {
        let Some(count) = self.compactions else {
            return false;
        };
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lane_job = keep.iter().map(|&l| self.lane_job[l]).collect();
        true
    }

    fn invocation_finished(&mut self, lane: usize, result: LaneResult<Option<Value>>) {
        let i = self.lane_job[lane].expect("a finished lane ran an invocation");
        let mut results = self.results.lock().unwrap();
        assert!(results[i].is_none(), "invocation {i} finished twice");
        results[i] = Some(result);
    }
}

#[test]
fn a_pool_of_invocations_on_fewer_lanes_matches_the_interpreter() {
    for (config, lanes) in configs()
        .into_iter()
        .filter(|c| c.batching == Batching::ProgramCounter)
        .zip([1, 4, 5])
    {
        let pool = Pool {
            program: PROGRAM,
            function: "chain_rng",
            args: inputs(23),
        };
        pool_matches_the_interpreter(&pool, config, lanes, false);
    }
}

/// Lanes whose invocations finish with no more work leave the batch: the
/// program-counter executor shrinks it to the running lanes (renumbered,
/// with their variables, stacks mid-recursion, streams and call stacks)
/// once at most a quarter of it runs, and every invocation still gives
/// the interpreter's result and host calls.
#[test]
fn shrinking_the_batch_to_the_running_lanes_keeps_every_invocations_result() {
    // Most-waiting first: the many short invocations finish while the
    // few long ones are still deep in their recursion.
    let config = ExecConfig {
        batching: Batching::ProgramCounter,
        threads: 1,
        choice: Arc::new(MostWaiting),
        ..ExecConfig::default()
    };
    // Most invocations recurse 1–3 levels, every 8th 20–34: when the
    // batch shrinks, the long ones are mid-recursion at different depths.
    let args: Vec<Vec<Value>> = (0..40)
        .map(|i| {
            let depth = if i % 8 == 5 { 20 + i % 15 } else { 1 + i % 3 };
            vec![Value::Real(i as f64 * 0.6 - 2.0), Value::Int(depth as i64)]
        })
        .collect();
    let pool = Pool {
        program: DEEP,
        function: "job_rng",
        args,
    };
    let compactions = pool_matches_the_interpreter(&pool, config, 64, true);
    // 40 of 64 lanes run: shrunk to 16 and then to 4 or fewer.
    assert_eq!(compactions, 2);
}

/// Recursion to a depth given per invocation, with a host call and a
/// random draw at every level, and values live across the recursive call
/// (saved on the variable stacks).
const DEEP: &str = "
  functions {
    real bump(real x);
    void note(int k, real v);
    real deep_rng(real x, int d) {
      if (d == 0) return bump(x);
      real here = x + normal_rng(0, 1);
      real below = deep_rng(here / 2, d - 1);
      note(d, below);
      return below + here / d;
    }
    real job_rng(real x0, int depth) {
      return deep_rng(x0, depth);
    }
  }";

/// Invocations of `function` in `program`, one per element of `args`.
struct Pool {
    program: &'static str,
    function: &'static str,
    args: Vec<Vec<Value>>,
}

/// Run `pool`'s invocations on `lanes` lanes (the host renumbering its
/// lanes when the executor shrinks the batch, if `compacts`), check each
/// against the interpreter, and return how many times the batch shrank.
fn pool_matches_the_interpreter(
    pool: &Pool,
    config: ExecConfig,
    lanes: usize,
    compacts: bool,
) -> usize {
    let (mir, diags) = language::compile_with_externals(pool.program, "host");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let (jobs, args) = (pool.args.len(), &pool.args);
    let truth = interpreter_outcomes(&mir, pool.function, args);
    assert!(
        truth.iter().any(|(r, _)| r.is_err()),
        "some invocation is rejected"
    );
    let cfg = language::batch::lower(&mir, &[], 0).expect("lowers");
    let model = Model::new(&mir, &DataFile::empty()).expect("no data");
    let batched = BatchedModel::new(cfg, model, config.clone()).expect("builds");
    let logs = Mutex::new(vec![Vec::new(); jobs]);
    let results = Mutex::new(vec![None; jobs]);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let compactions = std::sync::atomic::AtomicUsize::new(0);
    batched
        .run_invocations(pool.function, lanes, |range| PoolHost {
            lane_job: vec![None; range.len()],
            next: &next,
            args,
            logs: &logs,
            results: &results,
            compactions: compacts.then_some(&compactions),
        })
        .expect("runs");
    let logs = logs.into_inner().unwrap();
    let results = results.into_inner().unwrap();
    for i in 0..jobs {
        let (want, want_log) = &truth[i];
        let strip =
            |r: &Result<Option<Value>, RuntimeError>| r.clone().map_err(|e| (e.kind, e.message));
        let got = results[i]
            .as_ref()
            .unwrap_or_else(|| panic!("invocation {i} did not finish, {lanes} lanes"));
        assert_eq!(
            strip(got),
            strip(want),
            "invocation {i}, {lanes} lanes, {config:?}"
        );
        assert_eq!(
            &logs[i], want_log,
            "host calls of invocation {i}, {lanes} lanes"
        );
    }
    compactions.into_inner()
}
