//! The stub CUDA driver (`stub/libcuda_stub.c`, built into `libcuda.so`):
//! cudarc's unmodified host calls load and launch kernels that g++ built
//! against the CUDA-on-CPU shim header (`codegen::shim`), so that kernels
//! and host code are verified on machines without a GPU. A shim module is
//! loaded by the stub from the module image [`module_image`] makes.

use std::path::{Path, PathBuf};

use codegen::shim::{ShimError, run, write};

use crate::nvrtc::Compiled;

/// The stub CUDA driver's C source.
pub const STUB_LIBCUDA_SOURCE: &str = include_str!("../stub/libcuda_stub.c");

/// The name the stub driver gives its device: a program for it is built
/// with the shim rather than NVRTC.
pub const STUB_DEVICE_NAME: &str = "bat stub device (CUDA on CPU)";

/// The module image the stub driver loads for a shim library.
pub fn module_image(library: &Path) -> Compiled {
    Compiled::Ptx(format!("// bat-shim-module: {}\n", library.display()))
}

/// Build the stub driver as `dir/libcuda.so` (point `LD_LIBRARY_PATH` at
/// `dir` in a child process to make cudarc load it).
pub fn build_stub_libcuda(dir: &Path) -> Result<PathBuf, ShimError> {
    let source = dir.join("libcuda_stub.c");
    write(&source, STUB_LIBCUDA_SOURCE)?;
    let library = dir.join("libcuda.so");
    let out = library.to_string_lossy().into_owned();
    let args = [
        "-std=c11",
        "-O1",
        "-fPIC",
        "-shared",
        "-Wall",
        "-Werror",
        "-o",
        &out,
        "libcuda_stub.c",
        "-ldl",
    ];
    run("cc", &args, dir)?;
    Ok(library)
}
