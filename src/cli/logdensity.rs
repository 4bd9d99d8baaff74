//! `bat logdensity`: the log density and its gradient at one point, as
//! BridgeStan computes them for Stan: `{"lp", "gradient",
//! "unconstrained_names"}` on stdout.

use super::model::{self, Reported};
use std::path::Path;
use std::process::ExitCode;

pub struct Options<'a> {
    pub file: &'a Path,
    pub data: Option<&'a Path>,
    pub params: &'a Path,
    pub unconstrained: bool,
    pub jacobian: bool,
    pub color: bool,
}

pub fn run(opts: &Options) -> ExitCode {
    match evaluate(opts) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(Reported) => ExitCode::FAILURE,
    }
}

fn evaluate(opts: &Options) -> Result<serde_json::Value, Reported> {
    let compiled = model::compile(opts.file, opts.color)?;
    let grad = model::gradient(&compiled, opts.color)?;
    let data = model::data_path(opts.file, opts.data);
    let model = model::instantiate(&compiled, data.as_deref())?;
    let theta = if opts.unconstrained {
        read_unconstrained(opts.params, model.num_unconstrained())?
    } else {
        let values = model::read_json(opts.params)?;
        model.unconstrain(&values).map_err(|e| {
            eprintln!("error: `{}`: {e}", opts.params.display());
            Reported
        })?
    };
    let (lp, gradient) = model
        .log_density_gradient(&grad, &theta, opts.jacobian)
        .map_err(|e| {
            eprintln!("error: {}: {e}", compiled.file.name);
            Reported
        })?;
    Ok(serde_json::json!({
        "lp": number(lp),
        "gradient": gradient.iter().map(|&g| number(g)).collect::<Vec<_>>(),
        "unconstrained_names": model.unconstrained_names(),
    }))
}

/// JSON has no inf/NaN: write them as Stan JSON does, as strings.
fn number(x: f64) -> serde_json::Value {
    if x.is_finite() {
        serde_json::json!(x)
    } else if x.is_nan() {
        serde_json::json!("NaN")
    } else if x > 0.0 {
        serde_json::json!("inf")
    } else {
        serde_json::json!("-inf")
    }
}

fn read_unconstrained(path: &Path, expected: usize) -> Result<Vec<f64>, Reported> {
    let fail = |msg: String| {
        eprintln!("error: `{}`: {msg}", path.display());
        Reported
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("not valid JSON: {e}")))?;
    let items = value.as_array().ok_or_else(|| {
        fail("with --unconstrained, the file must hold a JSON array of numbers".into())
    })?;
    if items.len() != expected {
        return Err(fail(format!(
            "the model has {expected} unconstrained parameters, the array has {}",
            items.len()
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_f64()
                .ok_or_else(|| fail(format!("element {} is {x}, not a number", i + 1)))
        })
        .collect()
}
