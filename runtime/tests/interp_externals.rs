//! External functions: body-less declarations compiled by
//! `compile_with_externals`, called through `interp::Host`, and the
//! `interp::run_function` entry point the sampler uses.

use language::value::Value;
use runtime::{Host, Rng, RuntimeError, run_function};

const PROGRAM: &str = r#"
functions {
  tuple(real, vector) square_norm(vector x);
  void record(int i, real v);
  real sum_recorded_rng(vector x, int n) {
    real total = 0;
    for (i in 1:n) {
      tuple(real, vector[rows(x)]) r = square_norm(x * i);
      record(i, r.1);
      total += r.1 + uniform_rng(0, 1) * 0;
    }
    return total;
  }
}
"#;

/// A host computing |x|² and its gradient 2x, and recording the calls.
#[derive(Default)]
struct Recorder {
    recorded: Vec<(i64, f64)>,
}

impl Host for Recorder {
    fn call_external(
        &mut self,
        name: &str,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        match (name, args.as_slice()) {
            ("square_norm", [Value::Vector(x)]) => {
                let norm: f64 = x.iter().map(|v| v * v).sum();
                let grad = x.iter().map(|v| 2.0 * v).collect();
                Ok(Some(Value::Tuple(vec![
                    Value::Real(norm),
                    Value::Vector(grad),
                ])))
            }
            ("record", [Value::Int(i), Value::Real(v)]) => {
                self.recorded.push((*i, *v));
                Ok(None)
            }
            _ => Err(RuntimeError::fatal(format!("unexpected call {name}"))),
        }
    }
}

#[test]
fn externals_are_called_through_the_host() {
    let (program, diagnostics) = language::compile_with_externals(PROGRAM, "externals");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let externals: Vec<&str> = program
        .functions
        .iter()
        .filter(|f| f.external)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(externals, ["square_norm", "record"]);
    let mut host = Recorder::default();
    let value = run_function(
        &program,
        "sum_recorded_rng",
        vec![Value::Vector(vec![1.0, 2.0]), Value::Int(3)],
        Rng::new(1, 0, 0),
        &mut host,
    )
    .unwrap();
    // |i·(1,2)|² = 5 i² for i = 1, 2, 3.
    assert_eq!(host.recorded, [(1, 5.0), (2, 20.0), (3, 45.0)]);
    assert_eq!(value, Some(Value::Real(70.0)));
}

#[test]
fn models_still_reject_undefined_functions() {
    let (program, diagnostics) = language::compile_model(PROGRAM, "externals");
    assert!(program.is_none());
    assert!(
        diagnostics.iter().any(|d| d
            .message
            .contains("declared without specifying a definition")),
        "{diagnostics:?}"
    );
}

#[test]
fn host_errors_stop_the_program() {
    struct Failing;
    impl Host for Failing {
        fn call_external(&mut self, _: &str, _: Vec<Value>) -> Result<Option<Value>, RuntimeError> {
            Err(RuntimeError::fatal("host refused"))
        }
    }
    let (program, _) = language::compile_with_externals(PROGRAM, "externals");
    let error = run_function(
        &program.unwrap(),
        "sum_recorded_rng",
        vec![Value::Vector(vec![1.0]), Value::Int(1)],
        Rng::new(1, 0, 0),
        &mut Failing,
    )
    .unwrap_err();
    assert!(error.message.contains("host refused"), "{error}");
}
