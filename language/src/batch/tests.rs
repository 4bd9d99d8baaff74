//! CFG lowering: structural invariants and agreement with the structured
//! interpreter (see also language/tests/cfg_lowering.rs over the corpus).

use super::cfg::{Program, Terminator};

fn lowered(source: &str) -> (crate::mir::Program, crate::ad::GradProgram, Program) {
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

/// Recursion, mutual recursion, `while` with `break`/`continue`, early
/// `return` and calls inside conditions: the CFG run gives the structured
/// interpreter's draw.
#[test]
fn functions_and_control_flow_match_the_structured_interpreter() {
    let source = "
      functions {
        int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }
        int is_even(int n);
        int is_odd(int n) { if (n == 0) return 0; return is_even(n - 1); }
        int is_even(int n) { if (n == 0) return 1; return is_odd(n - 1); }
        real walk_rng(real x) {
          real s = x; int k = 0;
          while (1) {
            k += 1;
            if (k > 50) break;
            if (k % 3 == 0) continue;
            s += normal_rng(0, 1);
            if (s > 3) return s;
          }
          return -s;
        }
      }
      parameters { real mu; }
      model { mu ~ normal(0, 1); }
      generated quantities {
        int f = fib(12);
        int e = is_even(7) || is_odd(fib(5));
        real w = walk_rng(mu) + (e ? walk_rng(1) : 0);
        array[4] real ws;
        for (i in 1:4) ws[i] = fib(i) > 1 ? walk_rng(i) : mu;
      }";
    let (mir, diags) = crate::compile_model(source, "t");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = super::lower_generated_quantities(&mir).unwrap();
    cfg.validate().unwrap();
    let data = crate::data::DataFile::parse("{}").unwrap();
    let model = crate::interp::Model::new(&mir, &data).unwrap();
    for chain in 0..5 {
        let theta = [chain as f64 * 0.7 - 1.0];
        let rng = || crate::interp::Rng::new(42, chain, 3);
        let a = model.generated_quantities(&theta, rng()).unwrap();
        let b = model.generated_quantities_cfg(&cfg, &theta, rng()).unwrap();
        assert_eq!(a.values, b.values);
    }
}
