//! `bat summary FILE`: summaries of every posterior quantity in a draws file.

use super::{Format, QuantitySummary, Report, SamplerDiagnostics, render};
use crate::output::{DrawFile, OutputError, StoredVariable, read_draws};
use std::path::Path;

/// Stan's default maximum tree depth, used when the file's settings do not say.
const DEFAULT_MAX_TREE_DEPTH: u32 = 10;

/// Reads `path` and renders the summary of its posterior in `format`.
pub fn summarize_file(path: impl AsRef<Path>, format: Format) -> Result<String, OutputError> {
    let report = report_for_file(path)?;
    Ok(render(&report, format))
}

/// The [`Report`] of a draws file: `lp__` first (when sample stats are present), then
/// every element of every posterior variable.
pub fn report_for_file(path: impl AsRef<Path>) -> Result<Report, OutputError> {
    let file = read_draws(path.as_ref())?;
    let Some(first) = file.posterior.first() else {
        return Err(OutputError::NoDraws {
            path: file.path.clone(),
            group: "posterior".into(),
        });
    };
    let (n_chains, n_draws) = (first.n_chains, first.n_draws);
    if n_draws == 0 {
        // E.g. a run killed before its first block of draws was flushed.
        return Err(OutputError::NoDraws {
            path: file.path.clone(),
            group: "posterior".into(),
        });
    }
    let mut quantities = Vec::new();
    let stats = file.sample_stats.as_deref().unwrap_or(&[]);
    // lp__ only when it covers the same draws (a killed run may lag in sample_stats).
    let lp = stats.iter().find(|v| {
        v.name == "lp" && v.dims.is_empty() && (v.n_chains, v.n_draws) == (n_chains, n_draws)
    });
    if let Some(lp) = lp {
        quantities.push(summarize_element(lp, 0, "lp__".into())?);
    }
    for variable in &file.posterior {
        if (variable.n_chains, variable.n_draws) != (n_chains, n_draws) {
            return Err(OutputError::Layout {
                path: file.path.clone(),
                message: format!(
                    "`{}` has {}×{} draws, other variables {n_chains}×{n_draws}",
                    variable.name, variable.n_chains, variable.n_draws
                ),
            });
        }
        for element in 0..variable.elements_per_draw() {
            quantities.push(summarize_element(
                variable,
                element,
                variable.element_name(element),
            )?);
        }
    }
    Ok(Report {
        n_chains,
        n_draws,
        quantities,
        sampler: sampler_diagnostics(&file),
    })
}

fn summarize_element(
    variable: &StoredVariable,
    element: usize,
    name: String,
) -> Result<QuantitySummary, OutputError> {
    let draws = variable.element_draws(element);
    let view = super::ChainDraws::new(&draws, variable.n_chains, variable.n_draws)
        .expect("element draws have chains × draws values");
    Ok(QuantitySummary::compute(name, view))
}

fn sampler_diagnostics(file: &DrawFile) -> Option<SamplerDiagnostics> {
    let stats = file.sample_stats.as_ref()?;
    let find = |name: &str| stats.iter().find(|v| v.name == name && v.dims.is_empty());
    let max_tree_depth = max_tree_depth(file);
    let diverging = find("diverging");
    let tree_depth = find("tree_depth");
    let transitions = diverging
        .or(tree_depth)
        .map(|v| v.values.len())
        .unwrap_or(0);
    Some(SamplerDiagnostics {
        divergences: diverging.map_or(0, |v| v.values.iter().filter(|&&d| d != 0.0).count()),
        max_tree_depth,
        tree_depth_saturated: tree_depth.map_or(0, |v| {
            v.values
                .iter()
                .filter(|&&d| d >= f64::from(max_tree_depth))
                .count()
        }),
        transitions,
    })
}

/// `max_depth` (or `max_tree_depth`) from the `settings` JSON root attribute.
fn max_tree_depth(file: &DrawFile) -> u32 {
    file.attributes
        .get("settings")
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|settings| {
            ["max_depth", "max_tree_depth"]
                .iter()
                .find_map(|key| settings.get(*key).and_then(|v| v.as_u64()))
        })
        .map_or(DEFAULT_MAX_TREE_DEPTH, |d| d as u32)
}
