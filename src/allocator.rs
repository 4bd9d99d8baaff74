//! The allocator settings every bat process that samples uses (the `bat`
//! binary and the sampler benchmark, so that the benchmark measures what
//! `bat run` does): mimalloc as the global allocator (declared by each
//! binary) and [`keep_freed_memory`].

/// The global allocator of bat's binaries (`#[global_allocator] static A:
/// MiMalloc = MiMalloc;`): the batched executors allocate and free a
/// lane-sized buffer or a slot per operation (malloc + free were about a
/// fifth of a gradient's profile); mimalloc's thread-local free lists serve
/// them faster than glibc's. Allocation never changes a result: draws are
/// the same bits.
pub use mimalloc::MiMalloc;

/// mimalloc 3's `mi_option_purge_delay` (its `mi_option_t` enum, not
/// exported by the Rust bindings).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

unsafe extern "C" {
    fn mi_version() -> std::ffi::c_int;
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Keep freed memory in the process: mimalloc returns pages unused for a
/// while (1 s in 3.3) to the OS, and a sampler run frees and reallocates
/// draw records across threads all the time — each reuse then faulted in
/// and zeroed a fresh 2 MiB huge page (a third of the draws collector's
/// time; 17–22 k page faults in a 1,000-chain eight-schools run, 6 k
/// without purging). Memory is still reused inside the process; only the
/// peak stays resident until exit. Only for mimalloc 3 (whose option enum
/// keeps retired entries as placeholders, so the index is stable), and
/// not when the user set `MIMALLOC_PURGE_DELAY`.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: plain mimalloc API calls with an option index checked
    // against the library's major version.
    unsafe {
        if (30000..40000).contains(&mi_version()) {
            mi_option_set(MI_OPTION_PURGE_DELAY, -1);
        }
    }
}
