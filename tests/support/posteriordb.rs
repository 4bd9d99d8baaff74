//! posteriordb's reference posteriors and the check bat's draws must pass
//! against them: every reference parameter's mean within 5 Monte-Carlo
//! standard errors (bat's MCSE combined with the reference's,
//! sd/sqrt(n_draws) of its independent draws) and its sd within ±20%.
//! Shared by `tests/run_posteriordb.rs` and `benches/stan.rs`.

use serde_json::Value;
use std::path::Path;

/// A reference parameter: posteriordb's mean, sd and number of draws.
pub struct Reference {
    pub name: String,
    pub mean: f64,
    pub sd: f64,
    pub n: f64,
}

/// The reference parameters of the posterior in `dir` (its
/// `reference.json`); none where posteriordb has no reference draws
/// (mcycle_gp: `params` is empty).
pub fn references(dir: &Path) -> Result<Vec<Reference>, String> {
    let path = dir.join("reference.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let get = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok(json["params"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, stats)| Reference {
            name: name.clone(),
            mean: get(stats, "mean"),
            sd: get(stats, "sd"),
            n: get(stats, "n_draws"),
        })
        .collect())
}

/// One reference parameter compared with bat's summary of it.
pub struct Row {
    pub name: String,
    pub reference_mean: f64,
    pub reference_sd: f64,
    pub mean: f64,
    pub sd: f64,
    pub z: f64,
    pub sd_ratio: f64,
}

impl Row {
    pub fn passes(&self) -> bool {
        self.z.abs() <= 5.0 && (0.8..=1.2).contains(&self.sd_ratio)
    }
}

/// A row for every reference parameter from `bat summary --format json`'s
/// output; an error names a parameter the summary lacks.
pub fn compare(refs: &[Reference], summary: &Value) -> Result<Vec<Row>, String> {
    let quantities = summary["quantities"]
        .as_array()
        .ok_or("no quantities in bat's summary")?;
    let get = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    refs.iter()
        .map(|r| {
            let q = quantities
                .iter()
                .find(|q| q["name"] == r.name.as_str())
                .ok_or_else(|| format!("`{}` is not in bat's output", r.name))?;
            let (mean, sd, mcse) = (get(q, "mean"), get(q, "sd"), get(q, "mcse"));
            let error = (mcse * mcse + r.sd * r.sd / r.n).sqrt();
            Ok(Row {
                name: r.name.clone(),
                reference_mean: r.mean,
                reference_sd: r.sd,
                mean,
                sd,
                z: (mean - r.mean) / error,
                sd_ratio: sd / r.sd,
            })
        })
        .collect()
}
