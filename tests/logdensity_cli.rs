//! `bat logdensity`: the log density and gradient at one point against
//! their closed forms, and a parameter file that leaves a parameter out.

use std::path::Path;
use std::process::{Command, Output};

fn logdensity(dir: &Path, params: &str, extra: &[&str]) -> Output {
    let model = dir.join("m.bat");
    std::fs::write(
        &model,
        "parameters { real mu; real<lower=0> s; }\nmodel { mu ~ normal(0, 1); s ~ exponential(1); }\n",
    )
    .unwrap();
    let params_path = dir.join("params.json");
    std::fs::write(&params_path, params).unwrap();
    Command::new(env!("CARGO_BIN_EXE_bat"))
        .arg("logdensity")
        .arg(&model)
        .arg("--params")
        .arg(&params_path)
        .args(extra)
        .output()
        .expect("bat runs")
}

/// `~` drops constants: lp = −μ²/2 − s, plus log s for s = exp(u) (the
/// Jacobian); d/dμ = −μ, d/du = −s + 1.
#[test]
fn value_and_gradient_are_the_closed_forms() {
    let dir = tempfile::tempdir().unwrap();
    let (mu, s) = (0.5f64, 2.0f64);
    for (extra, jacobian) in [(&[][..], s.ln()), (&["--no-jacobian"][..], 0.0)] {
        let out = logdensity(dir.path(), r#"{"mu": 0.5, "s": 2.0}"#, extra);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let lp = v["lp"].as_f64().unwrap();
        assert!((lp - (-mu * mu / 2.0 - s + jacobian)).abs() < 1e-12, "{v}");
        let g: Vec<f64> = v["gradient"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let dj = if jacobian == 0.0 { 0.0 } else { 1.0 };
        assert!(
            (g[0] + mu).abs() < 1e-12 && (g[1] - (-s + dj)).abs() < 1e-12,
            "{v}"
        );
    }
}

#[test]
fn a_missing_parameter_names_the_file_and_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let out = logdensity(dir.path(), r#"{"mu": 0.5}"#, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("params.json") && err.contains("parameter `s` has no value"),
        "{err}"
    );
}
