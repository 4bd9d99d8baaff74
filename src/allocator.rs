//! The allocator settings every bat process that samples uses (the `bat`
//! binary and the sampler benchmark, so that the benchmark measures what
//! `bat run` does): mimalloc as the global allocator (declared by each
//! binary), set up by [`configure`] at the start of `main`.

/// The global allocator of bat's binaries (`#[global_allocator] static A:
/// MiMalloc = MiMalloc;`): the batched executors allocate and free a
/// lane-sized buffer or a slot per operation (malloc + free were about a
/// fifth of a gradient's profile); mimalloc's thread-local free lists serve
/// them faster than glibc's. Allocation never changes a result: draws are
/// the same bits.
pub use mimalloc::MiMalloc;

/// mimalloc 3's `mi_option_purge_delay` and `mi_option_allow_thp` (its
/// `mi_option_t` enum, not exported by the Rust bindings).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
const MI_OPTION_ALLOW_THP: std::ffi::c_int = 43;

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
fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    set_option(MI_OPTION_PURGE_DELAY, -1);
}

/// mimalloc 3's option `option` set to `value`; nothing with another
/// major version (whose option enum may number them otherwise).
fn set_option(option: std::ffi::c_int, value: std::ffi::c_long) {
    // SAFETY: plain mimalloc API calls with an option index checked
    // against the library's major version.
    unsafe {
        if (30000..40000).contains(&mi_version()) {
            mi_option_set(option, value);
        }
    }
}

/// No transparent huge pages for this process. mimalloc asks for them for
/// its arenas, which grow during a run (draw records made on the sampler
/// threads, freed on the collector's); each new 2 MiB page is zeroed at
/// its first touch — and on a virtual machine whose memory the host backs
/// lazily, as this project's CI machines, faulted in on the host too,
/// where 4 KiB pages come back from the kernel's free lists already
/// backed. The main job (eight schools, 1000 chains × (300 + 300), native)
/// spent 0.85–1.0 s in the kernel with them and 0.3 without; its sampling
/// took 3.0–3.1 s against 2.2–2.8 s (three alternations); the CPU
/// backend's sampling and logistic gradients measured the same either way.
/// What mimalloc itself does for `MIMALLOC_ALLOW_THP=0` (which, set by the
/// user, is left to decide).
fn without_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PR_SET_THP_DISABLE: std::ffi::c_int = 41;
        unsafe extern "C" {
            fn prctl(
                option: std::ffi::c_int,
                arg2: std::ffi::c_ulong,
                arg3: std::ffi::c_ulong,
                arg4: std::ffi::c_ulong,
                arg5: std::ffi::c_ulong,
            ) -> std::ffi::c_int;
        }
        // SAFETY: PR_SET_THP_DISABLE takes an integer flag and no pointers;
        // failure (an old kernel) leaves huge pages on, harmlessly.
        unsafe {
            prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
    set_option(MI_OPTION_ALLOW_THP, 0);
}

/// The allocator settings of a process that samples: freed memory kept,
/// no transparent huge pages. Call first thing in `main`.
pub fn configure() {
    keep_freed_memory();
    without_huge_pages();
}
