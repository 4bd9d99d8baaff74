//! Lane-by-lane comparisons of a compiled executor's gradients with
//! backend-cpu's: a model compiled for both, the points of the lanes, and
//! the check of each lane. The CUDA backend's tests include this file too
//! (with the device's closeness), so both engines are checked alike.

use std::path::Path;

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use codegen::gradient::LaneGradient;
use language::data::DataFile;
use runtime::{Model, Rng};

/// A model compiled for both backends.
pub struct Case {
    pub cfg: language::batch::cfg::Program,
    pub model: Model,
}

pub fn load(name: &str, model: &Path, data: &Path) -> Result<Case, String> {
    let source = std::fs::read_to_string(model).map_err(|e| e.to_string())?;
    let program = match language::compile_model(&source, name) {
        (Some(p), _) => p,
        (None, ds) => return Err(format!("does not compile: {}", ds[0].message)),
    };
    let data = DataFile::parse(&std::fs::read_to_string(data).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let g = language::ad::gradient(&program).map_err(|ds| format!("AD: {}", ds[0].message))?;
    let cfg =
        language::batch::lower_gradient(&g).map_err(|ds| format!("CFG: {}", ds[0].message))?;
    let model = Model::new(&program, &data).map_err(|e| format!("data: {e}"))?;
    Ok(Case { cfg, model })
}

/// Lane `l`'s point: uniform(−2, 2) per coordinate, as Stan's inits.
pub fn theta(n: usize, lane: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed, lane as u32, 0);
    (0..n).map(|_| 4.0 * rng.uniform() - 2.0).collect()
}

/// Equal, or within 1e-12 relative (IEEE arithmetic and the C library's
/// functions on both sides).
pub fn close(got: f64, want: f64) -> bool {
    if got == want || (got.is_nan() && want.is_nan()) {
        return true;
    }
    (got - want).abs() <= 1e-12 * got.abs().max(want.abs())
}

/// backend-cpu as the reference: program-counter batching, products summed
/// in the interpreter's order (no GEMM), as the device sums them.
pub fn reference(case: &Case) -> Result<BatchedModel, backend_cpu::exec::ExecError> {
    BatchedModel::new(
        case.cfg.clone(),
        case.model.clone(),
        ExecConfig {
            batching: Batching::ProgramCounter,
            gemm: false,
            ..ExecConfig::default()
        },
    )
}

/// [`check_lane_by`] for the native executor.
pub fn check_lane(
    at: &str,
    got: &LaneGradient,
    want: &Result<(f64, Vec<f64>), runtime::RuntimeError>,
) -> Result<(), String> {
    check_lane_by(at, got, want, "native", close)
}

/// A lane of `engine` against backend-cpu's: the same lp and gradient (by
/// `close`), or errors of the same kind.
pub fn check_lane_by(
    at: &str,
    got: &LaneGradient,
    want: &Result<(f64, Vec<f64>), runtime::RuntimeError>,
    engine: &str,
    close: impl Fn(f64, f64) -> bool,
) -> Result<(), String> {
    match (got, want) {
        (Ok((lp, grad)), Ok((lp0, grad0))) => {
            if !close(*lp, *lp0) {
                return Err(format!("{at}: lp {lp:e}, backend-cpu {lp0:e}"));
            }
            if grad.len() != grad0.len() {
                return Err(format!("{at}: gradient of {} values", grad.len()));
            }
            for (k, (a, b)) in grad.iter().zip(grad0).enumerate() {
                if !close(*a, *b) {
                    return Err(format!("{at}: gradient[{k}] {a:e}, backend-cpu {b:e}"));
                }
            }
            Ok(())
        }
        (Err(a), Err(b)) if a.kind == b.kind => Ok(()),
        (a, b) => Err(format!("{at}: {engine} {a:?}, backend-cpu {b:?}")),
    }
}

/// Write a model and its data into `dir`; load it.
pub fn case_from(dir: &Path, name: &str, model: &str, data: &str) -> Case {
    let path = dir.join(format!("{name}.stan"));
    std::fs::write(&path, model).unwrap();
    let data_path = dir.join(format!("{name}.json"));
    std::fs::write(&data_path, data).unwrap();
    load(name, &path, &data_path).unwrap()
}
