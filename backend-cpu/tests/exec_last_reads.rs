//! The last read of a block-local variable moves its value
//! (`backend_cpu::exec::last_reads`): which reads move in the CFG and in
//! the PC IR, and that a function whose temporaries move gives every lane
//! exactly the scalar interpreter's value through both executors.

use backend_cpu::exec::last_reads::LastReads;
use backend_cpu::exec::{BatchedModel, Batching, ExecConfig};
use language::data::DataFile;
use language::mir::{Program, Stmt};
use language::value::Value;
use runtime::{Host, Model, Rng, RuntimeError};

const SOURCE: &str = "
  functions {
    real f(vector x, real a) {
      vector[3] w = x * 2;
      vector[3] u = w + a;
      vector[3] d = u * 2;
      real s = sum(d) + sum(d);
      vector[3] e = u * 3;
      real t = a > 0 ? sum(e) : 0.0;
      vector[3] g = u + 1;
      real h = sum(g);
      vector[3] q = u .* x;
      vector[3] r = q * 3;
      if (a > 1) {
        r = r + g;
      }
      return s + t + h + sum(r);
    }
  }
  parameters { real mu; }
  model { mu ~ normal(0, 1); }
";

fn compile() -> (Program, language::batch::cfg::Program) {
    let (mir, diags) = language::compile_model(SOURCE, "last_reads");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = language::batch::lower_generated_quantities(&mir).expect("lowers");
    (mir, cfg)
}

/// The names of the variables the statement printed as `text` moves
/// (the statement must exist, once).
fn moves_at<'a>(
    mir: &language::mir::Program,
    stmts: impl Iterator<Item = &'a Stmt>,
    reads: &LastReads,
    text: &str,
) -> Vec<String> {
    let found: Vec<&Stmt> = stmts
        .filter(|s| language::mir::print::print_stmt(mir, s).contains(text))
        .collect();
    assert_eq!(found.len(), 1, "one statement `{text}`");
    reads
        .at(found[0])
        .map(|vs| {
            vs.iter()
                .map(|v| mir.vars[v.0 as usize].name.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// What must (and must not) move, asked of both IRs' statements.
fn check(mir: &language::mir::Program, stmts: &[&Stmt], reads: &LastReads) {
    let at = |text: &str| moves_at(mir, stmts.iter().copied(), reads, text);
    // x is an argument (set by the caller): never moved.
    assert_eq!(at("w = multiply(x, 2)"), Vec::<String>::new());
    // The last read of w.
    assert_eq!(at("u = add(w, a)"), ["w"]);
    // d's last read reads it twice, e's is under `?:`: neither moves.
    assert_eq!(at("s = add(sum(d), sum(d))"), Vec::<String>::new());
    assert!(at("t = (greater(a, 0)").is_empty());
    // g is read in another block too (after the `if`'s branch): not
    // block-local.
    assert_eq!(at("h = sum(g)"), Vec::<String>::new());
    // u's plain last read, then q's.
    assert_eq!(at("q = elt_multiply(u, x)"), ["u"]);
    assert_eq!(at("r = multiply(q, 3)"), ["q"]);
    // r is read by a later block; this block reads g and r.
    assert_eq!(at("r = add(r, g)"), Vec::<String>::new());
}

#[test]
fn last_reads_of_block_local_variables_move() {
    let (_, cfg) = compile();
    let reads = LastReads::of_cfg(&cfg);
    let stmts: Vec<&Stmt> = cfg
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.ops)
        .collect();
    check(&cfg.mir, &stmts, &reads);
    let pc = language::batch::pc::build(&cfg).expect("PC IR");
    let reads = LastReads::of_pc(&pc);
    let stmts: Vec<&Stmt> = pc
        .blocks
        .iter()
        .flat_map(|b| &b.ops)
        .filter_map(|op| match op {
            language::batch::pc::Op::Stmt(s) => Some(s),
            _ => None,
        })
        .collect();
    check(&pc.mir, &stmts, &reads);
}

struct NoExternals;

impl Host for NoExternals {
    fn call_external(&mut self, name: &str, _: Vec<Value>) -> Result<Option<Value>, RuntimeError> {
        Err(RuntimeError::fatal(format!("no external `{name}`")))
    }
}

#[test]
fn moved_temporaries_give_the_interpreters_values() {
    let (mir, _) = compile();
    let args: Vec<Vec<Value>> = (0..37)
        .map(|l| {
            let l = l as f64;
            vec![
                Value::Vector(vec![l * 0.5 - 3.0, 1.0 / (l + 1.0), (l * 0.37).sin()]),
                Value::Real(l * 0.11 - 1.5),
            ]
        })
        .collect();
    let expected: Vec<Option<Value>> = args
        .iter()
        .map(|a| {
            runtime::run_function(&mir, "f", a.clone(), Rng::new(1, 0, 0), &mut NoExternals)
                .expect("the interpreter runs f")
        })
        .collect();
    for batching in [Batching::Local, Batching::ProgramCounter] {
        // Masked and gathered blocks (the `if` splits the lanes).
        for gather_below in [0.0, 1.1] {
            let (_, cfg) = compile();
            let model = Model::new(&mir, &DataFile::parse("{}").unwrap()).unwrap();
            let config = ExecConfig {
                batching,
                gather_below,
                ..ExecConfig::default()
            };
            let batched = BatchedModel::new(cfg, model, config).unwrap();
            let got = batched.run_function("f", &args, None).unwrap();
            for (l, (got, want)) in got.into_iter().zip(&expected).enumerate() {
                assert_eq!(
                    &got.unwrap(),
                    want,
                    "lane {l}, {batching:?}, gather below {gather_below}"
                );
            }
        }
    }
}
