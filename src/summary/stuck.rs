//! Chains stuck far from the others. With many chains, one chain that
//! started at a bad point and adapted a vanishing step size only raises
//! every R-hat a little; this names it.

use super::ChainDraws;
use serde::Serialize;

/// Fewer chains give no majority to compare a chain with.
pub const MIN_CHAINS: usize = 4;
/// A chain whose median lp is this many robust SDs below the median of the
/// chains' median lp is stuck. Healthy chains' medians differ by a fraction
/// of one SD of lp; a chain in a region the others never visit differs by
/// far more.
pub const LP_SCALES: f64 = 10.0;
/// A chain whose step size is this many times smaller than the median
/// chain's is stuck: healthy chains adapt step sizes within a factor of a
/// few of each other.
pub const STEP_SIZE_RATIO: f64 = 1e3;
/// A chain whose lp changes in at most this fraction of its transitions
/// (while the median chain's changes in at least [`MOVING_FRACTION`]) is stuck.
pub const STILL_FRACTION: f64 = 0.01;
pub const MOVING_FRACTION: f64 = 0.2;
/// 1/Φ⁻¹(0.75): the MAD of normal values times this estimates their SD.
const MAD_TO_SD: f64 = 1.4826;
/// The IQR of normal values divided by this estimates their SD.
const IQR_TO_SD: f64 = 1.349;

/// A chain stuck far from the others, and the evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StuckChain {
    /// 0-based, as ArviZ's `chain` coordinate (bat's messages count from 1).
    pub chain: usize,
    pub lp_median: f64,
    /// The median of every chain's median lp.
    pub chains_lp_median: f64,
    /// The chain's median step size, when the file has step sizes.
    pub step_size: Option<f64>,
    /// The median of every chain's median step size.
    pub chains_step_size: Option<f64>,
    /// Fraction of the chain's transitions that changed its lp.
    pub moved_fraction: f64,
}

/// The chains of `lp` stuck far from the others: a chain whose median lp
/// is more than [`LP_SCALES`] robust SDs below the median of the chains'
/// median lp (the SD is the larger of 1.4826 × the MAD of the chains'
/// medians and the median of the chains' IQR/1.349), or whose step size is
/// [`STEP_SIZE_RATIO`] times below the median chain's, or whose lp never
/// changes while the other chains' does. `chain_ids[i]` is the file's index
/// of row `i` of the draws. Nothing with fewer than [`MIN_CHAINS`] chains.
pub fn stuck_chains(
    lp: ChainDraws<'_>,
    step_size: Option<ChainDraws<'_>>,
    chain_ids: &[usize],
) -> Vec<StuckChain> {
    let n = lp.n_chains();
    if n < MIN_CHAINS || lp.n_draws() == 0 || chain_ids.len() != n {
        return Vec::new();
    }
    let lp_medians: Vec<f64> = (0..n).map(|c| median(lp.chain(c))).collect();
    let lp_center = median(&lp_medians);
    let between = MAD_TO_SD
        * median(
            &lp_medians
                .iter()
                .map(|m| (m - lp_center).abs())
                .collect::<Vec<_>>(),
        );
    let within = median(
        &(0..n)
            .map(|c| interquartile_range(lp.chain(c)) / IQR_TO_SD)
            .collect::<Vec<_>>(),
    );
    let lp_scale = between.max(within);
    let step_medians: Option<Vec<f64>> = step_size
        .filter(|s| s.n_chains() == n && s.n_draws() > 0)
        .map(|s| (0..n).map(|c| median(s.chain(c))).collect());
    let step_center = step_medians.as_deref().map(median);
    let moved: Vec<f64> = (0..n).map(|c| moved_fraction(lp.chain(c))).collect();
    let moving_center = median(&moved);

    (0..n)
        .filter(|&c| {
            let far_below = lp_scale.is_finite()
                && lp_scale > 0.0
                && lp_center - lp_medians[c] > LP_SCALES * lp_scale;
            let tiny_step = match (&step_medians, step_center) {
                (Some(steps), Some(center)) => {
                    center.is_finite() && center > 0.0 && steps[c] * STEP_SIZE_RATIO < center
                }
                _ => false,
            };
            let still = lp.n_draws() >= 10
                && moved[c] <= STILL_FRACTION
                && moving_center >= MOVING_FRACTION;
            far_below || tiny_step || still
        })
        .map(|c| StuckChain {
            chain: chain_ids[c],
            lp_median: lp_medians[c],
            chains_lp_median: lp_center,
            step_size: step_medians.as_ref().map(|s| s[c]),
            chains_step_size: step_center,
            moved_fraction: moved[c],
        })
        .collect()
}

/// The median of the values that are not NaN (NaN when none).
fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

fn interquartile_range(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    super::quantile::quantile_sorted(&sorted, 0.75)
        - super::quantile::quantile_sorted(&sorted, 0.25)
}

/// Fraction of consecutive draws whose values differ (an accepted move
/// changes lp; a rejected one repeats it).
fn moved_fraction(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let moves = values.windows(2).filter(|w| w[0] != w[1]).count();
    moves as f64 / (values.len() - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `chains` chains of `draws` lp values wiggling around `center(chain)`.
    fn lp_draws(chains: usize, draws: usize, center: impl Fn(usize) -> f64) -> Vec<f64> {
        (0..chains * draws)
            .map(|i| center(i / draws) + ((i * 7919) % 1009) as f64 / 1009.0 * 4.0 - 2.0)
            .collect()
    }

    #[test]
    fn names_the_chain_far_below_the_others() {
        let lp = lp_draws(16, 200, |c| if c == 6 { -41_000.0 } else { 257.0 });
        let ids: Vec<usize> = (0..16).collect();
        let stuck = stuck_chains(ChainDraws::new(&lp, 16, 200).unwrap(), None, &ids);
        assert_eq!(stuck.len(), 1, "{stuck:?}");
        assert_eq!(stuck[0].chain, 6);
        assert!(stuck[0].lp_median < -40_990.0 && stuck[0].chains_lp_median > 256.0);
    }

    #[test]
    fn names_the_chain_with_a_vanishing_step_size_or_that_never_moves() {
        let lp = lp_draws(8, 100, |_| 0.0);
        let mut lp_still = lp.clone();
        // Chain 2 repeats its first draw (every proposal rejected).
        let first = lp_still[200];
        lp_still[200..300].fill(first);
        let steps: Vec<f64> = (0..800)
            .map(|i| {
                if i / 100 == 5 {
                    1e-12
                } else {
                    0.3 + (i / 100) as f64 * 0.01
                }
            })
            .collect();
        let ids: Vec<usize> = (10..18).collect();
        let stuck = stuck_chains(
            ChainDraws::new(&lp_still, 8, 100).unwrap(),
            Some(ChainDraws::new(&steps, 8, 100).unwrap()),
            &ids,
        );
        let named: Vec<usize> = stuck.iter().map(|s| s.chain).collect();
        assert_eq!(named, [12, 15], "{stuck:?}");
        assert_eq!(stuck[0].moved_fraction, 0.0);
        assert_eq!(stuck[1].step_size, Some(1e-12));
    }

    #[test]
    fn healthy_or_few_chains_name_none() {
        // Chains whose lp centers differ by a fraction of lp's spread.
        let lp = lp_draws(16, 200, |c| c as f64 * 0.1);
        let ids: Vec<usize> = (0..16).collect();
        assert!(stuck_chains(ChainDraws::new(&lp, 16, 200).unwrap(), None, &ids).is_empty());
        let lp = lp_draws(3, 200, |c| if c == 0 { -1e6 } else { 0.0 });
        assert!(stuck_chains(ChainDraws::new(&lp, 3, 200).unwrap(), None, &ids[..3]).is_empty());
    }
}
