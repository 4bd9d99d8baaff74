//! The native executors' lane-major state, zeroed memory from the C
//! library's allocator rather than the process's (mimalloc).
//!
//! A lane's state holds room for 100 nested calls' saved variables; a
//! NUTS chain nests at most `max_depth` (10) deep, so most of it is never
//! touched. mimalloc's arenas ask the kernel for transparent huge pages:
//! the first write to a lane faulted in and zeroed the 2 MiB around it —
//! in a 1,000-chain run the whole 64 MB state, which on a virtual machine
//! costs more than the lanes' computations touching it (2.8% of a
//! 1,000-chain eight-schools run in `perf`). A large zeroed allocation of
//! the C library is a fresh mapping of 4 KiB pages: pages no lane touches
//! are never faulted in. The values are the same either way.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// `len` numbers, zero at first.
pub struct LaneState {
    ptr: NonNull<f64>,
    len: usize,
}

// SAFETY: a uniquely owned buffer of plain numbers, as a `Vec<f64>`.
unsafe impl Send for LaneState {}
unsafe impl Sync for LaneState {}

impl LaneState {
    pub fn zeroed(len: usize) -> LaneState {
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size (at least one number).
        let raw = unsafe { System.alloc_zeroed(layout) } as *mut f64;
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        LaneState { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::array::<f64>(len.max(1)).expect("a lane state of addressable size")
    }
}

impl Deref for LaneState {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        // SAFETY: `ptr` holds `len` initialized (zeroed or written) numbers.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for LaneState {
    fn deref_mut(&mut self) -> &mut [f64] {
        // SAFETY: as `deref`, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for LaneState {
    fn drop(&mut self) {
        // SAFETY: allocated by `System` with this layout in `zeroed`.
        unsafe { System.dealloc(self.ptr.as_ptr() as *mut u8, Self::layout(self.len)) }
    }
}

impl std::fmt::Debug for LaneState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LaneState({} numbers)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_starts_at_zero_and_keeps_what_is_written() {
        for len in [0, 1, 7, 1 << 20] {
            let mut s = LaneState::zeroed(len);
            assert_eq!(s.len(), len);
            assert!(s.iter().all(|&x| x == 0.0));
            if len > 0 {
                s[len - 1] = 2.5;
                s[0] = -1.0;
                assert_eq!(
                    (s[0], s[len - 1]),
                    (-1.0, if len == 1 { -1.0 } else { 2.5 })
                );
            }
        }
    }
}
