//! A per-thread cache of dense buffers (reals and ints). A batch's dense
//! temporaries are allocated and freed once per operation; for large blocks
//! (e.g. N × Z = 10,000 × 1,024 reals) the system allocator maps and unmaps
//! fresh pages every time, which costs more than the arithmetic, and for
//! the sampler's many lane-sized scalars (Z = 512–1,024 elements) malloc and
//! free were ≈11% of eight schools' CPU time. Dense blocks return their
//! buffers here when dropped, and kernels take them back with [`buffer`].

use std::cell::RefCell;

/// Buffers at least this large are kept by size (largest first).
const MIN_LARGE: usize = 1 << 15;
/// At most this many large buffers are kept per thread and element type.
const MAX_LARGE: usize = 16;
/// Smaller buffers at least this large are kept most recent first (below
/// it the allocator's own per-thread cache is as fast).
const MIN_SMALL: usize = 64;
/// At most this many small buffers are kept per thread and element type.
const MAX_SMALL: usize = 64;

/// The buffers one thread keeps for one element type.
pub struct Kept<T> {
    large: Vec<Vec<T>>,
    small: Vec<Vec<T>>,
}

impl<T> Kept<T> {
    const fn new() -> Kept<T> {
        Kept {
            large: Vec::new(),
            small: Vec::new(),
        }
    }
}

thread_local! {
    static REALS: RefCell<Kept<f64>> = const { RefCell::new(Kept::new()) };
    static INTS: RefCell<Kept<i64>> = const { RefCell::new(Kept::new()) };
}

/// An element type with a per-thread pool of buffers.
pub trait Pooled: Copy + 'static {
    fn with_kept<R>(f: impl FnOnce(&mut Kept<Self>) -> R) -> R;
}

impl Pooled for f64 {
    fn with_kept<R>(f: impl FnOnce(&mut Kept<f64>) -> R) -> R {
        REALS.with(|k| f(&mut k.borrow_mut()))
    }
}

impl Pooled for i64 {
    fn with_kept<R>(f: impl FnOnce(&mut Kept<i64>) -> R) -> R {
        INTS.with(|k| f(&mut k.borrow_mut()))
    }
}

/// An empty buffer with room for `n` elements.
pub fn buffer<T: Pooled>(n: usize) -> Vec<T> {
    let found = if n >= MIN_LARGE {
        take_large(n)
    } else if n >= MIN_SMALL {
        T::with_kept(|k| {
            // The most recently kept buffer that fits without much waste.
            let fits = k
                .small
                .iter()
                .rposition(|b| b.capacity() >= n && b.capacity() <= 2 * n);
            fits.map(|i| k.small.swap_remove(i))
        })
    } else {
        None
    };
    match found {
        Some(mut b) => {
            b.clear();
            b
        }
        None => Vec::with_capacity(n),
    }
}

/// The smallest kept large buffer with room for `n` elements — but not
/// one many times larger: a small request taking a block of a different
/// size class left the next request of that class to fault in fresh pages
/// (a logistic regression's 1,024-lane β-sized temporaries took its 80 MB
/// N × Z blocks). As kept: its length is the numbers it held.
fn take_large<T: Pooled>(n: usize) -> Option<Vec<T>> {
    T::with_kept(|k| {
        let best = k
            .large
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= n && b.capacity() <= 4 * n)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        best.map(|i| k.large.swap_remove(i))
    })
}

/// A pooled buffer of `n` numbers of no particular value, for a kernel
/// that writes every one before reading it: a kept buffer keeps the
/// numbers it held (only those past them are set, to `fill`), so the
/// kernel's output is not first written over with zeros (for a 1,024-lane
/// N × Z product, 82 MB per call).
pub fn overwritable<T: Pooled>(n: usize, fill: T) -> Vec<T> {
    let kept = if n >= MIN_LARGE { take_large(n) } else { None };
    let mut b = kept.unwrap_or_else(|| buffer(n));
    b.truncate(n);
    b.resize(n, fill);
    b
}

/// A pooled buffer of `n` copies of `x`.
pub fn filled<T: Pooled>(n: usize, x: T) -> Vec<T> {
    let mut b = buffer(n);
    b.resize(n, x);
    b
}

/// A pooled copy of `xs`.
pub fn copy<T: Pooled>(xs: &[T]) -> Vec<T> {
    let mut b = buffer(xs.len());
    b.extend_from_slice(xs);
    b
}

/// Keep `b` for reuse (if not tiny).
pub fn recycle<T: Pooled>(b: Vec<T>) {
    let capacity = b.capacity();
    if capacity >= MIN_LARGE {
        T::with_kept(|k| {
            if k.large.len() < MAX_LARGE {
                k.large.push(b);
            } else if let Some(smallest) = k
                .large
                .iter()
                .enumerate()
                .min_by_key(|(_, x)| x.capacity())
                .map(|(i, _)| i)
                && k.large[smallest].capacity() < capacity
            {
                k.large[smallest] = b;
            }
        });
    } else if capacity >= MIN_SMALL {
        T::with_kept(|k| {
            if k.small.len() == MAX_SMALL {
                // Forget the least recently kept.
                k.small.remove(0);
            }
            k.small.push(b);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_buffer_serves_requests_of_its_size_class_only() {
        // Each test runs on its own thread: this pool starts empty.
        let big = 40 * MIN_LARGE;
        recycle(Vec::<f64>::with_capacity(big));
        // A small large request may not take the block 40 times its size
        // (the next request of that size would fault in fresh pages)…
        let small = buffer::<f64>(MIN_LARGE);
        assert!(small.capacity() < big);
        // …a request of nearly its size takes it, emptied.
        let again = buffer::<f64>(big - 8);
        assert_eq!(again.capacity(), big);
        assert!(again.is_empty());
        // Buffers come back through `recycle`: the pool is empty now.
        assert!(buffer::<f64>(big).capacity() >= big);
        assert_eq!(REALS.with(|k| k.borrow().large.len()), 0);
    }

    #[test]
    fn an_overwritable_buffer_keeps_what_it_held_and_fills_the_rest() {
        let n = 2 * MIN_LARGE;
        let mut held = Vec::<f64>::with_capacity(n + 8);
        held.resize(n - 3, 7.0);
        recycle(held);
        // Every number is initialized: the kept ones as they were, the
        // three past them the fill.
        let b = overwritable::<f64>(n, -1.0);
        assert_eq!(b.len(), n);
        assert!(b[..n - 3].iter().all(|&x| x == 7.0));
        assert_eq!(b[n - 3..], [-1.0; 3]);
        // Shorter: the first n / 2 of them.
        recycle(b);
        let b = overwritable::<f64>(n / 2, -1.0);
        assert!(b.len() == n / 2 && b.iter().all(|&x| x == 7.0));
        // Nothing kept (or small): all the fill.
        assert_eq!(overwritable::<f64>(n, 0.5), vec![0.5; n]);
        assert_eq!(overwritable::<f64>(100, 0.5), vec![0.5; 100]);
    }
}
