//! Focused tests of the checker's rule families. Expected codes are the
//! documented ones (check/mod.rs); expected lines are where stanc3 points.

use language::check::{Callee, SymbolKind};
use language::types::{AdLevel, Type};
use language::{Diagnostic, LineIndex, Severity, compile_front_end};

/// (code, 1-based line) of every diagnostic, in source order.
fn diags(src: &str) -> Vec<(&'static str, usize)> {
    let result = compile_front_end(src);
    let index = LineIndex::new(src);
    result
        .diagnostics
        .iter()
        .map(|d| (d.code, index.line_col(src, d.primary.span.start as usize).0))
        .collect()
}

fn errors(src: &str) -> Vec<(&'static str, usize)> {
    let result = compile_front_end(src);
    let index = LineIndex::new(src);
    result
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| (d.code, index.line_col(src, d.primary.span.start as usize).0))
        .collect()
}

fn only_diag(src: &str) -> Diagnostic {
    let result = compile_front_end(src);
    assert_eq!(result.diagnostics.len(), 1, "{:#?}", result.diagnostics);
    result.diagnostics[0].clone()
}

fn assert_clean(src: &str) {
    let result = compile_front_end(src);
    let errs: Vec<_> = result.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errs.is_empty(), "unexpected errors: {errs:#?}");
}

// ------------------------------------------------------------ names

#[test]
fn undeclared_variable_suggests_close_name() {
    let d = only_diag("data { real sigma; }\nmodel { real x = sigmaa; }\n");
    assert_eq!(d.code, "E0101");
    assert_eq!(d.help.as_deref(), Some("did you mean 'sigma'?"));
}

#[test]
fn duplicate_declaration_points_at_both() {
    let src = "data {\n  real x;\n  int x;\n}\n";
    let d = only_diag(src);
    assert_eq!(d.code, "E0102");
    assert_eq!(errors(src), vec![("E0102", 3)]);
    assert_eq!(d.secondary.len(), 1, "earlier declaration labelled");
    assert_eq!(&src[d.secondary[0].span.range()], "x");
}

#[test]
fn locals_may_not_shadow_but_siblings_may_reuse() {
    assert_eq!(
        errors("model {\n  real a;\n  {\n    real a;\n  }\n}\n"),
        vec![("E0102", 4)]
    );
    assert_clean("model {\n  { real a; }\n  { real a; }\n}\n");
    // variables may shadow library function names
    assert_clean("data { real exp; }\nmodel { }\n");
}

#[test]
fn reserved_identifiers() {
    assert_eq!(errors("data {\n  real var;\n}\n"), vec![("E0103", 2)]);
    assert_eq!(errors("data {\n  real x__;\n}\n"), vec![("E0103", 2)]);
}

// ------------------------------------------------------------ expressions

#[test]
fn operator_typing() {
    assert_clean(
        "data { matrix[2,2] m; vector[2] v; row_vector[2] r; }\n\
         transformed data { vector[2] a = m * v; real b = r * v; matrix[2,2] c = v * r;\n\
         row_vector[2] d = r / m; vector[2] e = m \\ v; complex z = 1 + 2i; }\n",
    );
    assert_eq!(
        errors(
            "data { vector[2] v; row_vector[2] r; }\ntransformed data {\n  vector[2] x = v + r;\n}\n"
        ),
        vec![("E0104", 3)]
    );
    assert_eq!(
        errors("data { vector[3] v; }\ntransformed data {\n  vector[3] w = !v;\n}\n"),
        vec![("E0105", 3)]
    );
}

#[test]
fn integer_division_warns_like_stanc() {
    let src = "transformed data {\n  int a = 3;\n  int b = a / 2;\n}\n";
    assert_eq!(diags(src), vec![("W0101", 3)]);
    assert_clean("transformed data { int a = 3; int b = a %/% 2; real c = a * 1.0 / 2; }\n");
}

#[test]
fn indexing_types_and_errors() {
    let src = "data { matrix[3,3] m; array[2] vector[3] av; array[2] int ii; }\n\
               transformed data { row_vector[3] a = m[1]; vector[3] b = m[:, 1]; real c = m[1, 2];\n\
               matrix[2,3] d = m[ii]; array[2] vector[3] e = av[ii]; real f = av[1, 2]; }\n";
    assert_clean(src);
    assert_eq!(
        errors("data { vector[3] v; }\ntransformed data {\n  real x = v[1, 2];\n}\n"),
        vec![("E0110", 3)]
    );
    assert_eq!(
        errors("data { vector[3] v; }\ntransformed data {\n  real x = v[1.5];\n}\n"),
        vec![("E0111", 3)]
    );
}

#[test]
fn literals_promote_and_build_matrices() {
    let src = "transformed data {\n  array[2] real a = {1, 2.5};\n  matrix[2, 2] m = [[1, 2], [3, 4]];\n  complex_row_vector[2] c = [1, 2i];\n  tuple(int, real) t = (1, 2.0);\n  real p = t.2;\n}\n";
    assert_clean(src);
    assert_eq!(
        errors("transformed data {\n  array[2] real a = {1, [1]};\n}\n"),
        vec![("E0113", 2)]
    );
    assert_eq!(
        errors("transformed data {\n  tuple(int, real) t = (1, 2.0);\n  real p = t.3;\n}\n"),
        vec![("E0112", 3)]
    );
}

#[test]
fn conditional_operator_promotes() {
    assert_clean("data { int c; }\ntransformed data { real x = c ? 1 : 2.5; }\n");
    assert_eq!(
        errors("data { int c; vector[2] v; }\ntransformed data {\n  real x = c ? 1 : v;\n}\n"),
        vec![("E0114", 3)]
    );
}

// ------------------------------------------------------------ calls

#[test]
fn function_call_resolution() {
    assert_eq!(
        errors("transformed data {\n  real x = exp(1, 2);\n}\n"),
        vec![("E0106", 2)]
    );
    let d = only_diag("transformed data {\n  real x = ezp(1);\n}\n");
    assert_eq!(d.code, "E0108");
    assert_eq!(d.help.as_deref(), Some("did you mean 'exp'?"));
}

#[test]
fn user_function_overloads_and_ambiguity() {
    let src = "functions {\n  real f(int a, real b) { return a; }\n  real f(real a, int b) { return b; }\n}\ntransformed data {\n  real x = f(1, 2);\n  real y = f(1, 2.0);\n}\n";
    assert_eq!(errors(src), vec![("E0107", 6)]);
}

#[test]
fn data_only_arguments() {
    let src = "functions {\n  real f(data real x) { return x; }\n}\nparameters { real p; }\nmodel {\n  real y = f(p);\n}\n";
    assert_eq!(errors(src), vec![("E0106", 6)]);
    assert_clean(
        "functions { real f(data real x) { return x; } }\ndata { real d; }\nmodel { real y = f(d); }\n",
    );
}

#[test]
fn void_and_non_void_use() {
    let src = "functions {\n  void f() { }\n  real g() { return 1; }\n}\nmodel {\n  real x = f();\n  g();\n}\n";
    assert_eq!(errors(src), vec![("E0109", 6), ("E0109", 7)]);
}

#[test]
fn tilde_resolution_and_suggestion() {
    assert_clean("parameters { real y; }\nmodel { y ~ normal(0, 1); }\n");
    let d = only_diag("parameters { real y; }\nmodel {\n  y ~ nromal(0, 1);\n}\n");
    assert_eq!(d.code, "E0118");
    assert_eq!(d.help.as_deref(), Some("did you mean 'normal'?"));
    assert_eq!(
        errors("parameters { real y; }\nmodel {\n  y ~ normal_lpdf(0, 1);\n}\n"),
        vec![("E0118", 3)]
    );
    assert_eq!(
        errors("parameters { real y; }\nmodel {\n  y ~ normal(0, 1, 2);\n}\n"),
        vec![("E0106", 3)]
    );
}

#[test]
fn truncation_needs_cdfs() {
    assert_clean("parameters { real<lower=0> y; }\nmodel { y ~ normal(0, 1) T[0, ]; }\n");
    assert_eq!(
        errors(
            "parameters { vector[2] y; }\nmodel {\n  y ~ multi_normal_cholesky(rep_vector(0, 2), diag_matrix(rep_vector(1, 2))) T[0, ];\n}\n"
        ),
        vec![("E0119", 3)]
    );
}

#[test]
fn conditional_notation_only_for_densities() {
    assert_eq!(
        errors("transformed data {\n  real x = exp(1 | 2);\n}\n")
            .into_iter()
            .filter(|(c, _)| *c == "E0133")
            .count(),
        1
    );
    assert_eq!(
        errors("model {\n  target += normal_lpdf(1, 0, 1);\n}\n"),
        vec![("E0133", 2)]
    );
}

// ------------------------------------------------------------ statements and blocks

#[test]
fn target_jacobian_rng_and_unnormalized_placement() {
    assert_eq!(
        errors("transformed data {\n  target += 1;\n}\n"),
        vec![("E0120", 2)]
    );
    assert_eq!(
        errors("parameters { real p; }\nmodel {\n  jacobian += p;\n}\n"),
        vec![("E0121", 3)]
    );
    assert_eq!(
        errors("model {\n  real x = normal_rng(0, 1);\n}\n"),
        vec![("E0122", 2)]
    );
    assert_eq!(
        errors(
            "parameters { real p; }\ntransformed parameters {\n  real x = normal_lupdf(p | 0, 1);\n}\n"
        ),
        vec![("E0123", 3)]
    );
    assert_clean(
        "transformed data { real x = normal_rng(0, 1); }\nparameters { real p; }\ntransformed parameters { jacobian += p; }\nmodel { target += normal_lupdf(p | 0, 1); }\n",
    );
}

#[test]
fn loops_conditions_and_readonly_loop_variables() {
    assert_eq!(errors("model {\n  break;\n}\n"), vec![("E0124", 2)]);
    assert_eq!(
        errors("model {\n  for (i in 1:3) {\n    i = 2;\n  }\n}\n"),
        vec![("E0117", 3)]
    );
    assert_eq!(
        errors("model {\n  real z = 1;\n  while (z) { }\n}\n"),
        vec![("E0115", 3)]
    );
    assert_eq!(
        errors("model {\n  for (i in 1:2.5) { }\n}\n"),
        vec![("E0115", 2)]
    );
    assert_clean(
        "data { array[3] vector[2] xs; matrix[2,2] m; }\nmodel { for (x in xs) { vector[2] y = x; } for (e in m) { real f = e; } }\n",
    );
    assert_eq!(
        errors("data { real r; }\nmodel {\n  for (x in r) { }\n}\n"),
        vec![("E0136", 3)]
    );
}

#[test]
fn assignment_rules() {
    assert_eq!(
        errors("data { real d; }\nmodel {\n  d = 1;\n}\n"),
        vec![("E0117", 3)]
    );
    assert_eq!(
        errors("model {\n  int i;\n  i = 2.5;\n}\n"),
        vec![("E0116", 3)]
    );
    assert_clean("model { real x; x = 1; vector[2] v; v *= 2; v += v; matrix[2,2] m; m *= m; }\n");
    assert_eq!(
        errors("model {\n  real x;\n  x .*= 2;\n}\n"),
        vec![("E0116", 3)]
    );
    assert_eq!(
        errors("model {\n  real x;\n  real y;\n  (x, x) = (1, 2);\n}\n"),
        vec![("E0137", 4)]
    );
}

#[test]
fn block_rules_for_declarations() {
    assert_eq!(errors("parameters {\n  int n;\n}\n"), vec![("E0128", 2)]);
    assert_eq!(
        errors("data { real d; }\ntransformed parameters {\n  vector[d] v;\n}\n"),
        vec![("E0115", 3)]
    );
    assert_eq!(
        // stanc3: top-level sizes in generated quantities must be data too
        errors(
            "parameters { real p; }\ngenerated quantities {\n  int n = 2;\n  array[n] real a;\n}\n"
        ),
        vec![("E0129", 4)]
    );
    assert_eq!(
        errors("data {\n  int<lower=0.5> n;\n}\n"),
        vec![("E0130", 2)]
    );
    assert_eq!(
        errors("data { vector[3] lo; }\nparameters {\n  real<lower=lo> x;\n}\n"),
        vec![("E0130", 3)]
    );
}

#[test]
fn non_data_sizes_are_rejected_at_top_level() {
    assert_eq!(
        errors("parameters { real p; }\ntransformed parameters {\n  vector[size({p})] v;\n}\n"),
        vec![("E0129", 3)]
    );
    assert_eq!(
        errors("parameters { real p; }\ntransformed parameters {\n  vector[p] v;\n}\n"),
        vec![("E0129", 3)]
    );
}

// ------------------------------------------------------------ functions

#[test]
fn function_definition_rules() {
    assert_eq!(
        errors("functions {\n  real f(real x);\n}\n"),
        vec![("E0127", 2)]
    );
    assert_eq!(
        errors("functions {\n  real foo_lpdf(int y) { return 1; }\n}\n"),
        vec![("E0127", 2)]
    );
    assert_eq!(
        errors("functions {\n  real foo_lpmf(real y) { return 1; }\n}\n"),
        vec![("E0127", 2)]
    );
    assert_eq!(
        errors("functions {\n  real f(real x) { return x; }\n  int f(real x) { return 1; }\n}\n"),
        vec![("E0127", 3)]
    );
    // forward declaration, mutual recursion
    assert_clean(
        "functions {\n  int is_even(int n);\n  int is_odd(int n) { if (n == 0) return 0; return is_even(n - 1); }\n  int is_even(int n) { if (n == 0) return 1; return is_odd(n - 1); }\n}\n",
    );
}

#[test]
fn every_path_must_return() {
    assert_eq!(
        errors("functions {\n  real f(int x) {\n    if (x) return 1;\n  }\n}\n"),
        vec![("E0126", 2)]
    );
    assert_clean("functions { real f(int x) { if (x) return 1; else return 2; } }\n");
    assert_clean("functions { real f(int x) { while (1) { return 1; } } }\n");
    assert_clean("functions { real f(int x) { reject(\"no\"); } }\n");
    assert_eq!(
        errors("functions {\n  void f() {\n    return 1;\n  }\n}\n"),
        vec![("E0125", 3)]
    );
}

// ------------------------------------------------------------ higher-order

#[test]
fn ode_and_reduce_sum_check_the_callback() {
    let ok = "functions {\n  vector rhs(real t, vector y, real k) { return -k * y; }\n  real part(array[] real s, int a, int b, real mu) { return normal_lpdf(s | mu, 1); }\n}\ndata { array[3] real ts; array[10] real ys; }\nparameters { real k; }\nmodel {\n  array[3] vector[2] y = ode_rk45(rhs, [1, 1]', 0, ts, k);\n  target += reduce_sum(part, ys, 1, k);\n}\n";
    assert_clean(ok);
    let bad = "functions {\n  vector rhs(real t, array[] real y) { return [1]'; }\n}\ndata { array[3] real ts; }\nmodel {\n  array[3] vector[2] y = ode_rk45(rhs,\n    [1, 1]', 0, ts);\n}\n";
    assert_eq!(errors(bad), vec![("E0132", 6)]);
    let wrong_extra = "functions {\n  vector rhs(real t, vector y, vector k) { return y; }\n}\ndata { array[3] real ts; }\nmodel {\n  array[3] vector[2] y = ode_rk45(rhs, [1, 1]', 0, ts,\n    1.5);\n}\n";
    assert_eq!(errors(wrong_extra), vec![("E0132", 7)]);
}

// ------------------------------------------------------------ checked program

#[test]
fn checked_program_records_symbols_references_types_and_calls() {
    let src = "functions {\n  real sq(real x) { return x * x; }\n}\ndata { int N; vector[N] y; }\nparameters { real mu; }\nmodel {\n  y ~ normal(mu, 1);\n  target += sq(mu);\n}\n";
    let result = compile_front_end(src);
    assert!(result.diagnostics.is_empty(), "{:#?}", result.diagnostics);
    let checked = result.checked.expect("checked program");
    let find = |name: &str| {
        checked
            .symbols
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no symbol {name}"))
    };
    let mu = find("mu");
    assert_eq!(checked.symbols[mu].ty, Type::Real);
    assert_eq!(checked.symbols[mu].ad, AdLevel::AutoDiff);
    assert_eq!(checked.symbols[find("N")].ad, AdLevel::DataOnly);
    assert_eq!(checked.symbols[find("y")].declared, "vector");
    assert_eq!(checked.symbols[find("x")].kind, SymbolKind::FunArg);
    let sq = find("sq");
    assert!(matches!(
        checked.symbols[sq].kind,
        SymbolKind::Function { defined: true }
    ));
    // `mu` is referenced twice, `y` once, `N` once (the size), `x` twice.
    let refs_to = |id| checked.references.iter().filter(|(_, r)| *r == id).count();
    assert_eq!(refs_to(mu), 2);
    assert_eq!(refs_to(find("x")), 2);
    assert_eq!(refs_to(find("N")), 1);
    // the call `sq(mu)` resolved to the user function and typed real
    let call_start = src.find("sq(mu)").unwrap();
    let (call_span, callee) = checked
        .calls
        .iter()
        .find(|(span, _)| span.start as usize == call_start)
        .expect("call recorded");
    assert!(matches!(callee, Callee::User(id) if *id == sq));
    assert_eq!(
        checked.expr_types[call_span],
        (Type::Real, AdLevel::AutoDiff)
    );
    // the tilde resolved to the built-in normal_lpdf over a vector
    let tilde = checked
        .calls
        .iter()
        .find(|(span, _)| &src[span.range()] == "y ~ normal(mu, 1);")
        .map(|(_, c)| c)
        .expect("tilde recorded");
    match tilde {
        Callee::Builtin(sig) => assert_eq!(sig.args[0].1, Type::Vector),
        other => panic!("expected built-in, got {other:?}"),
    }
}

// ------------------------------------------------------------ robustness

/// The deepest trees the parser accepts (its nesting limits) must check
/// without overflowing the stack of a test thread (2 MiB by default).
#[test]
fn deepest_accepted_expressions_do_not_overflow() {
    let chain = vec!["x"; 999].join(" + ");
    let parens = format!("{}x{}", "(".repeat(250), ")".repeat(250));
    let blocks = format!("{}{}", "{ ".repeat(250), "} ".repeat(250));
    let src = format!(
        "transformed data {{\n  real x = 1;\n  real a = {chain};\n  real b = {parens};\n}}\nmodel {{\n  {blocks}\n}}\n"
    );
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || compile_front_end(&src).diagnostics)
        .expect("spawn");
    let diags = handle
        .join()
        .expect("checking deep trees must not overflow");
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:#?}");
}

#[test]
fn stanc_style_warnings() {
    assert_eq!(
        diags("data { real a; real b; real c; }\ntransformed data {\n  int x = a < b < c;\n}\n"),
        vec![("W0102", 3)]
    );
    assert!(
        diags("data { real a; real b; real c; }\ntransformed data { int x = (a < b) < c; }\n")
            .is_empty()
    );
    assert_eq!(
        diags("model {\n  real x = 1;\n  x = x;\n}\n"),
        vec![("W0102", 3)]
    );
    assert_eq!(
        diags("model {\n  reject(\"stop\");\n  real y = 2;\n}\n"),
        vec![("W0102", 3)]
    );
}

#[test]
fn jacobian_call_without_parameters_warns() {
    let src = "functions {\n  real f_jacobian(real x) { jacobian += x; return x; }\n}\ndata { real d; }\nparameters { real p; }\ntransformed parameters {\n  real a = f_jacobian(p);\n  real b = f_jacobian(d);\n}\n";
    assert_eq!(diags(src), vec![("W0102", 8)]);
}
