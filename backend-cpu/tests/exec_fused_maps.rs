//! `inv_logit(-x)` and `log_inv_logit(-x)` run as one pass over `x`
//! (`eval::kernels::map_negated`) when `x` is dense, and as a negation
//! then the map otherwise. Every form — a dense temporary (rewritten in
//! place), a dense variable (copied), a per-lane scalar, shared data (the
//! fallback) — must give each lane exactly the interpreter's log density
//! and gradient, through both executors.

mod common;

use common::{Compiled, assert_lanes_succeed_as_the_interpreter, compile, thetas};

const SOURCE: &str = r#"
data {
  int N;
  vector[N] xd;
  array[N] int k;
}
parameters {
  real a;
  vector[N] v;
}
model {
  vector[N] w = v .* xd;
  target += sum(inv_logit(-w));
  target += sum(log_inv_logit(-w));
  target += sum(inv_logit(-(v + a)));
  target += sum(log_inv_logit(-(xd * a)));
  target += inv_logit(-a) + log_inv_logit(-a);
  target += sum(inv_logit(-xd)) * a;
  target += sum(log_inv_logit(-to_vector(k))) * a;
  // Shared per iteration (not hoisted): the negate-then-map fallback.
  for (i in 1:N) {
    target += (inv_logit(-xd[i]) + log_inv_logit(-k[i])) * a;
  }
  v ~ normal(0, 2);
}
"#;

const DATA: &str = r#"{"N": 5, "xd": [0.5, -1.0, 2.0, 0.25, -40.0], "k": [1, 0, -3, 2, 800]}"#;

/// Each of `z` lanes (random points from `seed`, wide enough to reach
/// both tails of the logistic) gets exactly the interpreter's log density
/// and gradient through both executors.
fn assert_lanes_equal(c: &Compiled, z: usize, seed: u64) {
    assert_lanes_succeed_as_the_interpreter(c, &thetas(z, seed, 30.0), "fused maps");
}

#[test]
fn negated_logistic_maps_match_the_interpreter_lane_by_lane() {
    assert_lanes_equal(&compile(SOURCE, "fused", DATA), 9, 4242);
}

/// `log_inv_logit(x)` of a variable whose `inv_logit(-x)` comes later
/// (`bernoulli_logit`'s log mass and its derivative; a user's own pair)
/// computes both in one pass and keeps the second
/// (`eval::logistic_pair`). Each lane must still get exactly the
/// interpreter's log density and gradient — also where the variable
/// changes between the two, so the kept value is stale and must not be
/// used.
const PAIRED_SOURCE: &str = r#"
data {
  int N;
  vector[N] xd;
  array[N] int y;
}
parameters {
  real a;
  vector[N] v;
}
model {
  y ~ bernoulli_logit(a + v .* xd);
  vector[N] w = v .* xd;
  target += sum(log_inv_logit(w));
  target += 0.5 * sum(inv_logit(-w));
  vector[N] s = v + a;
  target += sum(log_inv_logit(s));
  s = s * 1.5;
  // `s` changed since its log_inv_logit: its pair is stale here.
  target += sum(inv_logit(-s));
  v ~ normal(0, 2);
}
"#;

const PAIRED_DATA: &str = r#"{"N": 5, "xd": [0.5, -1.0, 2.0, 0.25, -40.0], "y": [1, 0, 0, 1, 1]}"#;

#[test]
fn paired_logistic_maps_match_the_interpreter_lane_by_lane() {
    let c = compile(PAIRED_SOURCE, "fused", PAIRED_DATA);
    // The program has pairs to fuse (else this test would test nothing).
    let stmts: Vec<_> = c
        .cfg
        .functions
        .iter()
        .flat_map(|f| f.blocks.iter().flat_map(|b| &b.ops))
        .collect();
    let paired = backend_cpu::eval::logistic_pair::paired_vars(stmts);
    // `bernoulli_logit`'s (2y − 1)η and `s` (whose derivative reads it
    // popped back from the AD stack: equal values in a new slot, so
    // computed afresh); `w`'s derivative is the user's own `inv_logit(-w)`
    // (the simplifier shares it), no pair.
    let names: Vec<&str> = paired
        .iter()
        .map(|p| c.cfg.mir.vars[p.var.0 as usize].name.as_str())
        .collect();
    assert!(
        names.len() == 2 && names[0] == "s" && names[1].starts_with("t__"),
        "paired variables: {names:?}"
    );
    // `bernoulli_logit`'s derivative is multiplied by the signs 2y − 1 (at
    // 64 lanes the pair keeps that product); `s`'s is not.
    let factors: Vec<bool> = paired.iter().map(|p| p.factor.is_some()).collect();
    assert_eq!(factors, [false, true], "factors of {names:?}");
    for z in [1, 9, 64] {
        assert_lanes_equal(&c, z, 77);
    }
}
