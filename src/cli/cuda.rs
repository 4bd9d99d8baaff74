//! `bat ir FILE --emit cuda` and `bat cuda-probe`: the CUDA backend's
//! generated source and whether this machine can run it.

use super::model;
use codegen::program;
use std::path::Path;
use std::process::ExitCode;

/// Print the CUDA C of the model's gradient program: for each block of
/// its PC IR, the kernels that run the block's ops over the active lanes
/// and write each lane's next block. Sizes come from the data, so the
/// kernels are made for one data set (FILE.data.json by default), like a
/// JIT-specialised program. Ops the generator lacks are `// not
/// generated` comments (such a model is refused by `--backend cuda`).
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
    let (pc, generated, _) = match codegen::gradient::generate(&cfg, &instance) {
        Ok(generated) => generated,
        Err(e) => {
            eprintln!("error: {}: {e}", compiled.file.name);
            return ExitCode::FAILURE;
        }
    };
    print!("{}", generated.source);
    let (total, with_code) = generated.op_counts(&pc);
    let kernels = generated.blocks.iter().map(Vec::len).sum::<usize>();
    eprintln!(
        "{kernels} kernels for {} blocks running {with_code} of the {total} ops of the gradient program; {} not generated",
        generated.blocks.iter().filter(|b| !b.is_empty()).count(),
        generated.not_generated.len(),
    );
    for n in &generated.not_generated {
        let at = match n.span.filter(|s| s.end > s.start) {
            Some(span) => {
                let (line, column) = program::position(&compiled.file.text, span);
                format!("line {line}, column {column}")
            }
            None => n.at.clone(),
        };
        eprintln!("  not generated: {at}: {}", n.reason);
    }
    ExitCode::SUCCESS
}

/// Print the CUDA C of the sampler program (NUTS, run on the device by
/// `bat run --backend cuda`) for the model's number of unconstrained
/// parameters: its blocks' kernels, the kernels packing each external
/// call's arguments, and the host loop's helpers. Ops the generator lacks
/// are `// not generated` comments.
pub fn emit_sampler(path: &Path, data: Option<&Path>, color: bool) -> ExitCode {
    let Ok(compiled) = model::compile(path, color) else {
        return ExitCode::FAILURE;
    };
    let data = model::data_path(path, data);
    let Ok(instance) = model::instantiate(&compiled, data.as_deref()) else {
        return ExitCode::FAILURE;
    };
    let generated = bat::sampler::cuda::device_sampler_program(
        instance.num_unconstrained(),
        bat::sampler::Metric::Diag,
    )
    .map_err(codegen::gradient::GeneratedCodeError::Setup)
    .and_then(|(cfg, params)| {
        codegen::sampler::generate(&cfg, bat::sampler::program::CHAIN_FUNCTION, &params)
    });
    let generated = match generated {
        Ok(generated) => generated,
        Err(e) => {
            eprintln!("error: the sampler program: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", generated.source);
    let kernels = generated.kernel_names().len();
    eprintln!(
        "{kernels} kernels for {} blocks of the sampler program ({} external calls); {} not generated",
        generated.blocks.iter().filter(|b| !b.is_empty()).count(),
        generated.externals.len(),
        generated.not_generated.len(),
    );
    for n in &generated.not_generated {
        let at = match n.span.filter(|s| s.end > s.start) {
            Some(span) => {
                let (line, column) = program::position(bat::sampler::program::NUTS_SOURCE, span);
                format!("nuts.stan:{line}:{column}")
            }
            None => n.at.clone(),
        };
        eprintln!("  not generated: {at}: {}", n.reason);
    }
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
