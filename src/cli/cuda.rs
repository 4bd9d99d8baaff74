//! `bat ir FILE --emit cuda` and `bat cuda-probe`: the CUDA backend's
//! generated source and whether this machine can run it.

use super::model;
use backend_cuda::codegen::{self, Layout, frames};
use std::path::Path;
use std::process::ExitCode;

/// Print the CUDA C kernels of the model's gradient program. Sizes come
/// from the data, so the kernels are made for one data set (FILE.data.json
/// by default), like a JIT-specialised program.
pub fn emit(path: &Path, data: Option<&Path>, color: bool) -> ExitCode {
    let Ok(compiled) = model::compile(path, color) else {
        return ExitCode::FAILURE;
    };
    let Ok(g) = model::gradient(&compiled, color) else {
        return ExitCode::FAILURE;
    };
    let cfg = match language::batch::lower_gradient(&g) {
        Ok(cfg) => cfg,
        Err(diagnostics) => {
            for d in diagnostics {
                eprintln!("error: {}: {}", compiled.file.name, d.message);
            }
            return ExitCode::FAILURE;
        }
    };
    let data = model::data_path(path, data);
    let Ok(instance) = model::instantiate(&compiled, data.as_deref()) else {
        return ExitCode::FAILURE;
    };
    // The interpreter's values at one initial point give every variable's size.
    let lanes = match frames::lanes(&instance, &cfg, 1, 0) {
        Ok(lanes) => lanes,
        Err(e) => {
            eprintln!(
                "error: {}: cannot size the kernels: the gradient program fails at every initial point tried: {e}",
                compiled.file.name
            );
            return ExitCode::FAILURE;
        }
    };
    let layout = Layout::from_frame(&cfg.mir, &lanes[0].frame);
    let generated = codegen::generate(&cfg, &layout);
    print!("{}", generated.source);
    eprintln!(
        "{} kernels running {} of the {} ops of the gradient's basic blocks; {} not generated (see the `// not generated` comments)",
        generated.kernels.len(),
        generated.ops_generated(),
        generated.n_ops,
        generated.not_generated.len(),
    );
    ExitCode::SUCCESS
}

/// Report the CUDA device, or why there is none (exit code 1).
pub fn probe() -> ExitCode {
    match backend_cuda::probe() {
        Ok(info) => {
            println!(
                "CUDA device 0 of {}: {} (compute capability {}.{})",
                info.device_count, info.name, info.compute_capability.0, info.compute_capability.1
            );
            match backend_cuda::nvrtc::version() {
                Ok((major, minor)) => println!("NVRTC {major}.{minor}"),
                Err(e) => println!("NVRTC: {e}"),
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
