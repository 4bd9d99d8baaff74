//! Programs run whole on the device ([`SamplerDevice`]): random draws
//! from each lane's own Philox stream, user-function recursion on the
//! device's stacks, and records of external calls copied back in chunks,
//! against the scalar interpreter running the same program per lane —
//! bit for bit — through the stub libcuda and the CUDA-on-CPU shim.
//!
//! cudarc loads libcuda once per process, so the checks run in a child
//! process (this test binary again, running one `#[ignore]`d test) whose
//! `LD_LIBRARY_PATH` points at the stub. With `BAT_CUDA_DEVICE=real` the
//! child runs on a real GPU (see `common`): its `log`, `sin`, ... (Box–
//! Muller) are CUDA's, so records there agree to `REAL_DEVICE_TOLERANCE`,
//! not bit for bit; the random streams themselves are integer arithmetic.

mod common;

use common::models::repo_root;

use common::{device_close, device_mode, run_child_on_the_device};

use backend_cuda::device_mode::DeviceMode;
use backend_cuda::gradient::GradientDevice;
use backend_cuda::sampler::SamplerDevice;
use codegen::sampler::RecordHost;
use codegen::shape::{Inner, Shape};
use language::data::DataFile;
use language::value::Value;
use runtime::{Host, Model, Rng, RuntimeError, run_function};

/// Draws of every kind the sampler program makes (vectorised normals, a
/// uniform with per-lane bounds, a uniform drawn only when a conditional
/// expression's branch is taken, draws in a recursive function) reported
/// through an external function.
const PROGRAM: &str = r#"
functions {
  void emit(int k, vector x, real u, real w);
  real walk_rng(real x, int depth) {
    if (depth == 0) {
      return x;
    }
    real step = normal_rng(0, 1);
    real rest = walk_rng(x + step, depth - 1);
    return rest + uniform_rng(-1, 1);
  }
  void draws_rng(vector mu, real lo, int rounds) {
    int n = rows(mu);
    for (k in 1:rounds) {
      vector[n] x = to_vector(normal_rng(mu, 2)) ./ sqrt(rep_vector(4, n));
      real u = uniform_rng(lo, lo + 1);
      int coin = u > lo + 0.5 ? 1 : uniform_rng(0, 1) < 0.3;
      real w = walk_rng(u, k % 4);
      emit(k, x, u + coin, w);
    }
  }
}
"#;

#[test]
fn device_programs_draw_what_the_interpreter_draws() {
    let out = run_child_on_the_device("child_runs_the_draws_program");
    eprintln!("{out}");
}

/// Every record, as (lane, function, arguments).
#[derive(Default)]
struct Collect(Vec<(usize, String, Vec<Value>)>);

impl RecordHost for Collect {
    fn record(
        &mut self,
        lane: usize,
        function: &str,
        args: Vec<Value>,
    ) -> Result<(), RuntimeError> {
        self.0.push((lane, function.to_string(), args));
        Ok(())
    }
}

/// The interpreter's host: collects one lane's records.
struct Lane(usize, Vec<(usize, String, Vec<Value>)>);

impl Host for Lane {
    fn call_external(
        &mut self,
        name: &str,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        self.1.push((self.0, name.to_string(), args));
        Ok(None)
    }
}

/// A gradient device (eight schools) providing the device, compiler and
/// lane count.
fn gradient_device(lanes: usize) -> GradientDevice {
    let source =
        std::fs::read_to_string(repo_root().join("examples/eight_schools_noncentered.bat"))
            .unwrap();
    let data = DataFile::parse(
        &std::fs::read_to_string(repo_root().join("examples/eight_schools_noncentered.data.json"))
            .unwrap(),
    )
    .unwrap();
    let program = language::compile_model(&source, "eight_schools").0.unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let cfg = language::batch::lower_gradient(&g).unwrap();
    let model = Model::new(&program, &data).unwrap();
    GradientDevice::new(&cfg, model, lanes).unwrap_or_else(|e| panic!("{e}"))
}

fn flat(values: &[Value]) -> Vec<f64> {
    let mut flat = Vec::new();
    for v in values {
        v.flatten_reals(&mut flat);
    }
    flat
}

/// Bit for bit on the stub; to `REAL_DEVICE_TOLERANCE` on a real GPU.
fn same_records(device: &[Value], cpu: &[Value]) -> bool {
    let (device, cpu) = (flat(device), flat(cpu));
    match device_mode() {
        DeviceMode::Stub => {
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
            bits(&device) == bits(&cpu)
        }
        DeviceMode::Real => {
            device.len() == cpu.len()
                && device
                    .iter()
                    .zip(&cpu)
                    .all(|(&d, &c)| device_close(d, c, 0.0))
        }
    }
}

#[test]
#[ignore = "run by device_programs_draw_what_the_interpreter_draws with the stub driver"]
fn child_runs_the_draws_program() {
    let (program, diagnostics) = language::compile_with_externals(PROGRAM, "draws");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let cfg = language::batch::lower(&program, &[], 0).unwrap();
    let chains: Vec<u32> = vec![3, 0, 7, 1, 2, 11];
    let lanes = chains.len();
    let seed = 0xC0FFEE_u64;
    let rounds = 9;
    let args: Vec<Vec<Value>> = (0..lanes)
        .map(|l| {
            vec![
                Value::Vector(vec![l as f64, -0.5 * l as f64, 1.25]),
                Value::Real(l as f64 - 2.5),
                Value::Int(rounds),
            ]
        })
        .collect();
    let params = [Shape::of(Inner::Vector(3)), Shape::REAL, Shape::INT];
    // Records copied back every 4 calls: several copies per run.
    let mut device = SamplerDevice::new(&cfg, "draws_rng", &params, gradient_device(lanes), 4)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut collected = Collect::default();
    let outcomes = device
        .run(&args, &chains, seed, &mut collected)
        .unwrap_or_else(|e| panic!("{e}"));
    for (lane, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "lane {lane}: {outcome:?}");
    }
    let mut compared = 0;
    for lane in 0..lanes {
        let mut host = Lane(lane, Vec::new());
        let rng = Rng::new(seed, chains[lane], 0);
        run_function(&program, "draws_rng", args[lane].clone(), rng, &mut host).unwrap();
        let device_records: Vec<&(usize, String, Vec<Value>)> =
            collected.0.iter().filter(|r| r.0 == lane).collect();
        assert_eq!(device_records.len(), host.1.len(), "lane {lane}");
        assert_eq!(host.1.len(), rounds as usize);
        for (d, c) in device_records.iter().zip(&host.1) {
            assert_eq!(d.1, c.1);
            assert_eq!(d.2.len(), c.2.len());
            assert!(
                same_records(&d.2, &c.2),
                "lane {lane}: device {:?}, cpu {:?}",
                d.2,
                c.2
            );
            compared += 1;
        }
    }
    assert_eq!(compared, lanes * rounds as usize);
    eprintln!("{compared} records equal ({:?} device)", device_mode());
}

/// The generated source of the draws program compiles with NVRTC for every
/// checked target.
#[test]
fn draws_program_compiles_with_nvrtc() {
    let (program, diagnostics) = language::compile_with_externals(PROGRAM, "draws");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let cfg = language::batch::lower(&program, &[], 0).unwrap();
    let params = [Shape::of(Inner::Vector(3)), Shape::REAL, Shape::INT];
    let generated =
        codegen::sampler::generate(&cfg, "draws_rng", &params).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        generated.not_generated.is_empty(),
        "{:?}",
        generated.not_generated
    );
    for target in backend_cuda::nvrtc::CHECKED_TARGETS {
        backend_cuda::nvrtc::compile(&generated.source, target)
            .unwrap_or_else(|e| panic!("{target:?}: {e}"));
    }
}
