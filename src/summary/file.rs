//! `bat summary FILE`: summaries of every posterior quantity in a draws file.

use super::{
    ChainDraws, Format, Options, QuantitySummary, Report, SamplerDiagnostics, Superchains,
    nested_r_hat, render, stuck,
};
use crate::output::{DrawReader, OutputError, StoredVariable, VariableInfo, stan_element_name};
use rayon::prelude::*;
use std::path::Path;

/// Stan's default maximum tree depth, used when the file's settings do not say.
const DEFAULT_MAX_TREE_DEPTH: u32 = 10;
/// Values read at once (256 MiB of f64): variables larger than this are summarized a
/// slab of rows at a time, so thousands of chains need not fit in memory together.
const VALUES_PER_READ: usize = 32 << 20;

/// Reads `path` and renders the summary of its posterior in `format`.
pub fn summarize_file(path: impl AsRef<Path>, format: Format) -> Result<String, OutputError> {
    summarize_file_with(path, format, Options::default())
}

/// [`summarize_file`] with `options` (superchains for nested R-hat).
pub fn summarize_file_with(
    path: impl AsRef<Path>,
    format: Format,
    options: Options,
) -> Result<String, OutputError> {
    let report = report_for_file_with(path, options)?;
    Ok(render(&report, format))
}

/// What `bat summary` does with a file of `bytes` (written to a temporary
/// file, read, removed): the summary table, or the error it reports. Every
/// damaged or truncated file must give an error, never a panic, a hang or
/// an allocation beyond what the file can hold; the draws-file fuzz target
/// and its regression tests call this.
pub fn summarize_bytes(bytes: &[u8]) -> Result<String, OutputError> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("bat-bytes-{}-{n}.h5", std::process::id()));
    let io = |source| OutputError::Io {
        path: path.clone(),
        source,
    };
    std::fs::write(&path, bytes).map_err(io)?;
    let summary = summarize_file(&path, Format::Table);
    let _ = std::fs::remove_file(&path);
    summary
}

/// The [`Report`] of a draws file: `lp__` first (when sample stats are present), then
/// every element of every posterior variable (Stan-style names, row-major order).
pub fn report_for_file(path: impl AsRef<Path>) -> Result<Report, OutputError> {
    report_for_file_with(path, Options::default())
}

/// [`report_for_file`] with `options`; asking for more superchains than the
/// summarized chains is an error.
pub fn report_for_file_with(
    path: impl AsRef<Path>,
    options: Options,
) -> Result<Report, OutputError> {
    report_reading_at_most(path.as_ref(), VALUES_PER_READ, options)
}

fn report_reading_at_most(
    path: &Path,
    values_per_read: usize,
    options: Options,
) -> Result<Report, OutputError> {
    let reader = DrawReader::open(path)?;
    let posterior = reader.variables("posterior")?;
    let no_draws = || OutputError::NoDraws {
        path: reader.path().to_path_buf(),
        group: "posterior".into(),
    };
    let first = posterior.first().ok_or_else(no_draws)?;
    let (n_chains, n_draws) = (first.n_chains, first.n_draws);
    if n_draws == 0 {
        // E.g. a run killed before its first block of draws was flushed.
        return Err(no_draws());
    }
    let stats = if reader.has_group("sample_stats") {
        Some(reader.variables("sample_stats")?)
    } else {
        None
    };
    let stat = |name: &str| -> Result<Option<StoredVariable>, OutputError> {
        let info = stats
            .iter()
            .flatten()
            .find(|v| v.name == name && v.dims.is_empty());
        info.map(|info| reader.read(info)).transpose()
    };

    let mut quantities = Vec::new();
    // lp__ only when it covers the same draws (a killed run may lag in sample_stats).
    let lp = stat("lp")?.filter(|lp| (lp.n_chains, lp.n_draws) == (n_chains, n_draws));
    let recorded = reader
        .draws_per_chain("posterior")
        .filter(|counts| counts.len() == n_chains);
    let window = Window::of(lp.as_ref(), recorded.as_deref(), n_chains, n_draws);
    if window.chains.is_empty() {
        return Err(no_draws());
    }
    let superchains = match options.superchains {
        None => None,
        Some(count) => Some(Superchains::of(count, window.chains.len()).ok_or_else(|| {
            OutputError::Superchains {
                path: reader.path().to_path_buf(),
                superchains: count,
                chains: window.chains.len(),
            }
        })?),
    };
    let mut stuck_chains = Vec::new();
    if let Some(lp) = &lp {
        quantities.push(summarize_element(
            lp,
            0,
            "lp__".into(),
            &window,
            false,
            superchains,
        ));
        let lp_draws = window.draws_of(lp, 0);
        let step_size = stat("step_size")?
            .filter(|s| (s.n_chains, s.n_draws) == (n_chains, n_draws))
            .map(|s| window.draws_of(&s, 0));
        let (chains, draws) = (window.chains.len(), window.draws);
        if let Some(lp_view) = ChainDraws::new(&lp_draws, chains, draws) {
            let step_view = step_size
                .as_deref()
                .and_then(|s| ChainDraws::new(s, chains, draws));
            stuck_chains = stuck::stuck_chains(lp_view, step_view, &window.chains);
        }
    }
    for info in &posterior {
        if (info.n_chains, info.n_draws) != (n_chains, n_draws) {
            return Err(OutputError::Layout {
                path: reader.path().to_path_buf(),
                message: format!(
                    "`{}` has {}×{} draws, other variables {n_chains}×{n_draws}",
                    info.name, info.n_chains, info.n_draws
                ),
            });
        }
        summarize_variable(
            &reader,
            info,
            values_per_read,
            &window,
            superchains,
            &mut quantities,
        )?;
    }

    let sampler = match stats {
        None => None,
        Some(_) => Some(sampler_diagnostics(
            stat("diverging")?.map(|v| window.of_stat(v, n_chains, n_draws)),
            stat("tree_depth")?.map(|v| window.of_stat(v, n_chains, n_draws)),
            max_tree_depth(&reader),
        )),
    };
    Ok(Report {
        n_chains: window.chains.len(),
        n_draws: window.draws,
        quantities,
        sampler,
        stopped_chains: window.stopped,
        superchains,
        stuck_chains,
    })
}

/// The draws a summary covers. A chain stopped by an error (a `reject` in
/// generated quantities stops it, as in Stan) keeps its draws and the
/// rest of its rows stay padding (NaN), which would make every statistic
/// NaN: the summary then covers every chain's first `draws` draws, where
/// `draws` is the shortest chain's count, and leaves out chains without
/// any. A chain's draws are the leading ones with a number for `lp`, and
/// at most as many as the file's `draws_per_chain` says (bat records each
/// chain's draws there, for runs killed, interrupted or stopped by a
/// failed write).
struct Window {
    chains: Vec<usize>,
    draws: usize,
    /// (chain, draws it has) of the chains that stopped early.
    stopped: Vec<(usize, usize)>,
}

impl Window {
    fn of(
        lp: Option<&StoredVariable>,
        recorded: Option<&[usize]>,
        n_chains: usize,
        n_draws: usize,
    ) -> Window {
        let kept = |chain: usize| {
            let with_lp = lp.map_or(n_draws, |lp| {
                let row = &lp.values[chain * n_draws..(chain + 1) * n_draws];
                row.iter().take_while(|x| !x.is_nan()).count()
            });
            recorded.map_or(with_lp, |counts| with_lp.min(counts[chain]))
        };
        let counts: Vec<usize> = (0..n_chains).map(kept).collect();
        let chains: Vec<usize> = (0..n_chains).filter(|&c| counts[c] > 0).collect();
        Window {
            draws: chains.iter().map(|&c| counts[c]).min().unwrap_or(0),
            stopped: (0..n_chains)
                .filter(|&c| counts[c] < n_draws)
                .map(|c| (c, counts[c]))
                .collect(),
            chains,
        }
    }

    /// A sample statistic's covered values (all of them when it does not
    /// cover the posterior's draws: a killed run's may lag).
    fn of_stat(&self, stat: StoredVariable, n_chains: usize, n_draws: usize) -> Vec<f64> {
        if !self.stopped.is_empty() && (stat.n_chains, stat.n_draws) == (n_chains, n_draws) {
            self.select(&stat.values, n_draws)
        } else {
            stat.values
        }
    }

    /// The covered draws of element `element` of `variable`.
    fn draws_of(&self, variable: &StoredVariable, element: usize) -> Vec<f64> {
        let draws = variable.element_draws(element);
        if self.stopped.is_empty() {
            draws
        } else {
            self.select(&draws, variable.n_draws)
        }
    }

    /// The covered values of one element's chain-major `n_chains ×
    /// n_draws` draws.
    fn select(&self, values: &[f64], n_draws: usize) -> Vec<f64> {
        self.chains
            .iter()
            .flat_map(|&c| &values[c * n_draws..c * n_draws + self.draws])
            .copied()
            .collect()
    }
}

/// Appends the summary of every element of `info`, reading slabs of rows of at most
/// `values_per_read` values (at least one row).
fn summarize_variable(
    reader: &DrawReader,
    info: &VariableInfo,
    values_per_read: usize,
    window: &Window,
    superchains: Option<Superchains>,
    out: &mut Vec<QuantitySummary>,
) -> Result<(), OutputError> {
    let per_draw = info.elements_per_draw();
    if per_draw == 0 {
        return Ok(());
    }
    let rows = info.dims.first().copied().unwrap_or(1);
    let row_size = per_draw / rows;
    let values_per_row = (info.n_chains * info.n_draws * row_size).max(1);
    let rows_per_read = (values_per_read / values_per_row).clamp(1, rows);
    let mut start = 0;
    while start < rows {
        let end = (start + rows_per_read).min(rows);
        let slab = reader.read_rows(info, start..end)?;
        // The slab's elements on all cores, each on one thread (in order:
        // `collect` keeps it).
        let elements = slab.elements_per_draw();
        let summaries: Vec<QuantitySummary> = (0..elements)
            .into_par_iter()
            .map(|element| {
                let name = stan_element_name(&info.name, &info.dims, start * row_size + element);
                summarize_element(&slab, element, name, window, elements > 1, superchains)
            })
            .collect();
        out.extend(summaries);
        start = end;
    }
    Ok(())
}

/// The summary of element `element` of `variable`, on the calling thread
/// only when `one_thread` (its caller runs several at once).
fn summarize_element(
    variable: &StoredVariable,
    element: usize,
    name: String,
    window: &Window,
    one_thread: bool,
    superchains: Option<Superchains>,
) -> QuantitySummary {
    let draws = window.draws_of(variable, element);
    let view = ChainDraws::new(&draws, window.chains.len(), window.draws)
        .expect("element draws have chains × draws values");
    let mut summary = if one_thread {
        QuantitySummary::compute_on_one_thread(name, view)
    } else {
        QuantitySummary::compute(name, view)
    };
    summary.nested_r_hat = superchains.map(|grouping| nested_r_hat(view, grouping));
    summary
}

fn sampler_diagnostics(
    diverging: Option<Vec<f64>>,
    tree_depth: Option<Vec<f64>>,
    max_tree_depth: u32,
) -> SamplerDiagnostics {
    let transitions = diverging
        .as_ref()
        .or(tree_depth.as_ref())
        .map_or(0, Vec::len);
    SamplerDiagnostics {
        divergences: diverging.map_or(0, |v| v.iter().filter(|&&d| d != 0.0).count()),
        max_tree_depth,
        tree_depth_saturated: tree_depth.map_or(0, |v| {
            v.iter()
                .filter(|&&d| d >= f64::from(max_tree_depth))
                .count()
        }),
        transitions,
    }
}

/// `max_depth` (or `max_tree_depth`) from the `settings` JSON root attribute.
fn max_tree_depth(reader: &DrawReader) -> u32 {
    reader
        .attributes()
        .get("settings")
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|settings| {
            ["max_depth", "max_tree_depth"]
                .iter()
                .find_map(|key| settings.get(*key).and_then(|v| v.as_u64()))
        })
        .map_or(DEFAULT_MAX_TREE_DEPTH, |d| d as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Column, DrawWriter, GroupKind, RunMetadata, VarSpec};

    #[test]
    fn reading_in_slabs_gives_the_same_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slabs.h5");
        let specs = [VarSpec::real("m", &[3, 4]), VarSpec::real("s", &[])];
        let mut writer = DrawWriter::create(&path, &RunMetadata::default(), &specs, 2, 30).unwrap();
        let m: Vec<f64> = (0..2 * 30 * 12)
            .map(|i| ((i * 7919) % 1013) as f64 / 17.0)
            .collect();
        let s: Vec<f64> = (0..60).map(|i| (i % 7) as f64).collect();
        writer
            .write_block(
                GroupKind::Posterior,
                0..2,
                0..30,
                &[Column::F64(&m), Column::F64(&s)],
            )
            .unwrap();
        writer.finish().unwrap();
        let whole = report_for_file(&path).unwrap();
        // One row (2 chains × 30 draws × 4 values) per read.
        let slabs = report_reading_at_most(&path, 1, Options::default()).unwrap();
        assert_eq!(whole.quantities, slabs.quantities);
        let names: Vec<&str> = slabs.quantities.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names[0], "m[1,1]");
        assert_eq!(names[5], "m[2,2]");
        assert_eq!(names[11], "m[3,4]");
        assert_eq!(names[12], "s");
        // m[2,2] is flat element 5 of each draw.
        let expected: Vec<f64> = (0..60).map(|d| m[d * 12 + 5]).collect();
        let direct = QuantitySummary::compute("m[2,2]", ChainDraws::new(&expected, 2, 30).unwrap());
        assert_eq!(slabs.quantities[5], direct);
    }
}
