//! What the executor tests that compare every lane with the interpreter
//! share: a compiled model, random points per lane, and the lane-by-lane
//! comparison through both executors; the draws program of a model.

// Each test file uses a part of what is here.
#![allow(dead_code)]

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use language::data::DataFile;
use runtime::{Model, Rng};

/// A compiled model's gradient program and its pieces.
pub struct Compiled {
    pub program: language::mir::Program,
    pub data: DataFile,
    pub g: language::mir::GradProgram,
    pub cfg: language::batch::cfg::Program,
}

pub fn compile(source: &str, name: &str, data: &str) -> Compiled {
    let program = match language::compile_model(source, name) {
        (Some(p), _) => p,
        (None, ds) => panic!("does not compile: {}", ds[0].message),
    };
    let data = DataFile::parse(data).unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    Compiled {
        program,
        data,
        g,
        cfg,
    }
}

/// How many runs of `n` consecutive statements of a block satisfy `form`.
pub fn count_runs(c: &Compiled, n: usize, form: impl Fn(&[language::mir::Stmt]) -> bool) -> usize {
    c.cfg
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| b.ops.windows(n))
        .filter(|w| form(w))
        .count()
}

/// Points of `z` lanes from `seed`: 6 coordinates uniform in
/// (−radius, radius).
pub fn thetas(z: usize, seed: u64, radius: f64) -> Vec<Vec<f64>> {
    (0..z)
        .map(|l| {
            let mut rng = Rng::new(seed, l as u32, 0);
            (0..6)
                .map(|_| radius * (2.0 * rng.uniform() - 1.0))
                .collect()
        })
        .collect()
}

/// Every lane of `th` through both executors gets exactly the
/// interpreter's log density and gradient, or the interpreter's error;
/// returns which lanes failed.
pub fn assert_lanes_equal_the_interpreter(c: &Compiled, th: &[Vec<f64>], at: &str) -> Vec<bool> {
    let mut failed = Vec::new();
    for batching in [Batching::Local, Batching::ProgramCounter] {
        let config = ExecConfig {
            batching,
            ..ExecConfig::default()
        };
        let model = Model::new(&c.program, &c.data).unwrap();
        let batched = BatchedModel::new(c.cfg.clone(), model, config).unwrap();
        let ours = batched.log_density_gradient(th, true).unwrap();
        failed = ours.iter().map(|r| r.is_err()).collect();
        for (l, got) in ours.iter().enumerate() {
            let expected = batched.model().log_density_gradient(&c.g, &th[l], true);
            let at = format!("{at}, {batching:?}, Z={}, lane {l}", th.len());
            match (got, &expected) {
                (Ok((lp, grad)), Ok((lp0, grad0))) => {
                    assert_eq!(lp.to_bits(), lp0.to_bits(), "{at}: lp");
                    for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                        assert_eq!(a.to_bits(), b.to_bits(), "{at}: grad[{k}]");
                    }
                }
                (Err(e), Err(e0)) => assert_eq!(e.message, e0.message, "{at}: the error"),
                _ => panic!("{at}: {got:?} vs {expected:?}"),
            }
        }
    }
    failed
}

/// [`assert_lanes_equal_the_interpreter`] where no lane may fail.
pub fn assert_lanes_succeed_as_the_interpreter(c: &Compiled, th: &[Vec<f64>], at: &str) {
    let failed = assert_lanes_equal_the_interpreter(c, th, at);
    assert!(failed.iter().all(|f| !f), "{at}: lanes failed: {failed:?}");
}

/// `source`'s draws program (constraining, transformed parameters,
/// generated quantities) batched under `config`, with `data`.
pub fn draws_model(source: &str, data: &str, config: ExecConfig) -> BatchedModel {
    let (mir, diags) = language::compile_model(source, "draws");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = language::batch::lower_generated_quantities(&mir).expect("lowers");
    let model = Model::new(&mir, &DataFile::parse(data).unwrap()).expect("data");
    BatchedModel::new(cfg, model, config).unwrap()
}
