//! What the command-line tests share: files for a run, output as text,
//! the small model they sample and the ArviZ venv.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `bat ARGS`, run to its end.
pub fn bat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bat"))
        .args(args)
        .output()
        .expect("run bat")
}

/// A normal model with a generated quantity, and its data.
pub const NORMAL_MEAN: &str = r#"
data { int<lower=0> N; vector[N] y; }
parameters { real mu; real<lower=0> sigma; }
model { mu ~ normal(0, 10); sigma ~ lognormal(0, 1); y ~ normal(mu, sigma); }
generated quantities { real y_new = normal_rng(mu, sigma); }
"#;
pub const NORMAL_DATA: &str = r#"{"N": 5, "y": [1.2, 0.4, 2.2, 1.0, 1.7]}"#;

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `content` to `dir/name`; its path.
pub fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The Python of the ArviZ venv `scripts/setup.sh` makes (`$BAT_VENV`,
/// default `~/.cache/bat-venv`); a test needing it fails without it.
pub fn venv_python() -> PathBuf {
    let venv = std::env::var_os("BAT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME is set");
            Path::new(&home).join(".cache/bat-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "Python venv with ArviZ not found at {}: run scripts/setup.sh \
         (or scripts/setup.d/30-python-venv.sh) first",
        venv.display()
    );
    python
}
