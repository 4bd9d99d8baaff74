//! When the collector flushes the draws file to disk.
//!
//! A flush makes every block written so far survive a kill. It costs about
//! half a millisecond whatever was written (HDF5 flushes every dataset),
//! and flushing whenever the event queue ran dry — as the collector did —
//! meant 1,816 flushes in an eight-schools run of 1000 chains × (150 +
//! 150): 0.88 s of a core the two sampler threads of a 2-core machine
//! were waiting for. The rule now:
//! - a chain's block is written only after its previous one is flushed,
//!   so a killed run loses at most one written block per chain (besides
//!   the one being filled), and
//! - written blocks are flushed at the latest [`FLUSH_EVERY`] after the
//!   first of them, also when no event comes in the meantime.

use crate::output::{DrawWriter, OutputError};
use std::time::{Duration, Instant};

/// The longest a written block waits for its flush.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Which chains have a block written since the last flush, and since when.
#[derive(Debug)]
pub struct Flushes {
    unflushed: Vec<bool>,
    /// When the first block since the last flush was written.
    since: Option<Instant>,
}

impl Flushes {
    pub fn new(n_chains: usize) -> Flushes {
        Flushes {
            unflushed: vec![false; n_chains],
            since: None,
        }
    }

    /// Whether the file must be flushed before a block of `chain` is
    /// written (its previous block is not flushed yet).
    pub fn needed_before_block(&self, chain: usize) -> bool {
        self.unflushed.get(chain).copied().unwrap_or(false)
    }

    /// A block of `chain` was written at `now`.
    pub fn wrote_block(&mut self, chain: usize, now: Instant) {
        if let Some(u) = self.unflushed.get_mut(chain) {
            *u = true;
        }
        self.since.get_or_insert(now);
    }

    /// How long the collector may wait for events before the written
    /// blocks are due (`None`: nothing to flush; zero: due now).
    pub fn due_in(&self, now: Instant) -> Option<Duration> {
        self.since
            .map(|since| FLUSH_EVERY.saturating_sub(now.duration_since(since)))
    }

    /// Flushes `writer` and forgets what was pending.
    pub fn flush(&mut self, writer: &mut DrawWriter) -> Result<(), OutputError> {
        writer.flush()?;
        self.flushed();
        Ok(())
    }

    /// The file was flushed.
    fn flushed(&mut self) {
        self.unflushed.iter_mut().for_each(|u| *u = false);
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_block_of_a_chain_waits_for_the_flush_of_its_first() {
        let t0 = Instant::now();
        let mut f = Flushes::new(3);
        assert!(!f.needed_before_block(1));
        f.wrote_block(1, t0);
        assert!(f.needed_before_block(1), "chain 1's block is not flushed");
        assert!(!f.needed_before_block(0), "other chains may write theirs");
        assert!(!f.needed_before_block(7), "no such chain: nothing pending");
        f.flushed();
        assert!(!f.needed_before_block(1));
    }

    #[test]
    fn written_blocks_are_due_at_most_flush_every_after_the_first() {
        let t0 = Instant::now();
        let mut f = Flushes::new(2);
        assert_eq!(f.due_in(t0), None, "nothing written: nothing due");
        f.wrote_block(0, t0);
        f.wrote_block(1, t0 + FLUSH_EVERY / 2);
        // The deadline counts from the first unflushed block.
        assert_eq!(f.due_in(t0), Some(FLUSH_EVERY));
        assert_eq!(f.due_in(t0 + FLUSH_EVERY / 2), Some(FLUSH_EVERY / 2));
        assert_eq!(f.due_in(t0 + 2 * FLUSH_EVERY), Some(Duration::ZERO));
        f.flushed();
        assert_eq!(f.due_in(t0 + 2 * FLUSH_EVERY), None);
    }
}
