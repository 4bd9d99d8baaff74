//! Nested R-hat (Margossian, Hoffman, Sountsov, Riou-Durand, Vehtari and
//! Gelman 2024, "Nested R-hat: assessing the convergence of Markov chain
//! Monte Carlo when running many short chains", Bayesian Analysis), for
//! runs of many short chains grouped into superchains.

use super::ChainDraws;

/// How chains are grouped into superchains: consecutive chains, `chains_each`
/// to a superchain (chains `0..chains_each` form superchain 0, and so on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Superchains {
    pub count: usize,
    pub chains_each: usize,
    /// The last chains, fewer than `chains_each`, that fill no superchain
    /// and are left out of nested R-hat.
    pub chains_left_out: usize,
}

impl Superchains {
    /// `count` superchains of `n_chains / count` consecutive chains each;
    /// `None` unless `2 <= count <= n_chains`.
    pub fn of(count: usize, n_chains: usize) -> Option<Superchains> {
        (count >= 2 && count <= n_chains).then(|| {
            let chains_each = n_chains / count;
            Superchains {
                count,
                chains_each,
                chains_left_out: n_chains - count * chains_each,
            }
        })
    }
}

/// Nested R-hat of one quantity, with `K = grouping.count` superchains
/// of `M = grouping.chains_each` chains of `N` draws each (chains past
/// `K·M` are left out). With θ̄ₘₖ the mean of chain m of superchain k,
/// θ̄ₖ the mean of superchain k's draws and θ̄ the mean of the θ̄ₖ:
///
/// ```text
/// B̂  = 1/(K−1) Σₖ (θ̄ₖ − θ̄)²                       between superchains
/// B̃ₖ = 1/(M−1) Σₘ (θ̄ₘₖ − θ̄ₖ)²      (0 when M = 1)  between chains of superchain k
/// W̃ₖ = 1/M Σₘ 1/(N−1) Σₙ (θₙₘₖ − θ̄ₘₖ)²  (0 when N = 1)  within chains of superchain k
/// Ŵ  = 1/K Σₖ (B̃ₖ + W̃ₖ)                            within superchains
/// nR̂ = √(1 + B̂/Ŵ)
/// ```
///
/// (the paper's equations for B̂_ν, Ŵ_ν and nR̂; posterior's
/// `rhat_nested` computes the same). NaN when a draw is not finite, when
/// Ŵ is 0 (every chain constant and equal within its superchain) or when
/// `draws` has fewer chains than the grouping needs.
pub fn nested_r_hat(draws: ChainDraws<'_>, grouping: Superchains) -> f64 {
    let (k, m, n) = (grouping.count, grouping.chains_each, draws.n_draws());
    if k < 2 || m == 0 || n == 0 || k * m > draws.n_chains() {
        return f64::NAN;
    }
    let used = &draws.values()[..k * m * n];
    if used.iter().any(|v| !v.is_finite()) {
        return f64::NAN;
    }
    let chain_means: Vec<f64> = (0..k * m).map(|c| mean(draws.chain(c))).collect();
    let chain_variances: Vec<f64> = (0..k * m)
        .map(|c| variance_around(draws.chain(c), chain_means[c]))
        .collect();
    let mut superchain_means = Vec::with_capacity(k);
    let mut within_superchains = 0.0;
    for superchain in 0..k {
        let chains = superchain * m..(superchain + 1) * m;
        // Chains of a superchain have equal lengths: its draws' mean is the
        // mean of its chains' means.
        let superchain_mean = mean(&chain_means[chains.clone()]);
        let between_chains = variance_around(&chain_means[chains.clone()], superchain_mean);
        let within_chains = mean(&chain_variances[chains]);
        superchain_means.push(superchain_mean);
        within_superchains += between_chains + within_chains;
    }
    within_superchains /= k as f64;
    let overall = mean(&superchain_means);
    let between_superchains = variance_around(&superchain_means, overall);
    if within_superchains == 0.0 {
        return f64::NAN;
    }
    (1.0 + between_superchains / within_superchains).sqrt()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Variance around `center` with the n − 1 divisor; 0 for one value (the
/// paper's convention for M = 1 and N = 1).
fn variance_around(values: &[f64], center: f64) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    values
        .iter()
        .map(|v| (v - center) * (v - center))
        .sum::<f64>()
        / (values.len() - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standard normal draws (splitmix64 and Box–Muller), deterministic.
    fn normal_draws(count: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        let mut uniform = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        (0..count)
            .map(|_| {
                let (u, v) = (uniform(), uniform());
                (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
            })
            .collect()
    }

    #[test]
    fn equals_the_hand_computation() {
        // Chains (N = 2): [1,3] [2,4] | [5,7] [6,10], then a fifth chain
        // that fills no superchain of 2.
        let values = [1.0, 3.0, 2.0, 4.0, 5.0, 7.0, 6.0, 10.0, 100.0, -100.0];
        let draws = ChainDraws::new(&values, 5, 2).unwrap();
        let grouping = Superchains::of(2, 5).unwrap();
        assert_eq!(
            grouping,
            Superchains {
                count: 2,
                chains_each: 2,
                chains_left_out: 1
            }
        );
        // Chain means 2, 3 | 6, 8; chain variances 2, 2 | 2, 8.
        // Superchain means 2.5 and 7; B̃ = 0.5 and 2; W̃ = 2 and 5.
        // B̂ = 2 × 2.25² / 1 = 10.125; Ŵ = (2.5 + 7) / 2 = 4.75.
        let expected = (1.0_f64 + 10.125 / 4.75).sqrt();
        let got = nested_r_hat(draws, grouping);
        assert!((got - expected).abs() < 1e-14, "{got} vs {expected}");
    }

    #[test]
    fn one_chain_per_superchain_and_one_draw_per_chain_use_zero() {
        // M = 1: B̃ₖ = 0, so Ŵ is the mean within-chain variance.
        let values = [0.0, 2.0, 1.0, 5.0];
        let got = nested_r_hat(
            ChainDraws::new(&values, 2, 2).unwrap(),
            Superchains::of(2, 2).unwrap(),
        );
        // Means 1 and 3: B̂ = 2; variances 2 and 8: Ŵ = 5.
        assert!((got - (1.4_f64).sqrt()).abs() < 1e-14, "{got}");
        // N = 1: W̃ₖ = 0, so Ŵ is the mean between-chain variance.
        let values = [0.0, 2.0, 1.0, 5.0];
        let got = nested_r_hat(
            ChainDraws::new(&values, 4, 1).unwrap(),
            Superchains::of(2, 4).unwrap(),
        );
        // Superchain means 1 and 3: B̂ = 2; B̃ = 2 and 8: Ŵ = 5.
        assert!((got - (1.4_f64).sqrt()).abs() < 1e-14, "{got}");
    }

    #[test]
    fn iid_normal_draws_with_many_superchains_give_about_one() {
        let (chains, draws) = (1024, 10);
        let values = normal_draws(chains * draws, 7);
        let got = nested_r_hat(
            ChainDraws::new(&values, chains, draws).unwrap(),
            Superchains::of(128, chains).unwrap(),
        );
        // B̂ estimates 1/(M·N) = 1/80 and Ŵ 1 + 1/N = 1.1: nR̂ ≈ 1.006.
        assert!(got > 1.0 && got < 1.015, "{got}");
    }

    #[test]
    fn a_shifted_superchain_is_large() {
        let (chains, draws) = (64, 20);
        let mut values = normal_draws(chains * draws, 11);
        // Superchain 3 (chains 24..32 of 8 superchains of 8) sits 5 SDs away.
        for v in &mut values[24 * draws..32 * draws] {
            *v += 5.0;
        }
        let got = nested_r_hat(
            ChainDraws::new(&values, chains, draws).unwrap(),
            Superchains::of(8, chains).unwrap(),
        );
        assert!(got > 1.5, "{got}");
    }

    #[test]
    fn undefined_cases_are_nan_and_groupings_are_checked() {
        assert_eq!(Superchains::of(1, 8), None);
        assert_eq!(Superchains::of(9, 8), None);
        let values = [1.0, 1.0, 2.0, 2.0];
        let constant = ChainDraws::new(&values, 2, 2).unwrap();
        assert!(nested_r_hat(constant, Superchains::of(2, 2).unwrap()).is_nan());
        let values = [1.0, f64::NAN, 2.0, 3.0];
        let with_nan = ChainDraws::new(&values, 2, 2).unwrap();
        assert!(nested_r_hat(with_nan, Superchains::of(2, 2).unwrap()).is_nan());
    }
}
