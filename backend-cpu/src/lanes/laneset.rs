//! The set of active lanes of a batch.

use std::sync::Arc;

/// Sorted, distinct lane indices out of `z` lanes (cheap to clone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lanes {
    z: usize,
    idx: Arc<[usize]>,
}

impl Lanes {
    /// Every lane of a batch of `z`.
    pub fn all(z: usize) -> Lanes {
        Lanes {
            z,
            idx: (0..z).collect(),
        }
    }

    pub fn none(z: usize) -> Lanes {
        Lanes {
            z,
            idx: Arc::from([]),
        }
    }

    /// The given lanes (sorted and deduplicated here).
    pub fn from_indices(z: usize, mut idx: Vec<usize>) -> Lanes {
        idx.sort_unstable();
        idx.dedup();
        assert!(idx.last().is_none_or(|&l| l < z), "lane out of range");
        Lanes { z, idx: idx.into() }
    }

    /// `idx` already ascending without repeats (e.g. read off a bit set):
    /// [`Lanes::from_indices`] without its sort.
    pub fn from_ascending(z: usize, idx: Vec<usize>) -> Lanes {
        debug_assert!(idx.windows(2).all(|w| w[0] < w[1]), "not ascending");
        assert!(idx.last().is_none_or(|&l| l < z), "lane out of range");
        Lanes { z, idx: idx.into() }
    }

    /// The lanes whose mask entry is true.
    pub fn from_mask(mask: &[bool]) -> Lanes {
        Lanes {
            z: mask.len(),
            idx: (0..mask.len()).filter(|&l| mask[l]).collect(),
        }
    }

    pub fn z(&self) -> usize {
        self.z
    }

    pub fn len(&self) -> usize {
        self.idx.len()
    }

    pub fn is_empty(&self) -> bool {
        self.idx.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.idx.len() == self.z
    }

    pub fn indices(&self) -> &[usize] {
        &self.idx
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.idx.iter().copied()
    }

    pub fn first(&self) -> Option<usize> {
        self.idx.first().copied()
    }

    pub fn mask(&self) -> Vec<bool> {
        let mut m = vec![false; self.z];
        for &l in self.idx.iter() {
            m[l] = true;
        }
        m
    }

    /// (lanes where `pred` holds, lanes where it does not). When every
    /// lane goes one way (most conditions: a shared one always), that side
    /// is `self` itself, without a new list of indices.
    pub fn split(&self, pred: impl Fn(usize) -> bool) -> (Lanes, Lanes) {
        let holds = self.idx.iter().filter(|&&l| pred(l)).count();
        if holds == self.len() {
            return (self.clone(), Lanes::none(self.z));
        }
        if holds == 0 {
            return (Lanes::none(self.z), self.clone());
        }
        let (yes, no): (Vec<usize>, Vec<usize>) = self.idx.iter().partition(|&&l| pred(l));
        (
            Lanes {
                z: self.z,
                idx: yes.into(),
            },
            Lanes {
                z: self.z,
                idx: no.into(),
            },
        )
    }

    /// The lanes for which `keep` holds.
    pub fn retain(&self, mut keep: impl FnMut(usize) -> bool) -> Lanes {
        let Some(first_dropped) = self.idx.iter().position(|&l| !keep(l)) else {
            return self.clone();
        };
        let mut idx = self.idx[..first_dropped].to_vec();
        idx.extend(
            self.idx[first_dropped + 1..]
                .iter()
                .copied()
                .filter(|&l| keep(l)),
        );
        Lanes {
            z: self.z,
            idx: idx.into(),
        }
    }
}
