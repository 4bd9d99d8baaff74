//! Property test: random straight-line Stan models (expressions over
//! per-lane parameters, shared data and locals; indexed assignment;
//! per-lane `if` and `?:`; `~` statements; `reject`) compiled and
//! differentiated by bat, run as a batch of lanes with different θ, must
//! give each lane exactly the interpreter's log density and gradient, or
//! its error.

use backend_cpu::structured::{self, Branching, Options};
use language::data::DataFile;
use proptest::prelude::*;
use runtime::{Model, Rng};

/// A tiny deterministic generator of program text.
struct Gen {
    rng: Rng,
    reals: Vec<String>,
    vectors: Vec<String>,
    next: usize,
}

impl Gen {
    fn pick(&mut self, n: usize) -> usize {
        (self.rng.next_u32() as usize) % n
    }

    fn index(&mut self) -> String {
        match self.pick(3) {
            0 => format!("{}", 1 + self.pick(4)),
            1 => format!("idx[{}]", 1 + self.pick(4)),
            _ => "K".into(),
        }
    }

    fn real(&mut self, depth: u32) -> String {
        let leaf = depth == 0 || self.pick(3) == 0;
        if leaf {
            return match self.pick(4) {
                0 => format!("{:.2}", self.rng.uniform() * 4.0 - 2.0),
                1 => {
                    let i = self.index();
                    let v = self.vector_leaf();
                    format!("{v}[{i}]")
                }
                _ => {
                    let k = self.pick(self.reals.len());
                    self.reals[k].clone()
                }
            };
        }
        let d = depth - 1;
        match self.pick(9) {
            0 => format!("({} + {})", self.real(d), self.real(d)),
            1 => format!("({} - {})", self.real(d), self.real(d)),
            2 => format!("({} * {})", self.real(d), self.real(d)),
            3 => format!("({} / {})", self.real(d), self.real(d)),
            4 => {
                let f = [
                    "exp",
                    "log1p_exp",
                    "square",
                    "inv_logit",
                    "log1p",
                    "sqrt",
                    "tanh",
                ][self.pick(7)];
                format!("{f}({})", self.real(d))
            }
            5 => format!("sum({})", self.vector(d)),
            6 => format!("dot_product({}, {})", self.vector(d), self.vector(d)),
            7 => format!(
                "({} > {} ? {} : {})",
                self.real(d),
                self.real(d),
                self.real(d),
                self.real(d)
            ),
            _ => format!("normal_lpdf({} | {}, b)", self.real(d), self.real(d)),
        }
    }

    fn vector_leaf(&mut self) -> String {
        let k = self.pick(self.vectors.len());
        self.vectors[k].clone()
    }

    fn vector(&mut self, depth: u32) -> String {
        if depth == 0 || self.pick(3) == 0 {
            return self.vector_leaf();
        }
        let d = depth - 1;
        match self.pick(6) {
            0 => format!("({} + {})", self.vector(d), self.vector(d)),
            1 => format!("({} * {})", self.real(d), self.vector(d)),
            2 => format!("exp({})", self.vector(d)),
            3 => format!("(X * {})", self.vector(d)),
            4 => format!("({} .* {})", self.vector(d), self.vector(d)),
            _ => format!("({} - {})", self.vector(d), self.real(d)),
        }
    }

    fn statement(&mut self) -> String {
        self.next += 1;
        let n = self.next;
        match self.pick(8) {
            0 => {
                let s = format!("real t{n} = {};", self.real(3));
                self.reals.push(format!("t{n}"));
                s
            }
            1 => {
                let s = format!("vector[4] w{n} = {};", self.vector(2));
                self.vectors.push(format!("w{n}"));
                s
            }
            2 if self.vectors.len() > 2 => {
                // Only locals (the last entries) can be assigned.
                let k = 2 + self.pick(self.vectors.len() - 2);
                let w = self.vectors[k].clone();
                format!("{w}[{}] = {};", self.index(), self.real(2))
            }
            3 => format!("target += {};", self.real(3)),
            4 => format!("v ~ normal({}, b);", self.real(2)),
            5 => format!(
                "if ({} > {}) target += {}; else target += {};",
                self.real(2),
                self.real(1),
                self.real(2),
                self.real(2)
            ),
            6 => format!("if ({} > 1.5) reject(\"too big: \", a);", self.real(2)),
            _ => format!("target += sum({});", self.vector(2)),
        }
    }
}

fn program(seed: u64, statements: usize) -> String {
    let mut g = Gen {
        rng: Rng::new(seed, 0, 0),
        reals: vec!["a".into(), "b".into(), "s".into()],
        vectors: vec!["v".into(), "xd".into()],
        next: 0,
    };
    let body: Vec<String> = (0..statements)
        .map(|_| format!("  {}", g.statement()))
        .collect();
    format!(
        "data {{\n  int K;\n  real s;\n  vector[4] xd;\n  array[4] int idx;\n  matrix[4, 4] X;\n}}\n\
         parameters {{\n  real a;\n  real<lower=0> b;\n  vector[4] v;\n}}\n\
         model {{\n{}\n}}\n",
        body.join("\n")
    )
}

const DATA: &str = r#"{"K": 3, "s": 0.7, "xd": [0.5, -1.0, 2.0, 0.25], "idx": [2, 4, 1, 3],
  "X": [[1.0, 0.5, -0.3, 0.2], [0.1, 1.0, 0.4, -0.6], [-0.2, 0.3, 1.0, 0.8], [0.7, -0.1, 0.05, 1.0]]}"#;

fn check(seed: u64, statements: usize) -> Result<(), String> {
    let source = program(seed, statements);
    let compiled = match language::compile_model(&source, "random") {
        (Some(p), _) => p,
        (None, ds) => {
            return Err(format!(
                "generated program does not compile: {}\n{source}",
                ds[0].message
            ));
        }
    };
    let data = DataFile::parse(DATA).unwrap();
    let model = Model::new(&compiled, &data).map_err(|e| e.to_string())?;
    let g = language::ad::gradient(&compiled).map_err(|ds| ds[0].message.clone())?;
    let z = 7;
    let thetas: Vec<Vec<f64>> = (0..z)
        .map(|l| {
            let mut rng = Rng::new(seed ^ 0x5eed, l as u32, 1);
            (0..6).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect();
    for branching in [Branching::Mask, Branching::Gather] {
        let options = Options {
            branching,
            gemm: false,
        };
        let ours = structured::log_density_gradient(&model, &g, &thetas, true, options)
            .map_err(|e| e.to_string())?;
        for (l, (ours, th)) in ours.iter().zip(&thetas).enumerate() {
            let truth = model.log_density_gradient(&g, th, true);
            let equal = match (ours, &truth) {
                (Ok((lp, gr)), Ok((lp0, gr0))) => {
                    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
                    same(*lp, *lp0) && gr.iter().zip(gr0).all(|(a, b)| same(*a, *b))
                }
                (Err(a), Err(b)) => a.kind == b.kind && a.message == b.message && a.span == b.span,
                _ => false,
            };
            if !equal {
                return Err(format!(
                    "lane {l} ({branching:?}): batched {ours:?}, interpreter {truth:?}\n{source}"
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_programs_match_the_interpreter(seed in any::<u64>(), statements in 1usize..8) {
        if let Err(e) = check(seed, statements) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// Per-lane failures: an index out of range on the lanes that compute a
/// bad index, a domain error in a density, a `reject` — each marks only
/// its lanes; lanes that do not take a branch never fail in it.
#[test]
fn errors_mark_only_their_lanes() {
    let source = r#"
data { int K; vector[4] xd; }
parameters { real a; real<lower=0> b; vector[4] v; }
model {
  int k = a > 0.5 ? 7 : 2;
  target += v[k];
  if (a < -1.0) {
    target += v[K + 3];
  }
  if (v[1] > 1.5) reject("v[1] too big: ", v[1]);
  target += normal_lpdf(xd | a, v[2] - 1.0);
  v ~ normal(a, b);
}
"#;
    let program = language::compile_model(source, "errors")
        .0
        .expect("compiles");
    let data = DataFile::parse(r#"{"K": 3, "xd": [0.5, -1.0, 2.0, 0.25]}"#).unwrap();
    let model = Model::new(&program, &data).unwrap();
    let g = language::ad::gradient(&program).unwrap();
    let z = 64;
    let thetas: Vec<Vec<f64>> = (0..z)
        .map(|l| {
            let mut rng = Rng::new(5, l as u32, 0);
            (0..6).map(|_| 4.0 * rng.uniform() - 2.0).collect()
        })
        .collect();
    let (mut ok, mut failed) = (0, 0);
    let mut kinds = Vec::new();
    for branching in [Branching::Mask, Branching::Gather] {
        let options = Options {
            branching,
            gemm: true,
        };
        let ours = structured::log_density_gradient(&model, &g, &thetas, true, options).unwrap();
        for (l, (ours, th)) in ours.iter().zip(&thetas).enumerate() {
            let truth = model.log_density_gradient(&g, th, true);
            match (ours, &truth) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "lane {l}");
                    ok += 1;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a, b, "lane {l}");
                    failed += 1;
                    kinds.push(a.kind);
                }
                _ => panic!("lane {l} {branching:?}: {ours:?} vs {truth:?}"),
            }
        }
    }
    assert!(ok > 0 && failed > 0, "{ok} ok, {failed} failed");
    use runtime::ErrorKind;
    assert!(kinds.contains(&ErrorKind::IndexOutOfRange), "{kinds:?}");
    assert!(kinds.contains(&ErrorKind::Rejection), "{kinds:?}");
}
