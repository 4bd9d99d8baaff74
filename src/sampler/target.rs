//! Stopping a run once its draws are enough (`bat run --target-ess N
//! --max-rhat R`): every quantity `bat summary` reports — `lp__` and every
//! scalar element of the posterior variables (parameters, transformed
//! parameters, generated quantities) — needs ESS_bulk ≥ N and R-hat < R
//! over all chains.
//!
//! The collector keeps a copy of every chain's kept post-warmup draws and
//! checks them each time every chain has reached the next checkpoint
//! ([`Checkpoints`]): first where the chains' draws together could first
//! hold the target's ESS (N ÷ chains draws per chain, at least
//! [`MIN_FIRST_CHECK`], at most [`FIRST_CHECK`]), then every half of that
//! or a tenth of the draws so far, whichever is more. With a few chains
//! that is 100, 150, 200, ...; with 1,024 chains and N = 10,000 it is 10,
//! 15, 20, ...: many chains reach the target in a few draws each, and
//! checking only at 100 would make every one of them run ten times longer
//! than needed. Short chains do not make the check lenient: R-hat (split,
//! rank-normalized) compares each half-chain's mean with the others', and
//! half-chains shorter than their autocorrelation spread more, not less.
//! The checkpoints depend on nothing but the draw counts, the target and
//! the number of chains, so a run stops at the same draw whatever the
//! machine's speed, and its draws are the first draws of the same run
//! without a target (chains are independent while they sample). Warmup
//! draws never count.
//!
//! Cost: a check computes R-hat and ESS_bulk (the summary's own rank
//! diagnostics, through [`against_bound`]) quantity by quantity, the one
//! closest to failing at the last check first, and each quantity's steps
//! only until one fails (bulk R-hat, folded R-hat, ESS_bulk): a failing
//! check usually costs one ranking of one quantity; the passing one (once
//! per run) costs all of them, the R-hat and ESS_bulk columns of the
//! summary printed at the end, computed in parallel.
//!
//! The chains wait while a check runs ([`Control::hold`](super::Control)):
//! it needs no draws beyond the checkpoint's, and a fast compiled sampler
//! would otherwise take the cores from it and run far past a target the
//! check then finds reached. They learn of the stop through the same
//! control once the collector has seen the checkpoint's draws; where the
//! collector lags behind the sampler between checks (events queue up),
//! chains run on until it catches up, and those draws are dropped, never
//! written. Eight schools (non-centered) at 1,024 chains, pooled warmup,
//! `--target-ess 10000` (reached at 196 draws per chain; release build,
//! native, 2 cores busy with other builds, load 7–8.6, 3 runs each):
//! iterations run after warmup 571k–829k before → 239k–385k, the 24
//! checks 3.3–5.9 s → 1.1–1.8 s.
//! Memory: the copy holds every kept post-warmup number once more (8 bytes
//! per element, draw and chain: what the file's posterior group holds).

use crate::summary::ChainDraws;
use crate::summary::diagnostics::{Bound, against_bound};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Draws per chain at the first check, at most (with few chains).
pub const FIRST_CHECK: usize = 100;
/// Draws per chain at the first check, at least: split R-hat then has
/// half-chains of 5 draws.
pub const MIN_FIRST_CHECK: usize = 10;

/// Draws per chain at each check of a run: the first where `n_chains`
/// chains' draws together could first hold `min_ess_bulk` (clamped to
/// [`MIN_FIRST_CHECK`]..=[`FIRST_CHECK`]), then every half of the first or
/// a tenth of the draws so far, whichever is more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoints {
    first: usize,
}

impl Checkpoints {
    pub fn new(target: EssTarget, n_chains: usize) -> Checkpoints {
        let enough = (target.min_ess_bulk / n_chains.max(1) as f64).ceil();
        let first = if enough.is_finite() {
            (enough as usize).clamp(MIN_FIRST_CHECK, FIRST_CHECK)
        } else {
            FIRST_CHECK
        };
        Checkpoints { first }
    }

    pub fn first(&self) -> usize {
        self.first
    }

    /// The checkpoint after `draws`.
    pub fn after(&self, draws: usize) -> usize {
        draws + (self.first / 2).max(draws / 10)
    }
}

/// What the draws must reach.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EssTarget {
    /// The smallest ESS_bulk allowed (at least 1).
    pub min_ess_bulk: f64,
    /// R-hat must stay below this (more than 1).
    pub max_rhat: f64,
}

/// The check that found the draws enough.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reached {
    /// Kept post-warmup draws per chain that reached the target.
    pub draws: usize,
    /// Their smallest ESS_bulk and largest R-hat over every quantity that
    /// varies.
    pub min_ess_bulk: f64,
    pub max_rhat: f64,
}

/// Every chain's kept post-warmup draws and when to check them next.
pub struct TargetCheck {
    target: EssTarget,
    /// Numbers per draw (every element of every variable, in stored order).
    width: usize,
    /// Per chain, its draws one after another.
    draws: Vec<Vec<f64>>,
    /// Per chain, its draws so far.
    counts: Vec<usize>,
    checkpoints: Checkpoints,
    /// Draws per chain at the next check.
    next_at: usize,
    /// Chains with at least `next_at` draws.
    ready: usize,
    /// Per quantity, how close it was to failing when last checked
    /// ([`Bound`]'s shortfall; infinite before its first check).
    shortfalls: Vec<f64>,
    /// Checks made and the seconds they took.
    pub checks: usize,
    pub seconds: f64,
    reached: Option<Reached>,
}

impl TargetCheck {
    pub fn new(target: EssTarget, n_chains: usize) -> TargetCheck {
        let checkpoints = Checkpoints::new(target, n_chains);
        TargetCheck {
            target,
            width: 0,
            draws: vec![Vec::new(); n_chains],
            counts: vec![0; n_chains],
            checkpoints,
            next_at: checkpoints.first(),
            ready: 0,
            shortfalls: Vec::new(),
            checks: 0,
            seconds: 0.0,
            reached: None,
        }
    }

    pub fn target(&self) -> EssTarget {
        self.target
    }

    /// The check that found the draws enough, once one did.
    pub fn reached(&self) -> Option<Reached> {
        self.reached
    }

    /// Draws per chain at the next check.
    pub fn next_at(&self) -> usize {
        self.next_at
    }

    /// Whether `chain`'s next draw is still needed: none are once the
    /// target is reached beyond its draws.
    pub fn wants(&self, chain: usize) -> bool {
        self.reached.is_none_or(|r| self.counts[chain] < r.draws)
    }

    /// Adds `chain`'s next kept post-warmup draw (`numbers`: every element
    /// of every variable, in stored order; `lp`: its `lp__`). Returns
    /// whether a check is due now (every chain has reached the checkpoint):
    /// [`TargetCheck::check_now`] makes it, the caller holding the chains.
    pub fn add(&mut self, chain: usize, numbers: &[f64], lp: f64) -> bool {
        if !self.wants(chain) {
            return false;
        }
        if self.width == 0 {
            self.width = numbers.len() + 1;
        }
        self.draws[chain].extend_from_slice(numbers);
        self.draws[chain].push(lp);
        self.counts[chain] += 1;
        if self.counts[chain] == self.next_at {
            self.ready += 1;
        }
        self.reached.is_none() && self.ready == self.counts.len()
    }

    /// The check at the checkpoint every chain has reached: the check that
    /// found the draws enough, the first time one does.
    pub fn check_now(&mut self) -> Option<Reached> {
        if self.reached.is_some() || self.ready < self.counts.len() {
            return self.reached;
        }
        let started = Instant::now();
        let verdict = self.check(self.next_at);
        self.checks += 1;
        self.seconds += started.elapsed().as_secs_f64();
        match verdict {
            Some(reached) => {
                self.reached = Some(reached);
                // Draws past the target are never kept: free them.
                for draws in &mut self.draws {
                    draws.clear();
                    draws.shrink_to_fit();
                }
            }
            None => {
                self.next_at = self.checkpoints.after(self.next_at);
                self.ready = self.counts.iter().filter(|&&n| n >= self.next_at).count();
            }
        }
        self.reached
    }

    /// The first `draws` draws of every chain against the target: the
    /// diagnostics of every quantity when all reach it, else `None`.
    /// Quantities go in order of how close they were to failing when last
    /// checked (unchecked ones first), so a failing check usually costs
    /// one quantity's first ranking; when that one passes, the others are
    /// checked in parallel (the chains are held meanwhile, so the cores
    /// are free), until one fails.
    fn check(&mut self, draws: usize) -> Option<Reached> {
        if self.shortfalls.len() != self.width {
            self.shortfalls = vec![f64::INFINITY; self.width];
        }
        let mut order: Vec<usize> = (0..self.width).collect();
        order.sort_by(|&a, &b| self.shortfalls[b].total_cmp(&self.shortfalls[a]));
        let (&first, rest) = order.split_first()?;
        let mut verdicts = vec![(first, self.against_target(first, draws))];
        if !matches!(verdicts[0].1, Some(Bound::Fails { .. })) {
            let failed = AtomicBool::new(false);
            verdicts.par_extend(rest.par_iter().map(|&element| {
                if failed.load(Ordering::Relaxed) {
                    return (element, None);
                }
                let verdict = self.against_target(element, draws);
                if let Some(Bound::Fails { .. }) = verdict {
                    failed.store(true, Ordering::Relaxed);
                }
                (element, verdict)
            }));
        }
        let mut reached = Some(Reached {
            draws,
            min_ess_bulk: f64::INFINITY,
            max_rhat: f64::NEG_INFINITY,
        });
        for (element, verdict) in verdicts {
            match verdict {
                Some(Bound::Fails { shortfall }) => {
                    self.shortfalls[element] = shortfall;
                    reached = None;
                }
                Some(Bound::Meets {
                    r_hat,
                    ess_bulk,
                    shortfall,
                }) => {
                    self.shortfalls[element] = shortfall;
                    if let Some(reached) = &mut reached {
                        reached.min_ess_bulk = reached.min_ess_bulk.min(ess_bulk);
                        reached.max_rhat = reached.max_rhat.max(r_hat);
                    }
                }
                // A constant quantity, or not checked after one failed.
                None => {}
            }
        }
        reached
    }

    /// One quantity's first `draws` draws of every chain against the
    /// target; `None` for a quantity every draw of which is the same number
    /// (a constant generated quantity): it is known exactly, its
    /// diagnostics are undefined, and nothing more would help.
    fn against_target(&self, element: usize, draws: usize) -> Option<Bound> {
        let n_chains = self.draws.len();
        let mut column = vec![0.0; n_chains * draws];
        for (chain, values) in self.draws.iter().enumerate() {
            let row = &mut column[chain * draws..(chain + 1) * draws];
            for (draw, x) in row.iter_mut().enumerate() {
                *x = values[draw * self.width + element];
            }
        }
        if column.iter().all(|&x| x == column[0]) {
            return None;
        }
        let view = ChainDraws::new(&column, n_chains, draws)
            .expect("the column holds chains × draws values");
        Some(against_bound(
            view,
            self.target.max_rhat,
            self.target.min_ess_bulk,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::diagnostics::rank_diagnostics;

    /// A draw added and, when due, checked: the check that found the draws
    /// enough, the first time one does.
    fn push(check: &mut TargetCheck, chain: usize, numbers: &[f64], lp: f64) -> Option<Reached> {
        match check.add(chain, numbers, lp) {
            true => check.check_now(),
            false => None,
        }
    }

    /// A deterministic stand-in for independent draws: a scrambled
    /// sequence, the same law in every chain.
    fn scrambled(i: usize) -> f64 {
        ((i.wrapping_mul(2_654_435_761) % 1_000_003) as f64) / 1_000_003.0
    }

    /// The checks happen at 100, 150, 200, ... draws per chain and only
    /// once every chain has the draws; the verdict is the summary's
    /// diagnostics of exactly those draws, and the checkpoint before did
    /// not meet the target.
    #[test]
    fn checks_at_the_checkpoints_with_the_summarys_diagnostics() {
        let chains = 4;
        let target = EssTarget {
            min_ess_bulk: 300.0,
            max_rhat: 1.05,
        };
        let checkpoints = Checkpoints::new(target, chains);
        assert_eq!(checkpoints.first(), 75, "300 ÷ 4 chains");
        let mut check = TargetCheck::new(target, chains);
        let mut reached = None;
        let mut i = 0;
        'draws: for _ in 0..1000 {
            for chain in 0..chains {
                i += 1;
                // A constant lp__ is skipped.
                if let Some(r) = push(&mut check, chain, &[scrambled(i)], 7.0) {
                    reached = Some(r);
                    break 'draws;
                }
            }
        }
        let reached = reached.expect("independent draws reach 300 quickly");
        let mut at = vec![checkpoints.first()];
        while *at.last().unwrap() < reached.draws {
            at.push(checkpoints.after(*at.last().unwrap()));
        }
        assert_eq!(*at.last().unwrap(), reached.draws, "{at:?}");
        assert_eq!(check.checks, at.len());
        // The same numbers, chain-major, through the summary's code.
        let diagnostics = |draws: usize| {
            let mut column = Vec::new();
            for chain in 0..chains {
                for draw in 0..draws {
                    column.push(scrambled(draw * chains + chain + 1));
                }
            }
            rank_diagnostics(ChainDraws::new(&column, chains, draws).unwrap())
        };
        let (r_hat, ess) = diagnostics(reached.draws);
        assert_eq!((reached.max_rhat, reached.min_ess_bulk), (r_hat, ess));
        assert!(ess >= 300.0 && r_hat < 1.05);
        if at.len() > 1 {
            let (r_hat, ess) = diagnostics(at[at.len() - 2]);
            assert!(
                !(ess >= 300.0 && r_hat < 1.05),
                "met one checkpoint earlier"
            );
        }
        // Past the target no draw is wanted.
        assert!(!check.wants(0));
    }

    /// Many chains check early and often: 1,024 chains for ESS 10,000 at
    /// 10, 15, 20, ... draws per chain; a few chains at 100, 150, ...; no
    /// first check below 10 draws however many chains.
    #[test]
    fn the_first_check_comes_when_the_chains_together_could_meet_the_target() {
        let target = |n: f64| EssTarget {
            min_ess_bulk: n,
            max_rhat: 1.01,
        };
        let many = Checkpoints::new(target(10_000.0), 1024);
        assert_eq!(many.first(), 10);
        assert_eq!(
            (many.after(10), many.after(15), many.after(60)),
            (15, 20, 66)
        );
        let few = Checkpoints::new(target(10_000.0), 4);
        assert_eq!(
            (few.first(), few.after(100), few.after(500)),
            (100, 150, 550)
        );
        assert_eq!(
            Checkpoints::new(target(400.0), 100_000).first(),
            MIN_FIRST_CHECK
        );
        assert_eq!(Checkpoints::new(target(2_000.0), 64).first(), 32);
    }

    /// A target out of reach checks at every checkpoint (100, 150, 200,
    /// 250, ..., then by tenths) and never stops the run; a chain
    /// lagging behind holds the checks back.
    #[test]
    fn an_unreachable_target_checks_at_every_checkpoint() {
        let target = EssTarget {
            min_ess_bulk: 1e9,
            max_rhat: 1.01,
        };
        let mut check = TargetCheck::new(target, 2);
        for draw in 0..1000 {
            assert_eq!(push(&mut check, 0, &[], scrambled(draw)), None);
        }
        assert_eq!(check.checks, 0, "chain 1 has no draws yet");
        for draw in 0..1000 {
            assert_eq!(push(&mut check, 1, &[], scrambled(draw + 5000)), None);
        }
        // 100, 150, ..., 500 (9 checks), then 550, 605, 665, 731, 804, 884, 972.
        assert_eq!(check.checks, 9 + 7);
        assert_eq!(check.next_at(), 972 + 97);
        assert!(check.reached().is_none());
    }
}
