//! Convergence diagnostics of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
//! "Rank-normalization, folding, and localization: an improved R-hat", computed
//! step for step as ArviZ 0.x does (`arviz/stats/diagnostics.py`) so results agree
//! with `az.rhat(method="rank")`, `az.ess(method="bulk"|"tail"|"mean")` and
//! `az.mcse(method="mean")` to rounding error.
//!
//! Undefined results are NaN: any NaN draw, fewer than 4 draws, or (for R-hat) fewer
//! than 2 chains — the same validity rules as ArviZ.

use super::autocov::MeanAutocovariance;
use super::draws::{ChainDraws, Matrix, split_chains};
use super::normal::probit;
use super::order::sort;
use super::quantile::{quantile_sorted, quantile_type7};

const MIN_DRAWS: usize = 4;

fn has_nan(values: &[f64]) -> bool {
    values.iter().any(|v| v.is_nan())
}

/// ArviZ's `_not_valid`: NaN anywhere or too few chains/draws.
fn not_valid(draws: ChainDraws<'_>, min_chains: usize) -> bool {
    has_nan(draws.values()) || draws.n_chains() < min_chains || draws.n_draws() < MIN_DRAWS
}

/// Rank-normalized split R-hat: the larger of bulk and folded (tail) R-hat.
pub fn rhat_rank(draws: ChainDraws<'_>) -> f64 {
    if not_valid(draws, 2) {
        return f64::NAN;
    }
    let split = split_chains(draws);
    let bulk = rhat(z_scale(&split).view());
    let median = quantile_type7(&split.values, 0.5);
    let folded = split.map(|v| (v - median).abs());
    let tail = rhat(z_scale(&folded).view());
    python_max(bulk, tail)
}

/// Bulk effective sample size: ESS of the rank-normalized split chains.
pub fn ess_bulk(draws: ChainDraws<'_>) -> f64 {
    if not_valid(draws, 1) {
        return f64::NAN;
    }
    ess(z_scale(&split_chains(draws)).view())
}

/// Tail effective sample size: the smaller of the ESS of the 5% and 95% quantile
/// indicators.
pub fn ess_tail(draws: ChainDraws<'_>) -> f64 {
    if not_valid(draws, 1) {
        return f64::NAN;
    }
    let low = ess_quantile(draws, 0.05);
    let high = ess_quantile(draws, 0.95);
    python_min(low, high)
}

/// ESS of the indicator `draw <= quantile(prob)` over split chains.
pub fn ess_quantile(draws: ChainDraws<'_>, prob: f64) -> f64 {
    if not_valid(draws, 1) {
        return f64::NAN;
    }
    ess_indicator(draws, quantile_type7(draws.values(), prob))
}

/// ESS of the indicator `draw <= threshold` over split chains.
fn ess_indicator(draws: ChainDraws<'_>, threshold: f64) -> f64 {
    let indicator: Vec<f64> = draws
        .values()
        .iter()
        .map(|&v| if v <= threshold { 1.0 } else { 0.0 })
        .collect();
    let indicator = ChainDraws::new(&indicator, draws.n_chains(), draws.n_draws())
        .expect("same shape as the input draws");
    ess(split_chains(indicator).view())
}

/// ESS for the mean: ESS of the (not rank-normalized) split chains.
pub fn ess_mean(draws: ChainDraws<'_>) -> f64 {
    if not_valid(draws, 1) {
        return f64::NAN;
    }
    ess(split_chains(draws).view())
}

/// Monte Carlo standard error of the mean: sd / sqrt(ESS_mean).
pub fn mcse_mean(draws: ChainDraws<'_>) -> f64 {
    if not_valid(draws, 1) {
        return f64::NAN;
    }
    sample_sd(draws.values()) / ess_mean(draws).sqrt()
}

/// Every diagnostic of one quantity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Diagnostics {
    pub r_hat: f64,
    pub ess_bulk: f64,
    pub ess_tail: f64,
    pub ess_mean: f64,
    pub mcse_mean: f64,
}

/// All diagnostics at once, equal to the individual functions but sharing their
/// sorts and transforms (3 sorts instead of 6). `sorted` is `draws.values()` sorted.
pub fn diagnose(draws: ChainDraws<'_>, sorted: &[f64]) -> Diagnostics {
    combine(rank_diagnostics(draws), sorted_diagnostics(draws, sorted))
}

/// Rank-based half of [`diagnose`]: (R-hat, ESS_bulk). Independent of the other half,
/// so callers may run the two concurrently.
pub fn rank_diagnostics(draws: ChainDraws<'_>) -> (f64, f64) {
    if not_valid(draws, 1) {
        return (f64::NAN, f64::NAN);
    }
    let split = split_chains(draws);
    let (z_bulk, sorted_split) = z_scale_and_sort(&split);
    let r_hat = if draws.n_chains() < 2 {
        f64::NAN
    } else {
        python_max(rhat(z_bulk.view()), folded_rhat(&split, &sorted_split))
    };
    (r_hat, ess(z_bulk.view()))
}

/// R-hat of the split chains folded about their median (the tail R-hat;
/// `sorted_split`: their values sorted).
fn folded_rhat(split: &Matrix, sorted_split: &[f64]) -> f64 {
    let median = quantile_sorted(sorted_split, 0.5);
    let folded = split.map(|v| (v - median).abs());
    rhat(z_scale(&folded).view())
}

/// One quantity's draws against a bound: R-hat below `max_rhat` and
/// ESS_bulk at least `min_ess_bulk` (`bat run --target-ess`). The steps of
/// [`rank_diagnostics`] run only until one fails — bulk R-hat, then
/// folded R-hat (a second ranking), then ESS_bulk (autocovariances) — so
/// a quantity far from the bound costs one ranking. Where it meets the
/// bound the numbers are exactly [`rank_diagnostics`]'s.
pub fn against_bound(draws: ChainDraws<'_>, max_rhat: f64, min_ess_bulk: f64) -> Bound {
    // NaN (too few chains or draws, a NaN draw) fails whatever the bound.
    let fails = |shortfall: f64| Bound::Fails {
        shortfall: if shortfall.is_nan() {
            f64::INFINITY
        } else {
            shortfall
        },
    };
    if not_valid(draws, 2) {
        return fails(f64::NAN);
    }
    let rhat_shortfall = |r_hat: f64| (r_hat - 1.0) / (max_rhat - 1.0);
    // False for NaN.
    let rhat_meets = |r_hat: f64| r_hat < max_rhat;
    let ess_meets = |ess_bulk: f64| ess_bulk >= min_ess_bulk;
    let split = split_chains(draws);
    let (z_bulk, sorted_split) = z_scale_and_sort(&split);
    let bulk = rhat(z_bulk.view());
    if !rhat_meets(bulk) {
        return fails(rhat_shortfall(bulk));
    }
    let r_hat = python_max(bulk, folded_rhat(&split, &sorted_split));
    if !rhat_meets(r_hat) {
        return fails(rhat_shortfall(r_hat));
    }
    let ess_bulk = ess(z_bulk.view());
    let ess_shortfall = min_ess_bulk / ess_bulk;
    if !ess_meets(ess_bulk) {
        return fails(ess_shortfall);
    }
    Bound::Meets {
        r_hat,
        ess_bulk,
        shortfall: rhat_shortfall(r_hat).max(ess_shortfall),
    }
}

/// [`against_bound`]'s verdict. `shortfall` is how close the quantity is
/// to failing: the larger of (R-hat − 1) ÷ (bound − 1) and the ESS target
/// ÷ ESS_bulk, each as far as computed (at least 1 when it fails, at
/// most 1 when it meets the bound).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    Meets {
        r_hat: f64,
        ess_bulk: f64,
        shortfall: f64,
    },
    Fails {
        shortfall: f64,
    },
}

/// The other half of [`diagnose`]: (ESS_tail, ESS_mean, MCSE of the mean).
pub fn sorted_diagnostics(draws: ChainDraws<'_>, sorted: &[f64]) -> (f64, f64, f64) {
    if not_valid(draws, 1) {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let ess_tail = python_min(
        ess_indicator(draws, quantile_sorted(sorted, 0.05)),
        ess_indicator(draws, quantile_sorted(sorted, 0.95)),
    );
    let ess_mean = ess(split_chains(draws).view());
    let mcse_mean = sample_sd(draws.values()) / ess_mean.sqrt();
    (ess_tail, ess_mean, mcse_mean)
}

/// Joins the halves computed by [`rank_diagnostics`] and [`sorted_diagnostics`].
pub fn combine(rank: (f64, f64), sorted: (f64, f64, f64)) -> Diagnostics {
    Diagnostics {
        r_hat: rank.0,
        ess_bulk: rank.1,
        ess_tail: sorted.0,
        ess_mean: sorted.1,
        mcse_mean: sorted.2,
    }
}

/// Standard deviation with the n − 1 denominator.
pub fn sample_sd(values: &[f64]) -> f64 {
    sample_variance(values).sqrt()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Variance with the n − 1 denominator (two-pass, as numpy's `var(ddof=1)`).
fn sample_variance(values: &[f64]) -> f64 {
    let m = mean(values);
    values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (values.len() as f64 - 1.0)
}

/// Potential scale reduction of chains as they are (no splitting).
fn rhat(draws: ChainDraws<'_>) -> f64 {
    if has_nan(draws.values()) {
        return f64::NAN;
    }
    let n = draws.n_draws() as f64;
    let chain_means: Vec<f64> = (0..draws.n_chains())
        .map(|c| mean(draws.chain(c)))
        .collect();
    let within = mean(
        &(0..draws.n_chains())
            .map(|c| sample_variance(draws.chain(c)))
            .collect::<Vec<_>>(),
    );
    let between = n * sample_variance(&chain_means);
    ((between / within + n - 1.0) / n).sqrt()
}

/// Normal scores of the pooled average ranks (Blom's offset c = 3/8).
fn z_scale(matrix: &Matrix) -> Matrix {
    z_scale_and_sort(matrix).0
}

/// [`z_scale`] and the input values sorted. Each run of equal values gets
/// the score of its average rank, written straight to its draws (no array
/// of ranks in between).
fn z_scale_and_sort(matrix: &Matrix) -> (Matrix, Vec<f64>) {
    let scores = NormalScores::of(matrix.values.len());
    let mut z = vec![0.0; matrix.values.len()];
    let sorted = for_each_tie(&matrix.values, |positions, draws| {
        let score = if positions.len() == 1 {
            scores.whole[positions.start]
        } else {
            scores.of_rank(average_rank(&positions))
        };
        for &i in draws {
            z[i] = score;
        }
    });
    let z = Matrix {
        values: z,
        n_chains: matrix.n_chains,
        n_draws: matrix.n_draws,
    };
    (z, sorted)
}

/// Blom's normal score of rank `r` among `size`: Φ⁻¹((r − 3/8)/(size + 1/4)).
fn normal_score(r: f64, size: usize) -> f64 {
    let c = 3.0 / 8.0;
    probit((r - c) / (size as f64 - 2.0 * c + 1.0))
}

/// The normal scores of the whole ranks 1..=size, computed once per size and
/// shared: every quantity of a summary has the same number of draws and
/// ranks them twice (bulk and folded), and without ties every rank is whole —
/// the inverse normal CDF of each rank (an `erfc` and an `exp` per call) was
/// about half of `bat summary`'s time for 1000 chains × 300 draws. Tied
/// values' average ranks (half-integers, or other fractions) are computed
/// as before, so every score is the same number either way.
struct NormalScores {
    size: usize,
    whole: std::sync::Arc<[f64]>,
}

impl NormalScores {
    fn of(size: usize) -> NormalScores {
        static LAST: std::sync::Mutex<Option<(usize, std::sync::Arc<[f64]>)>> =
            std::sync::Mutex::new(None);
        let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let whole = match &*last {
            Some((n, scores)) if *n == size => scores.clone(),
            _ => {
                let scores: std::sync::Arc<[f64]> =
                    (1..=size).map(|r| normal_score(r as f64, size)).collect();
                *last = Some((size, scores.clone()));
                scores
            }
        };
        NormalScores { size, whole }
    }

    fn of_rank(&self, r: f64) -> f64 {
        if r.fract() == 0.0 && r >= 1.0 && r <= self.size as f64 {
            self.whole[r as usize - 1]
        } else {
            normal_score(r, self.size)
        }
    }
}

/// Runs `f(positions, draws)` for each run of equal values of `values`
/// in sorted order (0-based sorted positions; the draws' indices), and
/// returns `values` sorted.
fn for_each_tie(values: &[f64], mut f: impl FnMut(std::ops::Range<usize>, &[usize])) -> Vec<f64> {
    let s = sort(values);
    let mut start = 0;
    while start < s.order.len() {
        let mut end = start + 1;
        while end < s.order.len() && s.sorted[end] == s.sorted[start] {
            end += 1;
        }
        f(start..end, &s.order[start..end]);
        start = end;
    }
    s.sorted
}

/// The average of the 1-based ranks of sorted positions `positions`.
fn average_rank(positions: &std::ops::Range<usize>) -> f64 {
    (positions.start + 1 + positions.end) as f64 / 2.0
}

/// 1-based ranks with ties given their average rank (scipy's `rankdata("average")`).
#[cfg(test)]
fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut ranks = vec![0.0; values.len()];
    for_each_tie(values, |positions, draws| {
        for &i in draws {
            ranks[i] = average_rank(&positions);
        }
    });
    ranks
}

/// Effective sample size of chains as they are, with Geyer's initial positive and
/// initial monotone sequence truncation of the autocorrelation sum.
fn ess(draws: ChainDraws<'_>) -> f64 {
    let values = draws.values();
    if has_nan(values) {
        return f64::NAN;
    }
    let size = values.len() as f64;
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    // numpy's finfo(float).resolution: a constant quantity is perfectly "effective".
    if max - min < 1e-15 {
        return size;
    }
    let n_chain = draws.n_chains();
    let n_draw = draws.n_draws();
    let mut acov = MeanAutocovariance::new(draws);
    let n = n_draw as f64;
    let mean_var = acov.at(0) * n / (n - 1.0);
    let mut var_plus = mean_var * (n - 1.0) / n;
    if n_chain > 1 {
        let chain_means: Vec<f64> = (0..n_chain).map(|c| mean(draws.chain(c))).collect();
        var_plus += sample_variance(&chain_means);
    }
    let mut rho_at = |lag: usize| 1.0 - (mean_var - acov.at(lag)) / var_plus;

    let mut rho = vec![0.0; n_draw];
    let mut rho_even = 1.0;
    rho[0] = rho_even;
    let mut rho_odd = rho_at(1);
    rho[1] = rho_odd;

    // Geyer's initial positive sequence.
    let mut t = 1;
    while t + 3 < n_draw && rho_even + rho_odd > 0.0 {
        rho_even = rho_at(t + 1);
        rho_odd = rho_at(t + 2);
        if rho_even + rho_odd >= 0.0 {
            rho[t + 1] = rho_even;
            rho[t + 2] = rho_odd;
        }
        t += 2;
    }
    // max_t = t - 2 may be -1 when the loop never ran; keep it signed like ArviZ.
    let max_t = t as isize - 2;
    let after_max = (max_t + 1) as usize;
    if rho_even > 0.0 {
        rho[after_max] = rho_even;
    }
    // Geyer's initial monotone sequence.
    let mut t = 1;
    while (t as isize) <= max_t - 2 {
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t] {
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0;
            rho[t + 2] = rho[t + 1];
        }
        t += 2;
    }
    let head: f64 = rho[..after_max].iter().sum();
    let next: f64 = rho.get(after_max).copied().unwrap_or(0.0);
    let tau = -1.0 + 2.0 * head + next;
    let tau = python_max(tau, 1.0 / size.log10());
    if has_nan(&rho) {
        return f64::NAN;
    }
    size / tau
}

/// Python's builtin `max(a, b)`: `b` only when `b > a` (so a NaN `a` wins).
fn python_max(a: f64, b: f64) -> f64 {
    if b > a { b } else { a }
}

/// Python's builtin `min(a, b)`: `b` only when `b < a`.
fn python_min(a: f64, b: f64) -> f64 {
    if b < a { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared table gives each whole rank's score bit for bit, for two
    /// sizes in turn (the table follows the size); fractional (tied) ranks
    /// are scored directly.
    #[test]
    fn normal_scores_are_the_direct_ones() {
        for size in [7, 1000, 7] {
            let scores = NormalScores::of(size);
            for r in 1..=size {
                let r = r as f64;
                assert_eq!(scores.of_rank(r).to_bits(), normal_score(r, size).to_bits());
                let tied = r + 0.5;
                assert_eq!(
                    scores.of_rank(tied).to_bits(),
                    normal_score(tied, size).to_bits()
                );
            }
        }
    }

    fn draws(values: &[f64], chains: usize) -> ChainDraws<'_> {
        ChainDraws::new(values, chains, values.len() / chains).unwrap()
    }

    /// Deterministic pseudo-random uniforms (SplitMix64) for self-contained tests.
    fn uniforms(seed: u64, n: usize) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                (z >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    /// `against_bound` agrees with `rank_diagnostics` on every verdict and,
    /// where a quantity meets the bound, gives its numbers bit for bit:
    /// independent chains (meet loose bounds), chains with shifted means
    /// (fail R-hat), and too few draws for the ESS (fail ESS_bulk).
    #[test]
    fn against_bound_is_rank_diagnostics_verdict() {
        let mut cases = Vec::new();
        for (seed, shift) in [(1, 0.0), (2, 0.0), (3, 0.3), (4, 2.0)] {
            let mut values = uniforms(seed, 8 * 50);
            for (i, v) in values.iter_mut().enumerate() {
                *v += shift * (i / 50) as f64;
            }
            cases.push(values);
        }
        let bounds = [(1.01, 100.0), (1.05, 300.0), (1.5, 1000.0), (2.0, 10.0)];
        let mut verdicts = [0, 0];
        for values in &cases {
            let draws = draws(values, 8);
            let (r_hat, ess_bulk) = rank_diagnostics(draws);
            for (max_rhat, min_ess) in bounds {
                let meets = r_hat < max_rhat && ess_bulk >= min_ess;
                match against_bound(draws, max_rhat, min_ess) {
                    Bound::Meets {
                        r_hat: r,
                        ess_bulk: e,
                        shortfall,
                    } => {
                        assert!(meets, "{r_hat} {ess_bulk} against {max_rhat} {min_ess}");
                        assert_eq!(
                            (r.to_bits(), e.to_bits()),
                            (r_hat.to_bits(), ess_bulk.to_bits())
                        );
                        assert!(shortfall <= 1.0);
                        verdicts[0] += 1;
                    }
                    Bound::Fails { shortfall } => {
                        assert!(!meets, "{r_hat} {ess_bulk} against {max_rhat} {min_ess}");
                        assert!(shortfall >= 1.0);
                        verdicts[1] += 1;
                    }
                }
            }
        }
        assert!(verdicts[0] > 0 && verdicts[1] > 0, "{verdicts:?}");
        // Too few chains for R-hat: a failure, never a pass.
        let one = uniforms(5, 50);
        assert!(matches!(
            against_bound(draws(&one, 1), 1.01, 1.0),
            Bound::Fails { shortfall } if shortfall.is_infinite()
        ));
    }

    #[test]
    fn ranks_average_ties() {
        assert_eq!(
            average_ranks(&[3.0, 1.0, 3.0, 2.0, 3.0]),
            vec![4.0, 1.0, 4.0, 2.0, 4.0]
        );
    }

    #[test]
    fn combined_diagnostics_equal_the_individual_ones() {
        let mut shifted = uniforms(8, 600);
        for v in &mut shifted[..200] {
            *v += 0.3;
        }
        let ties: Vec<f64> = uniforms(9, 600).iter().map(|v| (v * 5.0).round()).collect();
        let constant = vec![1.0; 600];
        let mut with_nan = uniforms(10, 600);
        with_nan[5] = f64::NAN;
        for (values, chains) in [
            (&shifted, 3),
            (&ties, 4),
            (&constant, 2),
            (&with_nan, 2),
            (&shifted, 1),
            (&ties, 120),
        ] {
            let d = draws(values, chains);
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let all = diagnose(d, &sorted);
            let expected = Diagnostics {
                r_hat: rhat_rank(d),
                ess_bulk: ess_bulk(d),
                ess_tail: ess_tail(d),
                ess_mean: ess_mean(d),
                mcse_mean: mcse_mean(d),
            };
            let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
            assert!(
                same(all.r_hat, expected.r_hat)
                    && same(all.ess_bulk, expected.ess_bulk)
                    && same(all.ess_tail, expected.ess_tail)
                    && same(all.ess_mean, expected.ess_mean)
                    && same(all.mcse_mean, expected.mcse_mean),
                "{chains} chains: {all:?} vs {expected:?}"
            );
        }
    }

    #[test]
    fn constant_chains() {
        let values = vec![2.5; 40];
        let d = draws(&values, 4);
        assert!(rhat_rank(d).is_nan());
        // ArviZ: a constant quantity reports its full (split) size as ESS.
        assert_eq!(ess_bulk(d), 40.0);
        assert_eq!(ess_tail(d), 40.0);
        assert_eq!(mcse_mean(d), 0.0);
    }

    #[test]
    fn nan_draw_makes_diagnostics_nan() {
        let mut values = uniforms(1, 40);
        values[7] = f64::NAN;
        let d = draws(&values, 2);
        assert!(rhat_rank(d).is_nan());
        assert!(ess_bulk(d).is_nan());
        assert!(ess_tail(d).is_nan());
        assert!(mcse_mean(d).is_nan());
    }

    #[test]
    fn infinite_draws_do_not_panic() {
        let mut values = uniforms(7, 40);
        values[3] = f64::INFINITY;
        values[30] = f64::NEG_INFINITY;
        let d = draws(&values, 2);
        // Ranks stay finite, so the rank-based diagnostics are defined...
        assert!(rhat_rank(d).is_finite());
        assert!(ess_bulk(d).is_finite());
        // ...while moment-based ones are not, as in ArviZ.
        assert!(ess_mean(d).is_nan());
        assert!(mcse_mean(d).is_nan());
    }

    #[test]
    fn single_chain_has_ess_but_no_rhat() {
        let values = uniforms(2, 200);
        let d = draws(&values, 1);
        assert!(rhat_rank(d).is_nan());
        let ess = ess_bulk(d);
        assert!(ess.is_finite() && ess > 50.0 && ess < 400.0, "ess={ess}");
    }

    #[test]
    fn short_chains_are_undefined() {
        let values = uniforms(3, 6);
        let d = draws(&values, 2);
        assert!(rhat_rank(d).is_nan());
        assert!(ess_bulk(d).is_nan());
        assert!(mcse_mean(d).is_nan());
        assert!(rhat_rank(ChainDraws::new(&[], 0, 0).unwrap()).is_nan());
    }

    #[test]
    fn independent_draws_have_ess_near_size_and_rhat_near_one() {
        let values = uniforms(4, 4000);
        let d = draws(&values, 4);
        let rhat = rhat_rank(d);
        assert!((rhat - 1.0).abs() < 0.01, "rhat={rhat}");
        for ess in [ess_bulk(d), ess_mean(d), ess_tail(d)] {
            assert!(ess > 3000.0 && ess < 5000.0, "ess={ess}");
        }
        // mcse of a uniform mean ≈ sqrt(1/12)/sqrt(n).
        let expected = (1.0f64 / 12.0).sqrt() / 4000f64.sqrt();
        let mcse = mcse_mean(d);
        assert!((mcse / expected - 1.0).abs() < 0.1, "mcse={mcse}");
    }

    #[test]
    fn shifted_chain_raises_rhat() {
        let mut values = uniforms(5, 4000);
        for v in &mut values[..1000] {
            *v += 1.0;
        }
        assert!(rhat_rank(draws(&values, 4)) > 1.1);
    }

    #[test]
    fn ar1_ess_matches_theory() {
        // AR(1) with φ: integrated autocorrelation time τ = (1+φ)/(1−φ). A moderate φ
        // and long chains keep the estimator's own sampling error (≈ 1% here) well inside the bound.
        let phi: f64 = 0.5;
        let u = uniforms(6, 2 * 400_000);
        let mut values = Vec::with_capacity(400_000);
        let mut x = 0.0;
        for pair in u.chunks(2) {
            // Box–Muller normal innovation.
            let z = (-2.0 * pair[0].max(1e-300).ln()).sqrt()
                * (2.0 * std::f64::consts::PI * pair[1]).cos();
            x = phi * x + (1.0 - phi * phi).sqrt() * z;
            values.push(x);
        }
        let ess = ess_mean(draws(&values, 4));
        let expected = 400_000.0 * (1.0 - phi) / (1.0 + phi);
        assert!(
            (ess / expected - 1.0).abs() < 0.05,
            "ess={ess} expected≈{expected}"
        );
    }
}
