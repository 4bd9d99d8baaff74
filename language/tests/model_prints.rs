//! `mir::prints::model_print`: the first `print` the model block runs,
//! directly, nested in control flow, or in a user function it calls at
//! any depth — and none for prints `bat run` shows (transformed
//! parameters, generated quantities, functions only they call).

use language::mir::prints::{PRINT_NOT_SHOWN, model_print, model_print_warning};

/// The 1-based lines of the print and of the model block's call, if any.
fn lines(source: &str) -> Option<(usize, Option<usize>)> {
    let (program, diagnostics) = language::compile_model(source, "m");
    let program = program.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let line = |at: u32| source[..at as usize].matches('\n').count() + 1;
    model_print(&program).map(|(print, call)| (line(print.start), call.map(|c| line(c.start))))
}

#[test]
fn a_print_in_the_model_block_is_found_where_it_is() {
    let source = "parameters { real mu; }
model {
  mu ~ normal(0, 1);
  for (i in 1:2) {
    if (mu > i) {
      print(\"mu \", mu);
    }
  }
}";
    assert_eq!(lines(source), Some((6, None)));
}

#[test]
fn a_print_in_a_function_the_model_calls_names_the_call() {
    let source = "functions {
  real inner(real x) {
    print(\"x \", x);
    return x;
  }
  real outer(real x) { return inner(x) + 1; }
}
parameters { real mu; }
model {
  mu ~ normal(0, 1);
  if (mu > 0) {
    target += outer(mu) * 0;
  }
}";
    assert_eq!(lines(source), Some((3, Some(12))));
}

#[test]
fn prints_that_bat_run_shows_are_not_reported() {
    let source = "functions {
  real noisy(real x) { print(\"x \", x); return x; }
}
parameters { real mu; }
transformed parameters { real m2 = square(mu); print(\"m2 \", m2); }
model { mu ~ normal(0, 1); }
generated quantities { real y = noisy(mu); print(\"y \", y); }";
    assert_eq!(lines(source), None);
    let (program, _) = language::compile_model(source, "m");
    assert!(model_print_warning(&program.unwrap()).is_none());
}

#[test]
fn the_warning_points_at_the_print_and_the_call() {
    let source = "functions {
  void say(real x) { print(\"x \", x); }
}
parameters { real mu; }
model { say(mu); mu ~ normal(0, 1); }";
    let (program, _) = language::compile_model(source, "m");
    let warning = model_print_warning(&program.unwrap()).expect("a warning");
    assert_eq!(warning.code, PRINT_NOT_SHOWN);
    assert!(!warning.is_error());
    assert_eq!(
        &source[warning.primary.span.start as usize..warning.primary.span.end as usize],
        "print(\"x \", x);"
    );
    assert_eq!(warning.secondary.len(), 1);
    assert_eq!(
        &source[warning.secondary[0].span.start as usize..warning.secondary[0].span.end as usize],
        "say(mu);"
    );
}
