//! Sub-batches of one call shared by the calling thread and a pool's
//! threads ([`split_here`]), for programs without calls.

use super::Result;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// `job` over `ranges`, results in order, shared between the calling
/// thread and `pool`'s threads, each taking the next range not yet taken.
/// Why: with `install` the caller slept while the pool worked and was woken
/// after the last sub-batch — for eight schools at 4,096 lanes on two
/// threads ~135 µs of a ~470 µs call passed between the sub-batches' end
/// and the caller going on (each sub-batch ~250 µs), and the pool's two
/// threads and the caller, three threads on two cores, could share one.
/// The caller now works too (the pool has one thread fewer), then waits
/// spinning for the helpers (ranges end within microseconds of each
/// other), yielding its core after a while. The helpers are spawned
/// jobs, not a rayon scope's: a scope's end is a sleep the helper's last
/// step must wake (~100–190 µs on this VM, after every call).
///
/// Never called from one of `pool`'s own threads (the caller would spin
/// while its helpers wait behind it): [`super::BatchedModel`]'s `split`
/// uses it only for programs without calls, whose pool runs nothing but
/// these helpers, and a sub-batch never splits again.
pub(super) fn split_here<T: Send, F: Fn(Range<usize>) -> Result<Vec<T>> + Sync>(
    pool: &rayon::ThreadPool,
    ranges: &[Range<usize>],
    job: &F,
) -> Vec<Result<Vec<T>>> {
    let helpers = pool.current_num_threads().min(ranges.len() - 1);
    let shared = SplitWork {
        ranges,
        job,
        next: AtomicUsize::new(0),
        results: (0..ranges.len()).map(|_| Mutex::new(None)).collect(),
        running: AtomicUsize::new(helpers),
        panicked: AtomicBool::new(false),
    };
    let at = std::ptr::from_ref(&shared) as usize;
    for _ in 0..helpers {
        let help: unsafe fn(usize) = SplitWork::<T, F>::help;
        // SAFETY: `shared` outlives every helper: this function returns
        // only after `running` is 0, which each helper's last access to
        // `shared` sets (after a panic too).
        pool.spawn(move || unsafe { help(at) });
    }
    // A panic here must not unwind past the helpers still using `shared`:
    // caught, waited out, then resumed.
    let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shared.work()));
    let mut spins = 0u32;
    while shared.running.load(Ordering::Acquire) > 0 {
        if spins < 1 << 16 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
    if let Err(payload) = mine {
        std::panic::resume_unwind(payload);
    }
    if shared.panicked.load(Ordering::Relaxed) {
        panic!("a sub-batch's thread panicked");
    }
    shared
        .results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every sub-batch ran")
        })
        .collect()
}

/// What [`split_here`]'s threads share.
struct SplitWork<'a, T, F> {
    ranges: &'a [Range<usize>],
    job: &'a F,
    /// The next range not yet taken.
    next: AtomicUsize,
    results: Vec<Mutex<Option<Result<Vec<T>>>>>,
    /// Helpers not finished.
    running: AtomicUsize,
    panicked: AtomicBool,
}

impl<T: Send, F: Fn(Range<usize>) -> Result<Vec<T>> + Sync> SplitWork<'_, T, F> {
    /// Run ranges until none is left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(range) = self.ranges.get(i) else {
                break;
            };
            let r = (self.job)(range.clone());
            *self.results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        }
    }

    /// A helper: [`SplitWork::work`] on the `SplitWork` at address `at`.
    ///
    /// # Safety
    /// `at` is the address of a live `SplitWork<T, F>` that stays alive
    /// until this helper has decremented its `running` count.
    unsafe fn help(at: usize) {
        // SAFETY: the caller's contract.
        let shared = unsafe { &*(at as *const SplitWork<T, F>) };
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shared.work()));
        if done.is_err() {
            shared.panicked.store(true, Ordering::Relaxed);
        }
        // The last access: `shared` may be gone right after.
        shared.running.fetch_sub(1, Ordering::Release);
    }
}
