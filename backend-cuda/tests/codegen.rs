//! Kernels generated for the examples and the posteriordb models: all of
//! them compile with NVRTC (PTX for compute_80 and compute_90, sm_90 cubin),
//! and run through the CUDA-on-CPU shim they match the scalar interpreter
//! lane by lane to 1e-12 relative.
//!
//! To keep the cost small, all models' kernels go into one translation unit
//! (one NVRTC compile per target, one g++ compile).

use std::ffi::c_void;
use std::path::{Path, PathBuf};

use backend_cuda::codegen::{
    self, ERROR_STATUS, Generated, Layout, REJECTED_STATUS, STATUS_SLOT, TARGET_SLOT, frames,
};
use backend_cuda::nvrtc::{CHECKED_TARGETS, compile};
use backend_cuda::shim::{ShimModule, build_module};
use language::batch::cfg;
use language::data::DataFile;
use language::interp::Model;
use language::mir::Origin;
use language::value::Value;

const LANES: usize = 4;

struct Case {
    name: String,
    cfg: cfg::Program,
    model: Model,
    lanes: Vec<frames::Lane>,
    layout: Layout,
    generated: Generated,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus() -> PathBuf {
    let dir = std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/corpus"));
    let dir = dir.join("posteriordb");
    assert!(
        dir.is_dir(),
        "test corpus missing at {} (set BAT_CORPUS)",
        dir.display()
    );
    dir
}

/// (name, model file, data file) of every example and posteriordb model.
fn model_files() -> Vec<(String, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "bat"))
        .collect();
    examples.sort();
    for path in examples {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let data = path.with_extension("data.json");
        out.push((name, path, data));
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, dir.join("model.stan"), dir.join("data.json")));
    }
    out
}

/// Why a model has no kernels to check (it is reported, and counted).
fn load(name: &str, model_path: &Path, data_path: &Path) -> Result<Case, String> {
    let source = std::fs::read_to_string(model_path).map_err(|e| e.to_string())?;
    let program = match language::compile_model(&source, name) {
        (Some(p), _) => p,
        (None, d) => {
            return Err(format!(
                "does not compile: {:?}",
                d.first().map(|d| &d.message)
            ));
        }
    };
    let g = language::ad::gradient(&program)
        .map_err(|d| format!("no gradient program: {}", d[0].message))?;
    let cfg =
        language::batch::lower_gradient(&g).map_err(|d| format!("no CFG: {}", d[0].message))?;
    let data_text = std::fs::read_to_string(data_path).unwrap_or_else(|_| "{}".into());
    let data = DataFile::parse(&data_text).map_err(|e| e.to_string())?;
    let model = Model::new(&program, &data).map_err(|e| format!("data: {e}"))?;
    let mut lanes =
        frames::lanes(&model, &cfg, LANES, 7).map_err(|e| format!("no lane runs: {e}"))?;
    // The frames hold final values: loop variables are one past their
    // loop's end, so every index by them would be out of range. Set the
    // integer variables of the program (loop variables, counters) to 1, a
    // valid index of every non-empty container.
    for lane in &mut lanes {
        for (i, value) in lane.frame.values.iter_mut().enumerate() {
            let origin = cfg.mir.vars[i].origin;
            let is_data = matches!(origin, Origin::Data | Origin::TransformedData);
            if !is_data && matches!(value, Some(Value::Int(_))) {
                *value = Some(Value::Int(1));
            }
        }
    }
    let layout = Layout::from_frame(&cfg.mir, &lanes[0].frame);
    let generated = codegen::generate_named(&cfg, &layout, &format!("m{}", sanitize(name)));
    Ok(Case {
        name: name.to_string(),
        cfg,
        model,
        lanes,
        layout,
        generated,
    })
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn load_all() -> (Vec<Case>, Vec<String>) {
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    for (name, model, data) in model_files() {
        match load(&name, &model, &data) {
            Ok(case) => cases.push(case),
            Err(why) => skipped.push(format!("{name}: {why}")),
        }
    }
    (cases, skipped)
}

fn translation_unit(cases: &[Case]) -> String {
    let mut source = codegen::prelude();
    for case in cases {
        source.push_str(&case.generated.kernels_source);
    }
    source
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

#[test]
fn kernels_compile_with_nvrtc_and_match_the_interpreter_through_the_shim() {
    let (cases, skipped) = load_all();
    let n_kernels: usize = cases.iter().map(|c| c.generated.kernels.len()).sum();
    let n_ops: usize = cases.iter().map(|c| c.generated.n_ops).sum();
    let n_generated: usize = cases.iter().map(|c| c.generated.ops_generated()).sum();
    eprintln!(
        "{} models with kernels ({n_kernels} kernels running {n_generated} of {n_ops} ops of the gradients' basic blocks); {} without:\n  {}",
        cases.len(),
        skipped.len(),
        skipped.join("\n  ")
    );
    assert!(cases.len() >= 20, "too few models reach code generation");
    assert!(n_kernels >= 50, "too few kernels generated: {n_kernels}");

    let source = translation_unit(&cases);
    if let Some(path) = std::env::var_os("BAT_CUDA_DUMP") {
        std::fs::write(path, &source).unwrap();
    }
    // The three targets in parallel (NVRTC programs are independent).
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        let compiles: Vec<_> = CHECKED_TARGETS
            .into_iter()
            .map(|target| {
                let source = &source;
                scope.spawn(move || (target, compile(source, target)))
            })
            .collect();
        for handle in compiles {
            let (target, result) = handle.join().unwrap();
            if let Err(e) = result {
                panic!("{target:?}: {e}");
            }
        }
    });
    eprintln!(
        "NVRTC, {} lines for compute_80, compute_90 and sm_90: {:.1} s",
        source.lines().count(),
        started.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir().unwrap();
    let names: Vec<&str> = cases
        .iter()
        .flat_map(|c| c.generated.kernel_names())
        .collect();
    let library =
        build_module(&source, &names, dir.path(), "all_models").unwrap_or_else(|e| panic!("{e}"));
    let module = ShimModule::load(&library).unwrap();
    let mut failures = Vec::new();
    let mut stopped = std::collections::BTreeMap::new();
    for case in &cases {
        for kernel in &case.generated.kernels {
            let checked = check_kernel(case, kernel, &module);
            for status in checked.iter().flatten() {
                *stopped.entry(status.to_string()).or_insert(0) += 1;
            }
            if let Err(why) = checked {
                failures.push(format!(
                    "{} {} (b{} ops {:?}): {why}",
                    case.name, kernel.name, kernel.block, kernel.ops
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} kernels differ from the interpreter:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Values are compared only for lanes that run to the kernel's end.
    eprintln!("lane statuses after the kernels (0 ran, 1 rejected, 2 error): {stopped:?}");
    let ran = stopped.get("0").copied().unwrap_or(0);
    let total: usize = stopped.values().sum();
    assert!(
        ran * 10 >= total * 9,
        "too few lanes ran to the end: {stopped:?}"
    );
}

/// Run `kernel` on every lane (starting from the lane's final frame) and
/// compare every variable, the target and the rejection status with the
/// interpreter running the same statements from the same frame.
/// Returns each lane's status after the kernel.
fn check_kernel(
    case: &Case,
    kernel: &codegen::Kernel,
    module: &ShimModule,
) -> Result<Vec<f64>, String> {
    check_kernel_with(case, kernel, &mut |name, state, data, active, n_lanes| {
        run_on_shim(module, name, state, data, active, n_lanes)
    })
}

/// Runs a kernel by name on `state` (`[slot][lane]`) for the `active` lanes.
type Runner<'a> = dyn FnMut(&str, &mut Vec<f64>, &[f64], &[i32], usize) -> Result<(), String> + 'a;

fn check_kernel_with(
    case: &Case,
    kernel: &codegen::Kernel,
    run: &mut Runner,
) -> Result<Vec<f64>, String> {
    let n_lanes = case.lanes.len();
    let n_slots = case.layout.n_slots;
    let mut state = vec![0.0; n_slots * n_lanes];
    for (lane, l) in case.lanes.iter().enumerate() {
        for (slot, value) in case.layout.lane_slots(&l.frame).into_iter().enumerate() {
            state[slot * n_lanes + lane] = value;
        }
    }
    let data = if case.layout.data.is_empty() {
        vec![0.0]
    } else {
        case.layout.data.clone()
    };
    // Lanes in reverse order, to check that `active` is honoured.
    let active: Vec<i32> = (0..n_lanes as i32).rev().collect();
    run(&kernel.name, &mut state, &data, &active, n_lanes)?;

    let mut statuses = Vec::new();
    for (lane, l) in case.lanes.iter().enumerate() {
        let entry = case.cfg.entry(language::batch::GRADIENT_ENTRY).unwrap();
        let ops = &case.cfg.function(entry).blocks[kernel.block].ops[kernel.ops.clone()];
        let stacks = case.cfg.num_ad_stacks;
        let expected =
            case.model
                .run_statements(&case.cfg.mir, stacks, &l.frame, &l.theta, ops, true);
        let status = state[STATUS_SLOT * n_lanes + lane];
        statuses.push(status);
        let expected = match expected {
            Err(e) if e.is_rejection() && status == REJECTED_STATUS => continue,
            Err(e) if !e.is_rejection() && status == ERROR_STATUS => continue,
            Err(e) => {
                return Err(format!(
                    "lane {lane}: interpreter stops ({e}), kernel status is {status}"
                ));
            }
            Ok(frame) => frame,
        };
        if status != 0.0 {
            return Err(format!("lane {lane}: kernel rejects, interpreter does not"));
        }
        let want = case.layout.lane_slots(&expected);
        for slot in 0..n_slots {
            let got = state[slot * n_lanes + lane];
            if !close(got, want[slot]) {
                let what = if slot == TARGET_SLOT {
                    "target".to_string()
                } else {
                    format!("slot {slot}")
                };
                return Err(format!(
                    "lane {lane}: {what} is {got:e}, interpreter {:e}",
                    want[slot]
                ));
            }
        }
    }
    Ok(statuses)
}

#[test]
fn unsupported_statements_are_reported_not_generated() {
    let root = repo_root().join("examples");
    let case = load(
        "eight_schools_noncentered",
        &root.join("eight_schools_noncentered.bat"),
        &root.join("eight_schools_noncentered.data.json"),
    )
    .unwrap();
    // The parameter transform and its reverse are not generated yet.
    let reasons: Vec<&str> = case
        .generated
        .not_generated
        .iter()
        .map(|n| n.reason.as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("read_param")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("param_adjoint")),
        "{reasons:?}"
    );
    assert!(
        case.generated
            .source
            .contains("// not generated: mu = read_param(0);")
    );
    for n in &case.generated.not_generated {
        let at = n.at.strip_prefix("log_density_gradient/b").unwrap();
        let (b, op) = at.split_once("/op").unwrap();
        let (b, op): (usize, usize) = (b.parse().unwrap(), op.parse().unwrap());
        let in_kernel = |k: &codegen::Kernel| k.block == b && k.ops.contains(&op);
        assert!(!case.generated.kernels.iter().any(in_kernel));
    }
    // Every other op is in exactly one kernel.
    assert_eq!(
        case.generated.ops_generated() + case.generated.not_generated.len(),
        case.generated.n_ops
    );
}

/// Lanes that stop inside a kernel: an index out of range is an error of
/// that lane, a failed argument check a rejection, as in the interpreter;
/// the other lanes go on.
#[test]
fn lanes_stop_on_index_errors_and_rejections_like_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("loop.stan");
    std::fs::write(
        &model,
        "data { int N; vector[N] y; }\nparameters { real mu; real<lower=0> sigma; }\n\
         model { for (n in 1:N) y[n] ~ normal(mu, sigma); }\n",
    )
    .unwrap();
    let data = dir.path().join("loop.json");
    std::fs::write(&data, r#"{"N": 3, "y": [0.5, -1.0, 2.0]}"#).unwrap();
    let mut case = load("loop", &model, &data).unwrap();
    assert_eq!(case.lanes.len(), LANES);
    let var = |name: &str| {
        let vars = &case.cfg.mir.vars;
        vars.iter().position(|v| v.name == name).unwrap()
    };
    let (n, sigma) = (var("n"), var("sigma"));
    case.lanes[0].frame.values[n] = Some(Value::Int(4));
    case.lanes[1].frame.values[sigma] = Some(Value::Real(-1.0));

    let dir = tempfile::tempdir().unwrap();
    let source = translation_unit(std::slice::from_ref(&case));
    let names = case.generated.kernel_names();
    let library = build_module(&source, &names, dir.path(), "loop").unwrap();
    let module = ShimModule::load(&library).unwrap();
    let mut seen = Vec::new();
    for kernel in &case.generated.kernels {
        let statuses = check_kernel(&case, kernel, &module).unwrap_or_else(|e| panic!("{e}"));
        seen.push(statuses);
    }
    assert!(seen.iter().any(|s| s[0] == ERROR_STATUS), "{seen:?}");
    assert!(seen.iter().any(|s| s[1] == REJECTED_STATUS), "{seen:?}");
    assert!(seen.iter().all(|s| s[2] == 0.0 && s[3] == 0.0), "{seen:?}");
}

fn run_on_shim(
    module: &ShimModule,
    name: &str,
    state: &mut [f64],
    data: &[f64],
    active: &[i32],
    n_lanes: usize,
) -> Result<(), String> {
    let mut state_ptr = state.as_mut_ptr();
    let mut data_ptr = data.as_ptr();
    let mut active_ptr = active.as_ptr();
    let mut n_active = active.len() as i32;
    let mut n_lanes_arg = n_lanes as i32;
    let mut args: Vec<*mut c_void> = vec![
        (&mut state_ptr) as *mut _ as *mut c_void,
        (&mut data_ptr) as *mut _ as *mut c_void,
        (&mut active_ptr) as *mut _ as *mut c_void,
        (&mut n_active) as *mut _ as *mut c_void,
        (&mut n_lanes_arg) as *mut _ as *mut c_void,
    ];
    // SAFETY: the arguments follow the kernel ABI; `state` holds every slot
    // of every lane.
    unsafe { module.launch(name, 1, 32, &mut args) }.map_err(|e| e.to_string())
}

/// On a machine with a CUDA device, the generated kernels run on it (PTX
/// for the device's architecture, loaded and launched through cudarc) and
/// match the interpreter like the shim's; elsewhere the backend reports
/// that there is no device (checked here, so this test always asserts).
#[test]
fn generated_kernels_run_on_a_real_device_when_there_is_one() {
    use backend_cuda::device::Device;
    use backend_cuda::nvrtc::{Compiled, Target};
    use backend_cuda::probe::Unavailable;
    let device = match Device::open() {
        Ok(device) => device,
        Err(backend_cuda::device::DeviceError::Unavailable(why)) => {
            assert!(
                matches!(why, Unavailable::NoDriver | Unavailable::NoDevice { .. }),
                "{why}"
            );
            assert!(why.to_string().ends_with("; use --backend cpu"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let info = backend_cuda::probe().unwrap();
    let arch: &'static str = Box::leak(
        format!(
            "compute_{}{}",
            info.compute_capability.0, info.compute_capability.1
        )
        .into_boxed_str(),
    );
    let root = repo_root().join("examples");
    let case = load(
        "eight_schools_noncentered",
        &root.join("eight_schools_noncentered.bat"),
        &root.join("eight_schools_noncentered.data.json"),
    )
    .unwrap();
    let ptx = compile(&case.generated.source, Target::Ptx(arch)).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(ptx, Compiled::Ptx(_)));
    let module = device.load(ptx, &case.generated.kernel_names()).unwrap();
    for kernel in &case.generated.kernels {
        check_kernel_with(&case, kernel, &mut |name, state, data, active, n_lanes| {
            let f = module.kernel(name).ok_or("kernel not loaded")?;
            let mut lanes = device
                .upload(state, n_lanes, data, active)
                .map_err(|e| e.to_string())?;
            device.launch(f, &mut lanes).map_err(|e| e.to_string())?;
            *state = device.download(&lanes).map_err(|e| e.to_string())?;
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", kernel.name));
    }
}
