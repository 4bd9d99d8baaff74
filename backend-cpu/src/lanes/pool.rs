//! A per-thread cache of large real buffers. A batch's dense temporaries
//! are allocated and freed once per operation; for large blocks (e.g.
//! N × Z = 10,000 × 1,024 reals) the system allocator maps and unmaps
//! fresh pages every time, which costs more than the arithmetic. Dense
//! blocks return their buffers here when dropped, and kernels take them
//! back with [`buffer`].

use std::cell::RefCell;

/// Buffers smaller than this go to the system allocator as usual.
const MIN_POOLED: usize = 1 << 15;
/// At most this many buffers are kept per thread.
const MAX_KEPT: usize = 16;

thread_local! {
    static POOL: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for `n` reals.
pub fn buffer(n: usize) -> Vec<f64> {
    if n >= MIN_POOLED {
        let found = POOL.with(|p| {
            let mut p = p.borrow_mut();
            // The smallest kept buffer that is large enough.
            let best = p
                .iter()
                .enumerate()
                .filter(|(_, b)| b.capacity() >= n)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i);
            best.map(|i| p.swap_remove(i))
        });
        if let Some(mut b) = found {
            b.clear();
            return b;
        }
    }
    Vec::with_capacity(n)
}

/// Keep `b` for reuse (if large).
pub fn recycle(b: Vec<f64>) {
    if b.capacity() >= MIN_POOLED {
        POOL.with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < MAX_KEPT {
                p.push(b);
            } else if let Some(smallest) = p
                .iter()
                .enumerate()
                .min_by_key(|(_, x)| x.capacity())
                .map(|(i, _)| i)
                && p[smallest].capacity() < b.capacity()
            {
                p[smallest] = b;
            }
        });
    }
}
