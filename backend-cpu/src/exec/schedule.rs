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
    /// Fewest blocks from here to a synchronizing block (a barrier, see
    /// [`WaitQueue`]); `u32::MAX` when none is reachable or none is set.
    pub to_barrier: u32,
    /// The point's place in a topological order of the blocks up to the
    /// next barrier (cycles share one; see `flow::upstream_order`): lanes
    /// waiting at a smaller one may still arrive at a larger one before
    /// the barrier, never the reverse. `u32::MAX` when none is set.
    pub upstream: u32,
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
        earliest_best(waiting, |w| w.lanes)
    }
}

/// The index of the first point with the largest `key` (the earliest of
/// the best, as `waiting` is sorted by point).
fn earliest_best<K: Ord>(waiting: &[Waiting], key: impl Fn(&Waiting) -> K) -> usize {
    let mut best = 0;
    for (i, w) in waiting.iter().enumerate() {
        if key(w) > key(&waiting[best]) {
            best = i;
        }
    }
    best
}

/// The point whose lanes are furthest from the next synchronizing block
/// (ties: the earliest). Lanes close to the barrier wait while the ones
/// behind catch up, so each stretch of blocks between two barriers runs
/// with as many lanes at once as possible — e.g. chains that unwind
/// several levels of NUTS's recursion join the ones that unwound fewer
/// before they all descend to the next leapfrog step together.
#[derive(Clone, Copy, Debug, Default)]
pub struct FurthestFromBarrier;

impl BlockChoice for FurthestFromBarrier {
    fn choose(&self, waiting: &[Waiting]) -> usize {
        earliest_best(waiting, |w| w.to_barrier)
    }
}

/// The most upstream point — the one no other waiting lane can still
/// reach before the next barrier (ties, within a cycle such as a
/// recursion's returns: furthest from the barrier, then the earliest).
/// Every block outside a cycle then runs at most once between two
/// barriers, with every lane that reaches it in that stretch: chains that
/// unwind different numbers of levels of NUTS's recursion meet at the
/// call site before it runs, instead of running it once per level as
/// [`FurthestFromBarrier`] does when the call site is further from the
/// barrier than the returns.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpstreamFirst;

impl BlockChoice for UpstreamFirst {
    fn choose(&self, waiting: &[Waiting]) -> usize {
        earliest_best(waiting, |w| (std::cmp::Reverse(w.upstream), w.to_barrier))
    }
}

/// Lanes waiting at program points.
///
/// Points marked as *barriers* (blocks that call an external function the
/// host synchronizes lanes at, e.g. the sampler's gradient) run only when
/// no other point has waiting lanes: every lane that is going to call the
/// host next gets there first, so the host sees them in one call (Radul
/// et al. §4.2: synchronizing at gradient granularity).
#[derive(Debug, Default)]
pub(crate) struct WaitQueue {
    at: BTreeMap<usize, LaneBits>,
    scratch: Vec<Waiting>,
    /// `barrier[point]` (points beyond its end are not barriers).
    barrier: Vec<bool>,
    /// `to_barrier[point]` ([`Waiting::to_barrier`]; beyond its end: none).
    to_barrier: Vec<u32>,
    /// `upstream[point]` ([`Waiting::upstream`]; beyond its end: none).
    upstream: Vec<u32>,
}

impl WaitQueue {
    pub fn with_barriers(
        barrier: Vec<bool>,
        to_barrier: Vec<u32>,
        upstream: Vec<u32>,
    ) -> WaitQueue {
        WaitQueue {
            barrier,
            to_barrier,
            upstream,
            ..WaitQueue::default()
        }
    }

    fn is_barrier(&self, point: usize) -> bool {
        self.barrier.get(point).copied().unwrap_or(false)
    }

    pub fn add(&mut self, point: usize, lanes: impl IntoIterator<Item = usize>) {
        let mut lanes = lanes.into_iter().peekable();
        if lanes.peek().is_some() {
            let bits = self.at.entry(point).or_default();
            for l in lanes {
                bits.insert(l);
            }
        }
    }

    /// The points where lanes wait.
    pub fn points(&self) -> impl Iterator<Item = usize> + '_ {
        self.at.keys().copied()
    }

    /// How many lanes wait, at all points.
    pub fn len(&self) -> usize {
        self.at.values().map(|bits| bits.count).sum()
    }

    /// Every waiting lane, ascending.
    pub fn lanes(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.at.values().flat_map(LaneBits::ascending).collect();
        all.sort_unstable();
        all
    }

    /// Renumber the waiting lanes: lane `l` becomes lane `new[l]`.
    pub fn renumber(&mut self, new: &[usize]) {
        for bits in self.at.values_mut() {
            let old = std::mem::take(bits);
            for l in old.ascending() {
                bits.insert(new[l]);
            }
        }
    }

    /// The point the heuristic picks and all lanes waiting there (out of
    /// `z`); `None` when no lane waits.
    pub fn take(&mut self, choice: &dyn BlockChoice, z: usize) -> Option<(usize, Lanes)> {
        let point = if self.at.len() == 1 {
            *self.at.keys().next()?
        } else {
            let free = self.at.keys().any(|&p| !self.is_barrier(p));
            self.scratch.clear();
            for (p, l) in &self.at {
                if !free || !self.is_barrier(*p) {
                    self.scratch.push(Waiting {
                        point: *p,
                        lanes: l.count,
                        to_barrier: self.to_barrier.get(*p).copied().unwrap_or(u32::MAX),
                        upstream: self.upstream.get(*p).copied().unwrap_or(u32::MAX),
                    });
                }
            }
            let i = choice.choose(&self.scratch);
            self.scratch.get(i)?.point
        };
        let lanes = self.at.remove(&point)?;
        Some((point, Lanes::from_ascending(z, lanes.ascending())))
    }
}

/// The lanes waiting at one point, a bit each: lanes arrive in several
/// runs (from each block that jumps or returns there) and leave in one
/// ascending list, read off the bits without the sort a list of the runs
/// needed (sorting them was 2–4% of the eight-schools sampler).
#[derive(Debug, Default)]
struct LaneBits {
    words: Vec<u64>,
    count: usize,
}

impl LaneBits {
    fn insert(&mut self, lane: usize) {
        let (word, bit) = (lane / 64, 1u64 << (lane % 64));
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        if self.words[word] & bit == 0 {
            self.words[word] |= bit;
            self.count += 1;
        }
    }

    fn ascending(&self) -> Vec<usize> {
        let mut lanes = Vec::with_capacity(self.count);
        for (i, &word) in self.words.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                lanes.push(i * 64 + rest.trailing_zeros() as usize);
                rest &= rest - 1;
            }
        }
        lanes
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

    /// Lanes arriving in several runs, out of order and more than once,
    /// leave once each in ascending order, across word boundaries.
    #[test]
    fn waiting_lanes_leave_ascending_once_each() {
        let mut q = WaitQueue::default();
        q.add(3, [130, 5, 64]);
        q.add(3, [63, 5, 0, 129]);
        q.add(3, [64]);
        q.add(7, [1]);
        let (p, lanes) = q.take(&MostWaiting, 131).unwrap();
        assert_eq!((p, lanes.indices()), (3, &[0, 5, 63, 64, 129, 130][..]));
        let (p, lanes) = q.take(&MostWaiting, 131).unwrap();
        assert_eq!((p, lanes.indices()), (7, &[1][..]));
        assert!(q.take(&MostWaiting, 131).is_none());
    }

    #[test]
    fn barriers_wait_until_nothing_else_waits() {
        let mut q =
            WaitQueue::with_barriers(vec![false, true, false, false], Vec::new(), Vec::new());
        q.add(1, [0, 1]);
        q.add(3, [2]);
        q.add(0, [3]);
        // The barrier (point 1) is earliest but runs last.
        let (p, _) = q.take(&EarliestFirst, 4).unwrap();
        assert_eq!(p, 0);
        q.add(1, [3]);
        let (p, _) = q.take(&MostWaiting, 4).unwrap();
        assert_eq!(p, 3);
        q.add(1, [2]);
        let (p, lanes) = q.take(&EarliestFirst, 4).unwrap();
        assert_eq!((p, lanes.indices()), (1, &[0, 1, 2, 3][..]));
    }

    #[test]
    fn the_lanes_furthest_from_the_barrier_go_first() {
        let mut q = WaitQueue::with_barriers(
            vec![true, false, false, false],
            vec![0, 1, 3, 2],
            Vec::new(),
        );
        q.add(0, [0]);
        q.add(1, [1]);
        q.add(2, [2]);
        q.add(3, [3]);
        let order: Vec<usize> = (0..4)
            .map(|_| q.take(&FurthestFromBarrier, 4).unwrap().0)
            .collect();
        assert_eq!(order, [2, 3, 1, 0]);
    }

    #[test]
    fn upstream_points_go_first_then_the_furthest_within_a_cycle() {
        // Points 1 and 2 share a cycle (order 0) upstream of 3 (order 1),
        // which is further from the barrier (point 0) than both.
        let mut q = WaitQueue::with_barriers(
            vec![true, false, false, false],
            vec![0, 1, 2, 4],
            vec![2, 0, 0, 1],
        );
        q.add(0, [0]);
        q.add(1, [1]);
        q.add(2, [2]);
        q.add(3, [3]);
        let order: Vec<usize> = (0..4)
            .map(|_| q.take(&UpstreamFirst, 4).unwrap().0)
            .collect();
        assert_eq!(order, [2, 1, 3, 0]);
    }
}
