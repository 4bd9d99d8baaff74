//! When the collector writes the complete blocks of draws and flushes the
//! draws file.
//!
//! A flush makes every block written so far survive a kill. It costs about
//! half a millisecond whatever was written (HDF5 flushes every dataset),
//! and each write has a cost of its own whatever its size
//! ([`super::blocks`]): flushing whenever the event queue ran dry — as the
//! collector once did — meant 1,816 flushes in an eight-schools run of 1000
//! chains × (150 + 150), 0.88 s of a core the two sampler threads of a
//! 2-core machine were waiting for. The rule now: complete blocks wait, at
//! most [`FLUSH_EVERY`] after the first of them, then all of them are
//! written (chains with equal ranges together) and the file is flushed at
//! once. A killed run therefore loses at most each chain's incomplete block
//! and the blocks completed in the last [`FLUSH_EVERY`].

use std::time::{Duration, Instant};

/// The longest a complete block waits for its write and flush.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Since when complete blocks have been waiting.
#[derive(Debug, Default)]
pub struct Flushes {
    since: Option<Instant>,
}

impl Flushes {
    /// A block became complete at `now` (the deadline counts from the
    /// first one waiting).
    pub fn block_ready(&mut self, now: Instant) {
        self.since.get_or_insert(now);
    }

    /// How long the collector may wait for events before the waiting
    /// blocks are due (`None`: nothing waits; zero: due now).
    pub fn due_in(&self, now: Instant) -> Option<Duration> {
        self.since
            .map(|since| FLUSH_EVERY.saturating_sub(now.duration_since(since)))
    }

    /// Every waiting block was written and the file flushed.
    pub fn done(&mut self) {
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_blocks_are_due_at_most_flush_every_after_the_first() {
        let t0 = Instant::now();
        let mut f = Flushes::default();
        assert_eq!(f.due_in(t0), None, "nothing waits: nothing due");
        f.block_ready(t0);
        f.block_ready(t0 + FLUSH_EVERY / 2);
        // The deadline counts from the first waiting block.
        assert_eq!(f.due_in(t0), Some(FLUSH_EVERY));
        assert_eq!(f.due_in(t0 + FLUSH_EVERY / 2), Some(FLUSH_EVERY / 2));
        assert_eq!(f.due_in(t0 + 2 * FLUSH_EVERY), Some(Duration::ZERO));
        f.done();
        assert_eq!(f.due_in(t0 + 2 * FLUSH_EVERY), None);
    }
}
