//! Posterior summaries of MCMC draws: the statistics CmdStan's `stansummary` prints
//! (Mean, MCSE, StdDev, 5%, 50%, 95%, ESS_bulk, ESS_tail, R_hat), computed as ArviZ
//! computes them, plus sampler warnings and table / CSV / JSON rendering.

mod autocov;
pub mod diagnostics;
mod draws;
mod file;
mod format;
pub mod nested;
pub mod normal;
mod order;
pub mod quantile;
pub mod stuck;
mod warnings;

pub use draws::{ChainDraws, Matrix, split_chains};
pub use file::{
    report_for_file, report_for_file_with, summarize_bytes, summarize_file, summarize_file_with,
};
pub use format::{Format, render};
pub use nested::{Superchains, nested_r_hat};
pub use stuck::StuckChain;
pub use warnings::{SamplerDiagnostics, warnings};

use serde::Serialize;

/// Draws above which one quantity's statistics are computed on two threads.
const PARALLEL_MIN_VALUES: usize = 100_000;

/// Summary statistics of one scalar quantity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuantitySummary {
    pub name: String,
    pub mean: f64,
    pub mcse: f64,
    pub sd: f64,
    pub q5: f64,
    pub q50: f64,
    pub q95: f64,
    pub ess_bulk: f64,
    pub ess_tail: f64,
    pub r_hat: f64,
    /// Nested R-hat, when the summary groups chains into superchains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nested_r_hat: Option<f64>,
}

impl QuantitySummary {
    /// Computes every statistic of `draws` (chains × draws of one scalar);
    /// a large quantity on two threads.
    pub fn compute(name: impl Into<String>, draws: ChainDraws<'_>) -> Self {
        Self::compute_split(name, draws, true)
    }

    /// [`QuantitySummary::compute`] on the calling thread only (for callers
    /// that summarize several quantities in parallel).
    pub fn compute_on_one_thread(name: impl Into<String>, draws: ChainDraws<'_>) -> Self {
        Self::compute_split(name, draws, false)
    }

    fn compute_split(name: impl Into<String>, draws: ChainDraws<'_>, split: bool) -> Self {
        let values = draws.values();
        let mean = if values.is_empty() {
            f64::NAN
        } else {
            values.iter().sum::<f64>() / values.len() as f64
        };
        let has_nan = values.iter().any(|v| v.is_nan());
        let sorted_half = || {
            let sorted = order::sorted(values);
            let quantile = |p: f64| {
                if has_nan {
                    f64::NAN
                } else {
                    quantile::quantile_sorted(&sorted, p)
                }
            };
            let quantiles = [quantile(0.05), quantile(0.5), quantile(0.95)];
            (quantiles, diagnostics::sorted_diagnostics(draws, &sorted))
        };
        // Large quantities (thousands of chains) split the work over two threads.
        let ((quantiles, sorted_part), rank_part) = if split && values.len() >= PARALLEL_MIN_VALUES
        {
            std::thread::scope(|scope| {
                let rank = scope.spawn(|| diagnostics::rank_diagnostics(draws));
                let sorted = sorted_half();
                (sorted, rank.join().expect("rank diagnostics do not panic"))
            })
        } else {
            (sorted_half(), diagnostics::rank_diagnostics(draws))
        };
        let diagnostics = diagnostics::combine(rank_part, sorted_part);
        let [q5, q50, q95] = quantiles;
        Self {
            name: name.into(),
            mean,
            mcse: diagnostics.mcse_mean,
            sd: diagnostics::sample_sd(values),
            q5,
            q50,
            q95,
            ess_bulk: diagnostics.ess_bulk,
            ess_tail: diagnostics.ess_tail,
            r_hat: diagnostics.r_hat,
            nested_r_hat: None,
        }
    }
}

/// Everything `bat summary` reports about one run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub n_chains: usize,
    pub n_draws: usize,
    pub quantities: Vec<QuantitySummary>,
    /// Absent when the file holds no `sample_stats`.
    pub sampler: Option<SamplerDiagnostics>,
    /// Chains that stopped early (an error in their chain): (chain index,
    /// draws it has). The summary then covers every other chain's first
    /// `n_draws` draws, leaving out chains without any.
    pub stopped_chains: Vec<(usize, usize)>,
    /// The superchains of nested R-hat, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superchains: Option<Superchains>,
    /// Chains stuck far from the others (0-based chain indices, as ArviZ's
    /// `chain` coordinates).
    pub stuck_chains: Vec<StuckChain>,
}

/// How `bat summary` summarizes beyond the defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Group consecutive chains into this many superchains and report
    /// nested R-hat.
    pub superchains: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_sequentially(values: &[f64], chains: usize) -> QuantitySummary {
        let draws = ChainDraws::new(values, chains, values.len() / chains).unwrap();
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let d = diagnostics::diagnose(draws, &sorted);
        QuantitySummary {
            name: "x".into(),
            mean: values.iter().sum::<f64>() / values.len() as f64,
            mcse: d.mcse_mean,
            sd: diagnostics::sample_sd(values),
            q5: quantile::quantile_sorted(&sorted, 0.05),
            q50: quantile::quantile_sorted(&sorted, 0.5),
            q95: quantile::quantile_sorted(&sorted, 0.95),
            ess_bulk: d.ess_bulk,
            ess_tail: d.ess_tail,
            r_hat: d.r_hat,
            nested_r_hat: None,
        }
    }

    #[test]
    fn two_thread_path_equals_sequential_diagnostics() {
        // 200 chains × 600 draws is above the parallel threshold.
        let values: Vec<f64> = (0..200 * 600)
            .map(|i| ((i * 7919) % 100_003) as f64 / 977.0 + (i / 600 % 3) as f64)
            .collect();
        assert!(values.len() >= PARALLEL_MIN_VALUES);
        let draws = ChainDraws::new(&values, 200, 600).unwrap();
        assert_eq!(
            QuantitySummary::compute("x", draws),
            summary_sequentially(&values, 200)
        );
        assert_eq!(
            QuantitySummary::compute_on_one_thread("x", draws),
            summary_sequentially(&values, 200)
        );
    }
}
