//! `mpirun` for ranks on this machine only, as the MPI tests and the
//! ranks bench launch them. Shared by `tests/run_mpi.rs` and
//! `benches/ranks.rs`.

use std::path::PathBuf;
use std::process::Command;

/// OpenMPI's `mpirun` on the `PATH`.
pub fn mpirun_exe() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("mpirun"))
            .find(|p| p.is_file())
    });
    found.expect(
        "mpirun not found: the mpi feature needs OpenMPI (scripts/setup.d/25-mpi.sh installs it)",
    )
}

/// `mpirun` for `ranks` ranks on this machine only (loopback, more ranks
/// than cores allowed, as root too).
pub fn mpirun(ranks: usize) -> Command {
    let mut command = Command::new(mpirun_exe());
    command
        .args(["-n", &ranks.to_string(), "--oversubscribe"])
        .args(["--mca", "btl", "self,vader,tcp"])
        .args(["--mca", "btl_tcp_if_include", "lo"])
        .args(["--mca", "oob_tcp_if_include", "lo"])
        .args(["--mca", "btl_vader_single_copy_mechanism", "none"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    command
}
