//! Posterior summaries of MCMC draws: the statistics CmdStan's `stansummary` prints
//! (Mean, MCSE, StdDev, 5%, 50%, 95%, ESS_bulk, ESS_tail, R_hat), computed as ArviZ
//! computes them, plus sampler warnings and table / CSV / JSON rendering.

mod autocov;
pub mod diagnostics;
mod draws;
mod file;
mod format;
pub mod normal;
pub mod quantile;
mod warnings;

pub use draws::{ChainDraws, Matrix, split_chains};
pub use file::{report_for_file, summarize_file};
pub use format::{Format, render};
pub use warnings::{SamplerDiagnostics, warnings};

use serde::Serialize;

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
}

impl QuantitySummary {
    /// Computes every statistic of `draws` (chains × draws of one scalar).
    pub fn compute(name: impl Into<String>, draws: ChainDraws<'_>) -> Self {
        let values = draws.values();
        let mean = if values.is_empty() {
            f64::NAN
        } else {
            values.iter().sum::<f64>() / values.len() as f64
        };
        let quantiles = quantile::quantiles_type7(values, &[0.05, 0.5, 0.95]);
        Self {
            name: name.into(),
            mean,
            mcse: diagnostics::mcse_mean(draws),
            sd: diagnostics::sample_sd(values),
            q5: quantiles[0],
            q50: quantiles[1],
            q95: quantiles[2],
            ess_bulk: diagnostics::ess_bulk(draws),
            ess_tail: diagnostics::ess_tail(draws),
            r_hat: diagnostics::rhat_rank(draws),
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
}
