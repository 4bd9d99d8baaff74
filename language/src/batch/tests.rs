//! CFG lowering: structural invariants (the CFG's agreement with the
//! structured interpreter is checked in tests/cfg_lowering.rs).

use super::cfg::{Program, Terminator};

fn lowered(source: &str) -> (crate::mir::Program, crate::mir::GradProgram, Program) {
    let (mir, diags) = crate::compile_model(source, "t");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let g = crate::ad::gradient(&mir).expect("gradient");
    let cfg = super::lower_gradient(&g).expect("cfg");
    cfg.validate().unwrap();
    (mir, g, cfg)
}

#[test]
fn loops_and_branches_become_blocks() {
    let (_, _, cfg) = lowered(
        "data { int N; vector[N] y; } parameters { real mu; } model {
           for (n in 1:N) { if (y[n] > 0) y[n] ~ normal(mu, 1); else target += -mu^2; }
           { real s = 0; while (s < 3) { s += 1; } }
         }",
    );
    let entry = cfg.function(cfg.entry(super::GRADIENT_ENTRY).unwrap());
    assert!(entry.blocks.len() > 6, "{}", super::print_cfg(&cfg));
    let branches = entry
        .blocks
        .iter()
        .filter(|b| matches!(b.term, Terminator::Branch { .. }))
        .count();
    assert!(branches >= 3, "{}", super::print_cfg(&cfg));
}

#[test]
fn calls_are_hoisted_in_evaluation_order() {
    // The draw before the call must stay before it.
    let (mir, diags) = crate::compile_model(
        "functions { real f_rng(real x) { return normal_rng(x, 1); } }
         generated quantities { real z = normal_rng(0, 1) + f_rng(2) * f_rng(3); }",
        "t",
    );
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = super::lower(&mir, &[("gq", &mir.generated_quantities)], 0).unwrap();
    cfg.validate().unwrap();
    let text = super::print_cfg(&cfg);
    let draw = text.find("normal_rng(0, 1)").expect(&text);
    let call = text.find("call ").expect(&text);
    assert!(draw < call, "{text}");
    assert_eq!(text.matches("call ").count(), 2, "{text}");
}

#[test]
fn short_circuit_calls_stay_behind_branches() {
    let (mir, diags) = crate::compile_model(
        "functions { int g(int x) { return x > 1; } }
         transformed data { int a = 0; int b = a && g(a); }",
        "t",
    );
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = super::lower(&mir, &[("td", &mir.transformed_data)], 0).unwrap();
    cfg.validate().unwrap();
    let entry = cfg.function(cfg.entry("td").unwrap());
    // The call's block is reached only through a branch.
    let call_block = entry
        .blocks
        .iter()
        .position(|b| matches!(b.term, Terminator::Call { .. }))
        .expect("a call");
    assert!(
        !matches!(entry.blocks[0].term, Terminator::Call { .. }) && call_block != 0,
        "{}",
        super::print_cfg(&cfg)
    );
}
