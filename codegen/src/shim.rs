//! Running generated CUDA C without a GPU: the CUDA-on-CPU shim header
//! (`shim/cuda_on_cpu.h`) compiles kernels with g++ into a shared library
//! for the host. The native executors (`backend-native`) build their
//! programs so ([`build_module_native`]); the CUDA backend's stub driver
//! (`backend_cuda::stub`) loads such libraries through cudarc's unmodified
//! host calls; in-process, [`ShimModule`] calls their kernels directly.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CUDA-on-CPU shim header.
pub const SHIM_HEADER: &str = include_str!("../shim/cuda_on_cpu.h");

#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    #[error("could not write {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("could not run {compiler}: {error}")]
    NoCompiler {
        compiler: String,
        error: std::io::Error,
    },
    #[error("{compiler} failed:\n{log}")]
    CompileFailed { compiler: String, log: String },
    #[error("could not load {path}: {error}")]
    Load { path: PathBuf, error: String },
    #[error("no kernel {0} in the shim module")]
    NoKernel(String),
}

/// The C++ compiler that builds shim modules (and so `--backend native`).
pub const COMPILER: &str = "g++";

/// Whether [`COMPILER`] runs on this machine (`g++ --version`); the error
/// says why not.
pub fn compiler_available() -> Result<(), String> {
    match Command::new(COMPILER).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`{COMPILER} --version` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(error) => Err(format!("{COMPILER} not found ({error})")),
    }
}

/// Write `text` to `path`.
pub fn write(path: &Path, text: &str) -> Result<(), ShimError> {
    std::fs::write(path, text).map_err(|error| ShimError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// Run `compiler` with `args` in `dir`; a failure's error holds its stderr.
pub fn run(
    compiler: &str,
    args: &[impl AsRef<std::ffi::OsStr>],
    dir: &Path,
) -> Result<(), ShimError> {
    let output = Command::new(compiler)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|error| ShimError::NoCompiler {
            compiler: compiler.to_string(),
            error,
        })?;
    if !output.status.success() {
        return Err(ShimError::CompileFailed {
            compiler: compiler.to_string(),
            log: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(())
}

/// Compile CUDA C `source` with g++ against the shim into `dir/NAME.so`,
/// exporting a launcher for each of `kernels` (a block's threads run as
/// real threads, so `__syncthreads` works).
pub fn build_module(
    source: &str,
    kernels: &[&str],
    dir: &Path,
    name: &str,
) -> Result<PathBuf, ShimError> {
    build(source, kernels, dir, name, "BAT_SHIM_EXPORT", "-O1")
}

/// [`build_module`] for kernels whose threads never synchronize: each
/// launch runs its threads one after another on the calling thread.
pub fn build_module_serial(
    source: &str,
    kernels: &[&str],
    dir: &Path,
    name: &str,
) -> Result<PathBuf, ShimError> {
    build(source, kernels, dir, name, "BAT_SHIM_EXPORT_SERIAL", "-O1")
}

/// [`build_module_serial`] for the native executors (`backend_native`):
/// `defines` (preprocessor lines) before the kernels, compiled at
/// `level` (`-O0` to `-O3`) with [`NATIVE_FLAGS`], still without fused
/// multiply-adds, so results stay the shim's bit for bit at every level.
pub fn build_module_native(
    source: &str,
    defines: &str,
    kernels: &[&str],
    dir: &Path,
    name: &str,
    level: &str,
) -> Result<PathBuf, ShimError> {
    let (args, library) = native_build(source, defines, kernels, dir, name, level)?;
    run(COMPILER, &args, dir)?;
    Ok(library)
}

/// [`build_module_native`] in a compiler process that outlives this one
/// if need be: it builds in `dir`, moves the library to `target` (an
/// atomic rename within one file system) and removes `dir`, so a build
/// still running when the process exits still lands at `target`. Wait for
/// the child to use the library; its stderr holds the compiler's log.
pub fn spawn_module_native(
    source: &str,
    defines: &str,
    kernels: &[&str],
    dir: &Path,
    name: &str,
    level: &str,
    target: &Path,
) -> Result<std::process::Child, ShimError> {
    let (args, library) = native_build(source, defines, kernels, dir, name, level)?;
    let script = r#"dir=$1; built=$2; target=$3; shift 3
cd "$dir" && "$0" "$@" && mv -f "$built" "$target"; status=$?
cd / && rm -rf "$dir"; exit $status"#;
    Command::new("sh")
        .args(["-c", script, COMPILER])
        .arg(dir)
        .arg(&library)
        .arg(target)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| ShimError::NoCompiler {
            compiler: "sh".into(),
            error,
        })
}

fn native_build(
    source: &str,
    defines: &str,
    kernels: &[&str],
    dir: &Path,
    name: &str,
    level: &str,
) -> Result<(Vec<String>, PathBuf), ShimError> {
    let source = format!("{defines}{source}");
    let flags = format!("{level} {NATIVE_FLAGS}");
    prepare(
        &source,
        kernels,
        dir,
        name,
        "BAT_SHIM_EXPORT_SERIAL",
        &flags,
    )
}

/// The flags of [`build_module_native`] besides the optimization level.
/// Initial-exec TLS: the shim's launch indices are thread-locals, read by
/// every kernel call; the general model's `__tls_get_addr` call per read
/// cost a quarter of a one-lane gradient (a library loaded after start-up
/// may use it: glibc keeps static TLS room for such small thread-locals).
/// No semantic interposition (calls between the kernels and the sampler's
/// dispatcher may be inlined). At `-O3`: 13% fewer instructions than
/// `-O2` on eight schools' native run (callgrind), with the same values —
/// no level lets the compiler reassociate or contract floating-point
/// operations. `-march=native`: this CPU's vector instructions (AVX2
/// where there is one) for the element loops: 10% fewer instructions in
/// the sampler's blocks, the same values (IEEE operations give the same
/// result at any vector width; no contraction, no reassociation). The
/// native library cache key includes the CPU (`backend_native::gradient`'s `host_cpu`).
/// `-fno-tree-loop-distribute-patterns`: the generated code's element
/// loops copy and clear a few to a hundred numbers each (a call frame's
/// saves, a function's result); g++ turned them into `memcpy`/`memset`
/// calls, whose entry and size dispatch cost more than the copies (8% of
/// eight schools' sampler instructions); inline they are vector moves.
pub const NATIVE_FLAGS: &str = "-march=native -ftls-model=initial-exec \
    -fno-semantic-interposition -fno-tree-loop-distribute-patterns";

fn build(
    source: &str,
    kernels: &[&str],
    dir: &Path,
    name: &str,
    export: &str,
    optimization: &str,
) -> Result<PathBuf, ShimError> {
    let (args, library) = prepare(source, kernels, dir, name, export, optimization)?;
    run(COMPILER, &args, dir)?;
    Ok(library)
}

/// Write the files of a build in `dir`: the compiler's arguments (run in
/// `dir`) and the library they make.
fn prepare(
    source: &str,
    kernels: &[&str],
    dir: &Path,
    name: &str,
    export: &str,
    optimization: &str,
) -> Result<(Vec<String>, PathBuf), ShimError> {
    write(&dir.join("cuda_on_cpu.h"), SHIM_HEADER)?;
    let kernel_file = format!("{name}.cu");
    write(&dir.join(&kernel_file), source)?;
    // Serial kernels need none of the threaded launch's headers.
    let serial_only = if export == "BAT_SHIM_EXPORT_SERIAL" {
        "#define BAT_SHIM_SERIAL_ONLY\n"
    } else {
        ""
    };
    let mut wrapper =
        format!("{serial_only}#include \"cuda_on_cpu.h\"\n#include \"{kernel_file}\"\n");
    for kernel in kernels {
        wrapper.push_str(&format!("{export}({kernel})\n"));
    }
    let wrapper_file = format!("{name}_shim.cpp");
    write(&dir.join(&wrapper_file), &wrapper)?;
    let library = dir.join(format!("{name}.so"));
    let out = library.to_string_lossy().into_owned();
    // -ffp-contract=off: no fused multiply-adds, like NVRTC with --fmad=false.
    let mut args = vec!["-std=c++20"];
    args.extend(optimization.split_whitespace());
    args.extend([
        "-ffp-contract=off",
        "-fPIC",
        "-shared",
        "-pthread",
        "-Wall",
        "-Werror",
        "-Wno-unused-variable",
        "-Wno-unused-but-set-variable",
        "-Wno-unknown-pragmas",
        "-o",
        &out,
        &wrapper_file,
    ]);
    let args = args.into_iter().map(String::from).collect();
    Ok((args, library))
}

/// A kernel's launcher in a shim library: grid (x, y, z), block (x, y,
/// z), shared bytes, pointers to the arguments.
pub type LaunchFn = unsafe extern "C" fn(u32, u32, u32, u32, u32, u32, u32, *mut *mut c_void);

/// A shim library loaded in this process.
pub struct ShimModule {
    library: libloading::Library,
}

impl ShimModule {
    pub fn load(path: &Path) -> Result<ShimModule, ShimError> {
        // SAFETY: shim libraries have no initialisers beyond the C++ runtime's.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| ShimError::Load {
            path: path.to_path_buf(),
            error: e.to_string(),
        })?;
        Ok(ShimModule { library })
    }

    /// The launcher of `kernel`.
    pub fn launcher(&self, kernel: &str) -> Result<LaunchFn, ShimError> {
        let symbol = format!("bat_shim_launch_{kernel}");
        // SAFETY: BAT_SHIM_EXPORT defines the symbol with this signature.
        unsafe { self.library.get::<LaunchFn>(symbol.as_bytes()) }
            .map(|f| *f)
            .map_err(|_| ShimError::NoKernel(kernel.to_string()))
    }

    /// The address of the exported function `name` (call it only with
    /// its C signature).
    pub fn function(&self, name: &str) -> Result<*const c_void, ShimError> {
        // SAFETY: only the symbol's address is read.
        unsafe { self.library.get::<*const c_void>(name.as_bytes()) }
            .map(|f| *f)
            .map_err(|_| ShimError::NoKernel(name.to_string()))
    }

    /// Launch `kernel` on a 1-D grid.
    ///
    /// # Safety
    /// `args[i]` must point to a value of the kernel's i-th parameter type,
    /// and the kernel must stay within the memory those values describe.
    pub unsafe fn launch(
        &self,
        kernel: &str,
        grid: u32,
        block: u32,
        args: &mut [*mut c_void],
    ) -> Result<(), ShimError> {
        let symbol = format!("bat_shim_launch_{kernel}");
        // SAFETY: BAT_SHIM_EXPORT defines the symbol with this signature.
        let launch = unsafe { self.library.get::<LaunchFn>(symbol.as_bytes()) }
            .map_err(|_| ShimError::NoKernel(kernel.to_string()))?;
        // SAFETY: the caller guarantees the arguments match the kernel.
        unsafe { launch(grid, 1, 1, block, 1, 1, 0, args.as_mut_ptr()) };
        Ok(())
    }
}
