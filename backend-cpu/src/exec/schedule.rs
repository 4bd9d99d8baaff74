//! Where lanes wait, and which waiting block runs next.

use crate::lanes::Lanes;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// A program point that has lanes waiting at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// Block number in program order (within the function for local
    /// batching; in the merged numbering of all functions for
    /// program-counter batching).
    pub point: usize,
    /// How many lanes wait there.
    pub lanes: usize,
}

/// The block-choice heuristic: which of the waiting points runs next.
pub trait BlockChoice: Debug + Send + Sync {
    /// An index into `waiting` (never empty, sorted by `point`).
    fn choose(&self, waiting: &[Waiting]) -> usize;
}

/// The earliest block in program order (Radul et al.'s default): lanes
/// that run ahead wait at later blocks until the rest catch up, so loops
/// re-converge after their exit.
#[derive(Clone, Copy, Debug, Default)]
pub struct EarliestFirst;

impl BlockChoice for EarliestFirst {
    fn choose(&self, _waiting: &[Waiting]) -> usize {
        0
    }
}

/// The block with the most waiting lanes (ties: the earliest).
#[derive(Clone, Copy, Debug, Default)]
pub struct MostWaiting;

impl BlockChoice for MostWaiting {
    fn choose(&self, waiting: &[Waiting]) -> usize {
        let mut best = 0;
        for (i, w) in waiting.iter().enumerate() {
            if w.lanes > waiting[best].lanes {
                best = i;
            }
        }
        best
    }
}

/// Lanes waiting at program points.
#[derive(Debug, Default)]
pub(crate) struct WaitQueue {
    at: BTreeMap<usize, Vec<usize>>,
    scratch: Vec<Waiting>,
}

impl WaitQueue {
    pub fn add(&mut self, point: usize, lanes: impl IntoIterator<Item = usize>) {
        let mut lanes = lanes.into_iter().peekable();
        if lanes.peek().is_some() {
            self.at.entry(point).or_default().extend(lanes);
        }
    }

    /// The point the heuristic picks and all lanes waiting there (out of
    /// `z`); `None` when no lane waits.
    pub fn take(&mut self, choice: &dyn BlockChoice, z: usize) -> Option<(usize, Lanes)> {
        let point = if self.at.len() == 1 {
            *self.at.keys().next()?
        } else {
            self.scratch.clear();
            self.scratch.extend(self.at.iter().map(|(p, l)| Waiting {
                point: *p,
                lanes: l.len(),
            }));
            let i = choice.choose(&self.scratch);
            self.scratch.get(i)?.point
        };
        let lanes = self.at.remove(&point)?;
        Some((point, Lanes::from_indices(z, lanes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heuristics_pick_their_block() {
        let mut q = WaitQueue::default();
        q.add(5, [0, 1, 2]);
        q.add(2, [3]);
        q.add(9, [4, 5, 6, 7]);
        let (p, lanes) = q.take(&MostWaiting, 8).unwrap();
        assert_eq!((p, lanes.indices()), (9, &[4, 5, 6, 7][..]));
        let (p, lanes) = q.take(&EarliestFirst, 8).unwrap();
        assert_eq!((p, lanes.indices()), (2, &[3][..]));
        q.add(5, [7]);
        let (p, lanes) = q.take(&EarliestFirst, 8).unwrap();
        assert_eq!((p, lanes.indices()), (5, &[0, 1, 2, 7][..]));
        assert!(q.take(&EarliestFirst, 8).is_none());
    }
}
