//! Compiling CUDA C with NVRTC, NVIDIA's runtime compiler, loaded
//! dynamically (`libnvrtc.so.12`, from the `nvidia-cuda-nvrtc-cu12` wheel on
//! machines without a CUDA toolkit; see scripts/setup.d/40-nvrtc.sh).
//!
//! [`compile`] returns PTX for a virtual architecture (`compute_80`, ...),
//! which the driver JIT-compiles for the device at module load, or a cubin
//! for a real one (`sm_90`, ...), for which NVRTC runs ptxas itself.

use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys};

/// What to compile to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// PTX for a virtual architecture, e.g. `compute_80`.
    Ptx(&'static str),
    /// Machine code (cubin) for a real architecture, e.g. `sm_90`.
    Cubin(&'static str),
}

impl Target {
    fn arch(self) -> &'static str {
        match self {
            Target::Ptx(arch) | Target::Cubin(arch) => arch,
        }
    }
}

/// The targets every generated kernel is checked against.
pub const CHECKED_TARGETS: [Target; 3] = [
    Target::Ptx("compute_80"),
    Target::Ptx("compute_90"),
    Target::Cubin("sm_90"),
];

/// Compiler output: PTX text or a cubin image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compiled {
    Ptx(String),
    Cubin(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error(
        "NVRTC (libnvrtc.so.12) not found; run scripts/setup.d/40-nvrtc.sh and set BAT_NVRTC_DIR"
    )]
    NvrtcNotFound,
    #[error("CUDA source contains a NUL byte")]
    NulInSource,
    #[error("NVRTC failed to compile for {arch}:\n{log}")]
    Failed { arch: String, log: String },
    #[error("NVRTC call {call} failed: {code}")]
    Nvrtc { call: &'static str, code: String },
}

/// Load NVRTC: from `$BAT_NVRTC_DIR`, else from the project venv's wheel
/// (`$BAT_VENV`, default `~/.cache/bat-venv`), else from the library search
/// path. (The search path is fixed at process start; loading by full path
/// makes cudarc's later `dlopen("libnvrtc.so.12")` find this copy by its
/// soname.)
pub fn nvrtc_available() -> bool {
    static PRELOADED: OnceLock<Option<libloading::Library>> = OnceLock::new();
    PRELOADED.get_or_init(|| {
        let path = nvrtc_dir()?.join("libnvrtc.so.12");
        // SAFETY: libnvrtc's initialisers have no preconditions.
        unsafe { libloading::Library::new(path) }.ok()
    });
    // SAFETY: only tries to dlopen libnvrtc under its usual names.
    unsafe { sys::is_culib_present() }
}

/// Where the `nvidia-cuda-nvrtc-cu12` wheel put libnvrtc, if anywhere.
pub fn nvrtc_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BAT_NVRTC_DIR") {
        return Some(PathBuf::from(dir));
    }
    let venv = match std::env::var_os("BAT_VENV") {
        Some(venv) => PathBuf::from(venv),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/bat-venv"),
    };
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.flatten()
        .map(|python| python.path().join("site-packages/nvidia/cuda_nvrtc/lib"))
        .find(|dir| dir.join("libnvrtc.so.12").exists())
}

/// NVRTC's version, e.g. (12, 9).
pub fn version() -> Result<(i32, i32), CompileError> {
    if !nvrtc_available() {
        return Err(CompileError::NvrtcNotFound);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| nvrtc_error("nvrtcVersion", e))?;
    Ok((major, minor))
}

/// Compile CUDA C `source` (kernels declared `extern "C" __global__`) for
/// `target`. A compile error carries NVRTC's log.
pub fn compile(source: &str, target: Target) -> Result<Compiled, CompileError> {
    let cubin = matches!(target, Target::Cubin(_));
    compile_for(source, target.arch(), cubin)
}

/// [`compile`] for an architecture named at run time (`compute_86`: PTX;
/// with `cubin`, `sm_86`: machine code).
pub fn compile_for(source: &str, arch: &str, cubin: bool) -> Result<Compiled, CompileError> {
    if !nvrtc_available() {
        return Err(CompileError::NvrtcNotFound);
    }
    let source = CString::new(source).map_err(|_| CompileError::NulInSource)?;
    // A libnvrtc lacking a symbol cudarc expects panics inside cudarc.
    catch_unwind(AssertUnwindSafe(|| compile_loaded(&source, arch, cubin))).unwrap_or_else(|_| {
        Err(CompileError::Nvrtc {
            call: "load",
            code: "libnvrtc lacks a required symbol".to_string(),
        })
    })
}

fn compile_loaded(source: &CString, arch: &str, cubin: bool) -> Result<Compiled, CompileError> {
    let program = result::create_program(source, Some(c"bat_kernels.cu"))
        .map_err(|e| nvrtc_error("nvrtcCreateProgram", e))?;
    let outcome = compile_program(program, arch, cubin);
    // SAFETY: `program` was created above and is destroyed once.
    let _ = unsafe { result::destroy_program(program) };
    outcome
}

fn compile_program(
    program: sys::nvrtcProgram,
    arch: &str,
    cubin: bool,
) -> Result<Compiled, CompileError> {
    let options = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        // IEEE semantics: results must match the CPU backend to 1e-12.
        "--fmad=false".to_string(),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
        "--ftz=false".to_string(),
    ];
    // SAFETY: `program` is live until the caller destroys it.
    let compiled = unsafe { result::compile_program(program, &options) };
    if compiled.is_err() {
        // SAFETY: as above.
        let log = unsafe { result::get_program_log(program) }
            .map(|log| c_chars_to_string(&log))
            .unwrap_or_default();
        return Err(CompileError::Failed {
            arch: arch.to_string(),
            log,
        });
    }
    match cubin {
        false => {
            // SAFETY: as above; compiled successfully.
            let ptx =
                unsafe { result::get_ptx(program) }.map_err(|e| nvrtc_error("nvrtcGetPTX", e))?;
            Ok(Compiled::Ptx(c_chars_to_string(&ptx)))
        }
        true => {
            let mut size = 0usize;
            // SAFETY: as above; out-parameter.
            unsafe { sys::nvrtcGetCUBINSize(program, &mut size) }
                .result()
                .map_err(|e| nvrtc_error("nvrtcGetCUBINSize", e))?;
            let mut cubin = vec![0u8; size];
            // SAFETY: `cubin` has the size NVRTC asked for.
            unsafe { sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr() as *mut c_char) }
                .result()
                .map_err(|e| nvrtc_error("nvrtcGetCUBIN", e))?;
            Ok(Compiled::Cubin(cubin))
        }
    }
}

fn c_chars_to_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn nvrtc_error(call: &'static str, e: result::NvrtcError) -> CompileError {
    CompileError::Nvrtc {
        call,
        code: format!("{:?}", e.0),
    }
}
