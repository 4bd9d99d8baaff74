//! The native executors' lane-major state: a zeroed buffer of `f64` from
//! the system allocator.
//!
//! Why not a `Vec`: bat's binaries allocate with mimalloc, which asks the
//! kernel for transparent huge pages for its arenas; a state of tens of
//! MB (eight schools' sampler: 8 k slots × 512 lanes per thread) then
//! faults in 2 MiB at a time, each zeroed — and, with the kernel's
//! `defrag=madvise`, compacted — on the thread that starts the chains:
//! 0.2–0.3 s before the first chain ran in a 1024-chain run (a tenth of
//! the run). The system allocator maps a buffer this large fresh and
//! zero, in 4 KiB pages faulted in as the lanes first touch them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

pub struct LaneState {
    ptr: NonNull<f64>,
    len: usize,
}

impl LaneState {
    /// `len` zeros.
    pub fn zeroed(len: usize) -> LaneState {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size (at least one f64).
        let raw = unsafe { System.alloc_zeroed(layout) } as *mut f64;
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        LaneState { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::array::<f64>(len.max(1)).expect("a lane state that fits in memory")
    }
}

impl Deref for LaneState {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        // SAFETY: `ptr` holds `len` initialized (zeroed) f64s, owned.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for LaneState {
    fn deref_mut(&mut self) -> &mut [f64] {
        // SAFETY: as in `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for LaneState {
    fn drop(&mut self) {
        // SAFETY: allocated by `System` with this same layout.
        unsafe { System.dealloc(self.ptr.as_ptr() as *mut u8, Self::layout(self.len)) }
    }
}

// SAFETY: a plain owned buffer of f64s, like a Vec<f64>.
unsafe impl Send for LaneState {}
unsafe impl Sync for LaneState {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_state_is_zeros_that_can_be_written() {
        let mut s = LaneState::zeroed(1 << 20);
        assert_eq!(s.len(), 1 << 20);
        assert!(s.iter().all(|&x| x == 0.0));
        s[12345] = -1.0;
        assert_eq!(s[12345], -1.0);
        assert_eq!(LaneState::zeroed(0).len(), 0);
    }
}
