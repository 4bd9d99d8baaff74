//! Post-sampling warnings: stopped and stuck chains, divergences, tree-depth
//! saturation, R-hat and ESS.

use super::{Report, StuckChain};
use serde::Serialize;

/// R-hat above this suggests chains have not mixed (Vehtari et al. 2021).
pub const RHAT_THRESHOLD: f64 = 1.01;
/// Reliable R-hat and ESS need roughly 100 effective draws per chain.
pub const ESS_PER_CHAIN: f64 = 100.0;

/// Per-run sampler facts read from `sample_stats`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SamplerDiagnostics {
    pub divergences: usize,
    pub max_tree_depth: u32,
    /// Transitions whose tree depth reached `max_tree_depth`.
    pub tree_depth_saturated: usize,
    pub transitions: usize,
}

/// Human-readable warnings for a report, in a stable order.
pub fn warnings(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for &(chain, draws) in &report.stopped_chains {
        out.push(if draws == 0 {
            format!("chain {} has no draws (it stopped early): left out", chain + 1)
        } else {
            format!(
                "chain {} has only {draws} draws (it stopped early): the first {} draws of each of {} chains are summarized",
                chain + 1,
                report.n_draws,
                report.n_chains
            )
        });
    }
    for stuck in &report.stuck_chains {
        out.push(stuck_warning(stuck));
    }
    if let Some(sampler) = &report.sampler {
        if sampler.divergences > 0 {
            out.push(format!(
                "{} of {} transitions ({:.1}%) ended with a divergence; consider increasing adapt delta or reparameterizing",
                sampler.divergences,
                sampler.transitions,
                percent(sampler.divergences, sampler.transitions)
            ));
        }
        if sampler.tree_depth_saturated > 0 {
            out.push(format!(
                "{} of {} transitions ({:.1}%) hit the maximum tree depth of {}; consider increasing max depth",
                sampler.tree_depth_saturated,
                sampler.transitions,
                percent(sampler.tree_depth_saturated, sampler.transitions),
                sampler.max_tree_depth
            ));
        }
    }
    let high_rhat: Vec<&str> = report
        .quantities
        .iter()
        .filter(|q| q.r_hat > RHAT_THRESHOLD)
        .map(|q| q.name.as_str())
        .collect();
    if !high_rhat.is_empty() {
        out.push(format!(
            "R_hat > {RHAT_THRESHOLD} for {} quantities ({}): chains have not mixed",
            high_rhat.len(),
            list_names(&high_rhat)
        ));
    }
    let ess_floor = ESS_PER_CHAIN * report.n_chains as f64;
    let low_ess: Vec<&str> = report
        .quantities
        .iter()
        .filter(|q| q.ess_bulk < ess_floor || q.ess_tail < ess_floor)
        .map(|q| q.name.as_str())
        .collect();
    if !low_ess.is_empty() {
        out.push(format!(
            "ESS_bulk or ESS_tail below {ess_floor:.0} ({ESS_PER_CHAIN:.0} per chain) for {} quantities ({}): estimates may be unreliable",
            low_ess.len(),
            list_names(&low_ess)
        ));
    }
    out
}

/// Names a stuck chain (1-based, as bat's messages count chains), the
/// evidence, and what to do (ArviZ counts chains from 0).
fn stuck_warning(stuck: &StuckChain) -> String {
    let number = stuck.chain + 1;
    let mut evidence = vec![format!(
        "its median lp {} is far from the median chain's {}",
        number_text(stuck.lp_median),
        number_text(stuck.chains_lp_median)
    )];
    if let (Some(step), Some(median)) = (stuck.step_size, stuck.chains_step_size) {
        evidence.push(format!(
            "its step size {step:.2e} vs the median chain's {median:.2e}"
        ));
    }
    if stuck.moved_fraction <= super::stuck::STILL_FRACTION {
        evidence.push(format!(
            "its lp changed in {:.1}% of its transitions",
            100.0 * stuck.moved_fraction
        ));
    }
    format!(
        "chain {number} is stuck: {}. Every statistic above includes it; rerun with `--adapt pooled` (warmup restarts chains stuck far below the others from their points) or other inits, or drop it (in ArviZ: idata.posterior.drop_sel(chain=[{}]), chains counted from 0)",
        evidence.join("; "),
        stuck.chain
    )
}

fn number_text(x: f64) -> String {
    if x.is_finite() && x.abs() < 1e6 {
        format!("{x:.1}")
    } else {
        format!("{x:.3e}")
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The first few names, then a count of the rest.
fn list_names(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut text = names
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(", … {} more", names.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::QuantitySummary;

    fn quantity(name: &str, r_hat: f64, ess: f64) -> QuantitySummary {
        QuantitySummary {
            name: name.into(),
            mean: 0.0,
            mcse: 0.0,
            sd: 1.0,
            q5: -1.6,
            q50: 0.0,
            q95: 1.6,
            ess_bulk: ess,
            ess_tail: ess,
            r_hat,
            nested_r_hat: None,
        }
    }

    #[test]
    fn flags_each_problem() {
        let report = Report {
            n_chains: 4,
            n_draws: 1000,
            quantities: vec![
                quantity("a", 1.0, 4000.0),
                quantity("b", 1.05, 4000.0),
                quantity("c", 1.0, 120.0),
            ],
            sampler: Some(SamplerDiagnostics {
                divergences: 3,
                max_tree_depth: 10,
                tree_depth_saturated: 40,
                transitions: 4000,
            }),
            stopped_chains: Vec::new(),
            superchains: None,
            stuck_chains: Vec::new(),
        };
        let w = warnings(&report);
        assert_eq!(w.len(), 4, "{w:#?}");
        assert!(w[0].starts_with("3 of 4000 transitions (0.1%) ended with a divergence"));
        assert!(w[1].contains("maximum tree depth of 10"));
        assert!(w[2].contains("(b)"));
        assert!(w[3].contains("below 400") && w[3].contains("(c)"));
    }

    #[test]
    fn a_stuck_chain_is_named_from_one_and_dropped_from_zero() {
        let report = Report {
            n_chains: 8,
            n_draws: 100,
            quantities: vec![quantity("a", 1.0, 3000.0)],
            sampler: None,
            stopped_chains: Vec::new(),
            superchains: None,
            stuck_chains: vec![StuckChain {
                chain: 2,
                lp_median: -5.0,
                chains_lp_median: -1.5,
                step_size: None,
                chains_step_size: None,
                moved_fraction: 0.0,
            }],
        };
        assert_eq!(
            warnings(&report),
            [
                "chain 3 is stuck: its median lp -5.0 is far from the median chain's -1.5; \
              its lp changed in 0.0% of its transitions. Every statistic above includes it; \
              rerun with `--adapt pooled` (warmup restarts chains stuck far below the others \
              from their points) or other inits, or drop it (in ArviZ: idata.posterior.drop_sel(chain=[2]), \
              chains counted from 0)"
            ]
        );
    }

    #[test]
    fn clean_run_has_no_warnings() {
        let report = Report {
            n_chains: 4,
            n_draws: 1000,
            quantities: vec![quantity("a", 1.001, 3000.0)],
            sampler: Some(SamplerDiagnostics {
                max_tree_depth: 10,
                transitions: 4000,
                ..Default::default()
            }),
            stopped_chains: Vec::new(),
            superchains: None,
            stuck_chains: Vec::new(),
        };
        assert!(warnings(&report).is_empty());
    }
}
