//! Property test: random programs — straight-line arithmetic over reals
//! and ints, `?:`, random draws, and the same statements under per-lane
//! `if`/`while`/`for` with `break` — run by both executors give each lane
//! exactly the scalar CFG interpreter's draw for that lane's θ and random
//! stream.

use backend_cpu::exec::{BatchedModel, Batching, ExecConfig, MostWaiting};
use language::data::DataFile;
use proptest::prelude::*;
use runtime::{Model, Rng};
use std::sync::Arc;

const REALS: [&str; 3] = ["a", "b", "c"];

fn real_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(REALS.to_vec()).prop_map(str::to_string),
        Just("mu".to_string()),
        (-30i32..30).prop_map(|k| format!("{}", k as f64 / 10.0)),
        Just("normal_rng(0, 1)".to_string()),
        Just("k".to_string()),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("({x} + {y})")),
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("({x} - {y})")),
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("({x} * {y})")),
            inner.clone().prop_map(|x| format!("tanh({x})")),
            inner.clone().prop_map(|x| format!("log1p(abs({x}))")),
            (inner.clone(), inner.clone()).prop_map(|(x, y)| format!("fmax({x}, {y})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, x, y)| format!("({c} > 0 ? {x} : {y})")),
        ]
    })
}

fn statement() -> impl Strategy<Value = String> {
    let assign = (prop::sample::select(REALS.to_vec()), real_expr())
        .prop_map(|(v, e)| format!("{v} = {e};"));
    let simple = prop_oneof![
        4 => assign,
        1 => Just("k = k + poisson_rng(2);".to_string()),
        1 => Just("k = k % 7;".to_string()),
    ];
    let body = prop::collection::vec(simple.clone(), 1..4).prop_map(|s| s.join(" "));
    prop_oneof![
        3 => simple,
        1 => (real_expr(), body.clone(), body.clone())
            .prop_map(|(c, t, f)| format!("if ({c} > 0) {{ {t} }} else {{ {f} }}")),
        1 => (body.clone(), real_expr())
            .prop_map(|(b, c)| format!("while (n < 10) {{ n += 1; {b} if ({c} > 1) break; }} n = 0;")),
        1 => body.prop_map(|b| format!("for (i in 1:k) {{ {b} }}")),
    ]
}

fn program(stmts: &[String]) -> String {
    format!(
        "parameters {{ real mu; }} model {{ mu ~ normal(0, 1); }}
         generated quantities {{
           real a = mu; real b = normal_rng(0, 1); real c = 0.5; int k = poisson_rng(3); int n = 0;
           {}
         }}",
        stmts.join("\n")
    )
}

fn check(source: &str) -> Result<(), TestCaseError> {
    let (mir, diags) = language::compile_model(source, "random");
    let Some(mir) = mir else {
        return Err(TestCaseError::fail(format!("{diags:?}\n{source}")));
    };
    let cfg = language::batch::lower_generated_quantities(&mir).unwrap();
    let z = 6;
    let thetas: Vec<Vec<f64>> = (0..z).map(|l| vec![l as f64 * 0.7 - 1.9]).collect();
    let rngs: Vec<Rng> = (0..z).map(|l| Rng::new(99, l as u32, 0)).collect();
    for (batching, gather_below) in [(Batching::Local, 0.0), (Batching::ProgramCounter, 0.6)] {
        let model = Model::new(&mir, &DataFile::parse("{}").unwrap()).unwrap();
        let config = ExecConfig {
            batching,
            gather_below,
            choice: Arc::new(MostWaiting),
            ..ExecConfig::default()
        };
        let batched = BatchedModel::new(cfg.clone(), model, config).unwrap();
        let ours = batched.generated_quantities(&thetas, &rngs).unwrap();
        prop_assert!(ours.iter().all(|d| d.is_ok()), "{:?}\n{}", ours, source);
        for (l, got) in ours.iter().enumerate() {
            let truth = batched
                .model()
                .generated_quantities_cfg(&cfg, &thetas[l], rngs[l].clone());
            prop_assert_eq!(
                format!("{got:?}"),
                format!("{truth:?}"),
                "lane {} {:?}\n{}",
                l,
                batching,
                source
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_programs_match_the_interpreter_per_lane(
        stmts in prop::collection::vec(statement(), 1..8)
    ) {
        check(&program(&stmts))?;
    }
}
