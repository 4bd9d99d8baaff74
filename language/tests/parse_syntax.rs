//! Parser behaviour on small programs: precedence and associativity (via
//! the prefix printer), declarations, statements, and diagnostics.

use language::diagnostic::{Diagnostic, Kind};
use language::span::LineIndex;
use language::syntax::{self, ast};

fn parse_ok(src: &str) -> ast::Program {
    let (program, diagnostics) = syntax::parse(src);
    let errors: Vec<_> = diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(
        errors.is_empty(),
        "unexpected errors for {src:?}: {errors:#?}"
    );
    program
}

fn errors(src: &str) -> Vec<Diagnostic> {
    let (_, diagnostics) = syntax::parse(src);
    diagnostics.into_iter().filter(|d| d.is_error()).collect()
}

/// The printed form of `e` parsed as an expression.
fn expr(e: &str) -> String {
    let program = parse_ok(&format!("model {{ target += {e}; }}"));
    match &program.blocks[0].stmts[0].kind {
        ast::StmtKind::TargetPlus(x) => syntax::expr_to_string(x),
        other => panic!("not a target statement: {other:?}"),
    }
}

fn line_of(src: &str, d: &Diagnostic) -> usize {
    LineIndex::new(src)
        .line_col(src, d.primary.span.start as usize)
        .0
}

#[test]
fn arithmetic_precedence_and_associativity() {
    assert_eq!(expr("a + b * c"), "(+ a (* b c))");
    assert_eq!(expr("a * b + c"), "(+ (* a b) c)");
    assert_eq!(expr("a - b - c"), "(- (- a b) c)");
    assert_eq!(expr("a / b / c"), "(/ (/ a b) c)");
    assert_eq!(expr("a .* b ./ c % d"), "(% (./ (.* a b) c) d)");
    // `\` and `%/%` bind tighter than `*`.
    assert_eq!(expr("a * b \\ c"), "(* a (\\ b c))");
    assert_eq!(expr("a \\ b * c"), "(* (\\ a b) c)");
    assert_eq!(expr("a %/% b %/% c"), "(%/% (%/% a b) c)");
}

#[test]
fn power_is_right_associative_and_beats_unary_minus() {
    assert_eq!(expr("a ^ b ^ c"), "(^ a (^ b c))");
    assert_eq!(expr("a .^ b .^ c"), "(.^ a (.^ b c))");
    assert_eq!(expr("-a ^ b"), "(neg (^ a b))");
    assert_eq!(expr("-2 ^ 2"), "(neg (^ 2 2))");
    assert_eq!(expr("a ^ -b"), "(^ a (neg b))");
    assert_eq!(expr("a * b ^ c"), "(* a (^ b c))");
    assert_eq!(expr("!a ^ b"), "(! (^ a b))");
}

#[test]
fn unary_and_postfix() {
    assert_eq!(expr("-a + b"), "(+ (neg a) b)");
    assert_eq!(expr("- - a"), "(neg (neg a))");
    assert_eq!(expr("+a"), "(pos a)");
    assert_eq!(expr("-a'"), "(neg (' a))");
    assert_eq!(expr("a' * b"), "(* (' a) b)");
    assert_eq!(expr("a[1]'"), "(' (index a 1))");
    assert_eq!(expr("-a \\ b"), "(\\ (neg a) b)");
}

#[test]
fn logical_and_comparison_levels() {
    assert_eq!(expr("a || b && c"), "(|| a (&& b c))");
    assert_eq!(expr("a && b || c"), "(|| (&& a b) c)");
    assert_eq!(expr("a == b < c"), "(== a (< b c))");
    assert_eq!(expr("a < b + c"), "(< a (+ b c))");
    assert_eq!(expr("a != b == c"), "(== (!= a b) c)");
    assert_eq!(expr("!a && b"), "(&& (! a) b)");
    assert_eq!(expr("a <= b >= c"), "(>= (<= a b) c)");
}

#[test]
fn conditional_is_right_associative_and_lowest() {
    assert_eq!(expr("a ? b : c ? d : e"), "(?: a b (?: c d e))");
    assert_eq!(expr("a || b ? c + 1 : d"), "(?: (|| a b) (+ c 1) d)");
    assert_eq!(expr("a ? b ? c : d : e"), "(?: a (?: b c d) e)");
}

#[test]
fn literals() {
    assert_eq!(
        expr("1 + 2.5 + .5 + 1. + 1e-3"),
        "(+ (+ (+ (+ 1 2.5) .5) 1.) 1e-3)"
    );
    assert_eq!(expr("2i + 1.5i"), "(+ 2i 1.5i)");
    assert_eq!(expr("{1, 2}"), "(array 1 2)");
    assert_eq!(expr("[1, 2]"), "(rowvec 1 2)");
    assert_eq!(
        expr("[[1, 2], [3, 4]]"),
        "(rowvec (rowvec 1 2) (rowvec 3 4))"
    );
    assert_eq!(expr("(1, 2)"), "(tuple 1 2)");
    assert_eq!(expr("(1,)"), "(tuple 1)");
    assert_eq!(expr("(1)"), "(paren 1)");
    assert_eq!(expr("{ {1}, {2} }"), "(array (array 1) (array 2))");
}

#[test]
fn calls_indexing_projection() {
    assert_eq!(expr("f()"), "(call f)");
    assert_eq!(expr("f(a, b)"), "(call f a b)");
    assert_eq!(
        expr("normal_lpdf(y | mu, s)"),
        "(call normal_lpdf y | mu s)"
    );
    assert_eq!(expr("target()"), "(call target)");
    assert_eq!(expr("m[, 1]"), "(index m : 1)");
    assert_eq!(
        expr("m[:, a:, :b, a:b]"),
        "(index m : (: a _) (: _ b) (: a b))"
    );
    assert_eq!(expr("m[i][j]"), "(index (index m i) j)");
    assert_eq!(expr("x.1.2"), "(proj (proj x 1) 2)");
    assert_eq!(expr("x[1].2"), "(proj (index x 1) 2)");
    assert_eq!(expr("f(x).1"), "(proj (call f x) 1)");
    assert_eq!(expr("x.1 + .5"), "(+ (proj x 1) .5)");
    assert_eq!(expr("T[1]"), "(index T 1)");
}

#[test]
fn constraints_do_not_swallow_greater_than() {
    let p = parse_ok(
        "data { real<lower=a, upper=b> x; vector<lower=-1>[N] v; \
         real<upper=(a > b)> y; matrix<offset=m, multiplier=s * 2>[2, 3] z; \
         real<multiplier=s, offset=m> w; int<upper=N - 1, lower=0> k; }",
    );
    let printed = syntax::print_ast(&p);
    assert!(
        printed.contains("decl real<lower=a, upper=b> x"),
        "{printed}"
    );
    assert!(
        printed.contains("decl vector<lower=(neg 1)>[N] v"),
        "{printed}"
    );
    assert!(
        printed.contains("decl real<upper=(paren (> a b))> y"),
        "{printed}"
    );
    assert!(
        printed.contains("decl matrix<offset=m, multiplier=(* s 2)>[2, 3] z"),
        "{printed}"
    );
    assert!(
        printed.contains("decl real<offset=m, multiplier=s> w"),
        "{printed}"
    );
    assert!(
        printed.contains("decl int<lower=0, upper=(- N 1)> k"),
        "{printed}"
    );

    // Unparenthesised comparison inside bounds is a syntax error.
    let errs = errors("data { real<lower=a > b> x; }");
    assert!(!errs.is_empty());
    assert_eq!(errs[0].kind, Kind::Syntax);
    // int takes no offset/multiplier.
    assert!(!errors("data { int<offset=1> x; }").is_empty());
}

#[test]
fn declarations() {
    let p = parse_ok(
        "data { array[N, 2] simplex[K] t; tuple(real<lower=0>, array[3] int) u; \
         cholesky_factor_cov[M, N] L; complex_matrix[2, 2] z; } \
         transformed data { real a, b = 1; array[2] tuple(real, vector[2]) c; }",
    );
    let printed = syntax::print_ast(&p);
    let expected = "\
program
  block data
    decl array[N, 2] simplex[K] t
    decl tuple(real<lower=0>, array[3] int) u
    decl cholesky_factor_cov[M, N] L
    decl complex_matrix[2, 2] z
  block transformed data
    decl real a
    decl real b = 1
    decl array[2] tuple(real, vector[2]) c
";
    assert_eq!(printed, expected);
}

#[test]
fn statements() {
    let p = parse_ok(
        r#"model {
  y ~ normal(mu, sigma) T[0, ];
  z ~ normal(0, 1) T[, 1];
  w ~ normal(0, 1) T[L, U];
  (a, b) = f();
  x[1, 2:3] += 1;
  x.1 = 2;
  target += 1;
  for (i in 1:N) { print("i = ", i); }
  for (v in xs) continue;
  while (1) break;
  if (a) if (b) x = 1; else x = 2;
  profile("lik") { reject("bad", x); }
  fatal_error("stop");
  f(x);
  ;
}"#,
    );
    let printed = syntax::print_ast(&p);
    let expected = r#"program
  block model
    tilde y ~ normal(mu, sigma) T[0, ]
    tilde z ~ normal(0, 1) T[, 1]
    tilde w ~ normal(0, 1) T[L, U]
    assign (tuple a b) = (call f)
    assign (index x 1 (: 2 3)) += 1
    assign (proj x 1) = 2
    target += 1
    for i in 1 : N
      block
        print("i = ", i)
    foreach v in xs
      continue
    while 1
      break
    if a
      then
        if b
          then
            assign x = 1
          else
            assign x = 2
    profile "lik"
      reject("bad", x)
    fatal_error("stop")
    expr (call f x)
    skip
"#;
    assert_eq!(printed, expected);
}

#[test]
fn functions() {
    let p = parse_ok(
        "functions { real f(data real x, array[,] real y, tuple(int, vector) t); \
         void g() { return; } \
         array[] vector h(tuple(real,) t) { return {[1]'}; } }",
    );
    let printed = syntax::print_ast(&p);
    let expected = "\
program
  block functions
    fundecl real f(data real x, array[,] real y, tuple(int, vector) t)
    fundef void g()
      block
        return
    fundef array[] vector h(tuple(real,) t)
      block
        return (array (' (rowvec 1)))
";
    assert_eq!(printed, expected);

    let (p, diags) = syntax::parse_functions_only("real f(real x) { return x; }\nvoid g();");
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(p.blocks.len(), 1);
    assert_eq!(p.blocks[0].kind, ast::BlockKind::Functions);
    assert_eq!(p.blocks[0].stmts.len(), 2);
}

#[test]
fn comments_are_collected() {
    let p = parse_ok("// head\nmodel { /* inner */ }\n");
    let texts: Vec<_> = p.comments.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, vec!["// head", "/* inner */"]);
}

#[test]
fn spans_cover_source_text() {
    let src = "model { y ~ normal(mu + 1, 2); }";
    let p = parse_ok(src);
    let stmt = &p.blocks[0].stmts[0];
    assert_eq!(&src[stmt.span.range()], "y ~ normal(mu + 1, 2);");
    let ast::StmtKind::Tilde { args, .. } = &stmt.kind else {
        panic!()
    };
    assert_eq!(&src[args[0].span.range()], "mu + 1");
    assert_eq!(&src[p.blocks[0].keyword_span.range()], "model");
}

#[test]
fn removed_syntax_is_rejected() {
    for src in [
        "data { real x[3]; }",
        "model { x <- 1; }",
        "model { # comment\n }",
        "data { int lower; }",
        "functions { real f(real[] x); }",
    ] {
        let errs = errors(src);
        assert!(!errs.is_empty(), "accepted: {src}");
        assert!(errs.iter().all(|d| d.kind == Kind::Syntax), "{errs:#?}");
    }
    let old_array = errors("data { real x[3]; }");
    assert!(
        old_array[0]
            .help
            .as_deref()
            .unwrap_or("")
            .contains("array[N]")
    );
    let arrow = errors("model { x <- 1; }");
    assert!(arrow[0].help.as_deref().unwrap_or("").contains("`<-`"));
}

#[test]
fn misplaced_constructs_are_syntax_errors() {
    let cases = [
        ("model { real<lower=0> x; }", 1),
        ("model { simplex[3] x; }", 1),
        ("data { real x = 1; }", 1),
        ("parameters { x = 1; }", 1),
        ("model { x + 1; }", 1),
        ("model { f(y | theta); }", 1),
        ("model { f(x) = 1; }", 1),
        ("transformed data { (x, y).1 = 2; }", 1),
        ("generated quantities { void f(); }", 1),
        ("model { x = {}; }", 1),
        ("model { tuple(real, real) y = (); }", 1),
    ];
    for (src, line) in cases {
        let errs = errors(src);
        assert!(!errs.is_empty(), "accepted: {src}");
        assert_eq!(errs[0].kind, Kind::Syntax, "{src}: {errs:#?}");
        assert_eq!(line_of(src, &errs[0]), line, "{src}");
    }
    // Local constraints are fine at the top level of transformed data.
    parse_ok("transformed data { real<lower=0> x = 1; { real y = x; } }");
}

#[test]
fn several_errors_are_reported() {
    let src = "model {\n  real x = ;\n  y ~ normal(0, 1)\n  z = 3 +;\n  w = 1;\n}\n";
    let errs = errors(src);
    let lines: Vec<_> = errs.iter().map(|d| line_of(src, d)).collect();
    assert!(errs.len() >= 2, "{errs:#?}");
    assert_eq!(lines[0], 2);
    assert!(lines.contains(&4) || lines.contains(&3), "{lines:?}");
    for d in &errs {
        assert_eq!(d.kind, Kind::Syntax);
        assert!(d.code.starts_with("E000"), "{}", d.code);
    }
}

#[test]
fn readable_messages() {
    let errs = errors("model {\n  y ~ normal(0, 1)\n}\n");
    assert!(
        errs[0].message.contains("expected `;`"),
        "{}",
        errs[0].message
    );
    assert!(errs[0].message.contains("found `}`"), "{}", errs[0].message);

    let errs = errors("paramters {\n real x;\n}\n");
    assert_eq!(errs[0].help.as_deref(), Some("did you mean `parameters`?"));

    let errs = errors("transformed paramters {\n real x;\n}\n");
    assert_eq!(
        errs[0].help.as_deref(),
        Some("did you mean `transformed parameters`?")
    );
    let errs = errors("generated quantity {\n}\n");
    assert_eq!(
        errs[0].help.as_deref(),
        Some("did you mean `generated quantities`?")
    );

    let errs = errors("model { }\ndata { }\n");
    assert!(
        errs[0].message.contains("out of order"),
        "{}",
        errs[0].message
    );

    let errs = errors("model { print(\"a\n\"); }");
    assert!(
        errs[0].message.contains("unterminated string"),
        "{}",
        errs[0].message
    );

    let src = "data {\n  double y;\n}\n";
    let errs = errors(src);
    assert_eq!(
        errs[0].message,
        "unknown type `double` in the declaration of `y`"
    );
    assert_eq!(&src[errs[0].primary.span.range()], "double");
    assert_eq!(
        errs[0].help.as_deref(),
        Some("Stan's floating-point type is `real`")
    );
    let errs = errors("model { vectr[3] v; }");
    assert!(!errs.is_empty());

    let src = "data { real x = 1; }";
    let errs = errors(src);
    assert_eq!(&src[errs[0].primary.span.range()], "= 1");

    let errs = errors("model { real é = 1; x = @@@; }");
    let messages: Vec<_> = errs.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        vec!["invalid character `é`", "invalid character `@`"],
        "{errs:#?}"
    );
    assert_eq!(errs[1].primary.span.end - errs[1].primary.span.start, 3);

    // Empty and comment-only programs are valid.
    assert!(syntax::parse("").1.is_empty());
    assert!(syntax::parse("  // nothing\n").1.is_empty());

    let errs = errors("model { } /* never closed");
    assert_eq!(errs[0].code, "E0003");
    assert!(errs[0].message.contains("unterminated block comment"));

    let (p, errs) = syntax::parse("functions {\n#include \"other.stan\"\n}\nmodel { }");
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].message, "`#include` is not supported");
    assert_eq!(p.blocks.len(), 2);

    let errs = errors(
        "transformed data { tuple(int, int) x = (1, 2); int y = x.99999999999999999999999; }",
    );
    assert_eq!(errs[0].code, "E0007");

    let errs = errors("data { real jacobian; }");
    assert_eq!(
        errs[0].message,
        "expected an identifier, found reserved word `jacobian`"
    );
}

#[test]
fn complex_bounds_parse_but_are_semantic_errors() {
    let (_, diags) = syntax::parse("data { complex<lower=1> z; }");
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].kind, Kind::Semantic);
}

#[test]
fn deep_nesting_gives_a_diagnostic_not_a_crash() {
    let deep_parens = format!(
        "model {{ target += {}1{}; }}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    let deep_blocks = format!("model {{ {} }}", "{".repeat(10_000));
    let deep_brackets = format!("model {{ target += {}1; }}", "[".repeat(10_000));
    let deep_unary = format!("model {{ target += {}1; }}", "-".repeat(10_000));
    let deep_power = format!("model {{ target += 2{}; }}", "^2".repeat(10_000));
    let long_sum = format!("model {{ target += 1{}; }}", " + 1".repeat(100_000));
    for src in [
        deep_parens,
        deep_blocks,
        deep_brackets,
        deep_unary,
        deep_power,
        long_sum,
    ] {
        let errs = errors(&src);
        assert!(
            errs.iter().any(|d| d.code == "E0004"),
            "no nesting diagnostic: {errs:#?}"
        );
        // The span points at the first token past the limit.
        assert!(errs[0].primary.span.start > 0);
    }
    // Moderate nesting and long (but sane) sums are fine.
    let ok = format!(
        "model {{ target += {}1{}; }}",
        "(".repeat(100),
        ")".repeat(100)
    );
    parse_ok(&ok);
    let sum = format!("model {{ target += -1{}; }}", " - 1".repeat(900));
    parse_ok(&sum);

    // The deepest tree the limits allow is still printable (recursively)
    // on a test thread's default stack.
    let deepest = format!(
        "model {{ target += {}1{}{}; }}",
        "(-".repeat(250),
        " + 1".repeat(700),
        ")".repeat(250)
    );
    let program = parse_ok(&deepest);
    assert!(syntax::print_ast(&program).len() > 1000);
}

#[test]
fn huge_files_parse_quickly() {
    let mut src = String::from("data { int N; }\nparameters { real mu; }\nmodel {\n");
    for i in 0..12_000 {
        src.push_str(&format!(
            "  target += normal_lpdf(mu | {i}, 1) * (mu - {i}.5) ^ 2;\n"
        ));
    }
    src.push_str("}\n");
    let start = std::time::Instant::now();
    let p = parse_ok(&src);
    let elapsed = start.elapsed();
    assert_eq!(p.blocks[2].stmts.len(), 12_000);
    // Generous bound for an unoptimised build on a loaded machine.
    assert!(elapsed.as_secs_f64() < 10.0, "took {elapsed:?}");
    eprintln!("12k-line model parsed in {elapsed:?}");
}

#[test]
fn random_input_never_panics() {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let pieces = [
        "model",
        "data",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ";",
        ",",
        "real",
        "x",
        "1",
        ".5",
        "<",
        ">",
        "lower",
        "=",
        "~",
        "T",
        "|",
        "?",
        ":",
        "'",
        "^",
        "-",
        "\"s\"",
        "/*",
        "*/",
        "//",
        "\n",
        " ",
        "array",
        "tuple",
        "for",
        "in",
        "if",
        "else",
        ".1",
        "target",
        "+=",
        "#",
        "@",
        "é",
        "\u{0}",
        "print",
        "functions",
        "void",
        "profile",
    ];
    for _ in 0..3000 {
        let n = rng.usize(0..60);
        let src: String = (0..n)
            .map(|_| pieces[rng.usize(0..pieces.len())])
            .collect::<Vec<_>>()
            .join(if rng.bool() { " " } else { "" });
        let _ = syntax::parse(&src);
        let _ = syntax::parse_functions_only(&src);
    }
    // Arbitrary characters, including multi-byte ones.
    for _ in 0..2000 {
        let n = rng.usize(0..80);
        let src: String = (0..n).map(|_| rng.char(..)).collect();
        let _ = syntax::parse(&src);
    }
    // Mutated valid programs.
    let base = "data { int<lower=0> N; vector[N] y; } parameters { real mu; } \
                model { y ~ normal(mu, 1) T[0, ]; for (i in 1:N) target += y[i] ^ 2; }";
    let bytes = base.as_bytes();
    for _ in 0..2000 {
        let mut v = bytes.to_vec();
        for _ in 0..rng.usize(1..4) {
            let i = rng.usize(0..v.len());
            match rng.u8(0..3) {
                0 => {
                    v.remove(i);
                }
                1 => v.insert(i, bytes[rng.usize(0..bytes.len())]),
                _ => {
                    let j = rng.usize(0..v.len());
                    v.swap(i, j)
                }
            }
        }
        let src = String::from_utf8_lossy(&v);
        let (_, diags) = syntax::parse(&src);
        let _ = syntax::print_ast(&syntax::parse(&src).0);
        for d in &diags {
            let span = d.primary.span;
            assert!(span.start <= span.end && span.end as usize <= src.len());
            assert!(src.is_char_boundary(span.start as usize));
            assert!(src.is_char_boundary(span.end as usize));
        }
        let _ = language::diagnostic::render("fuzz.stan", &src, &diags, false);
    }
}

#[test]
fn broken_programs_still_yield_a_tree() {
    // Missing `;` before `}`: the other statements survive.
    let src = "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n  target += mu\n}\n";
    let (p, diags) = syntax::parse(src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(line_of(src, &diags[0]), 7);
    let printed = syntax::print_ast(&p);
    assert!(printed.contains("tilde mu ~ normal(0, 1)"), "{printed}");
    assert!(printed.contains("target += mu"), "{printed}");

    // Unclosed blocks at end of file.
    let src = "model {\n  if (x) {\n    y = 1;\n";
    let (p, diags) = syntax::parse(src);
    assert!(!diags.is_empty());
    assert!(syntax::print_ast(&p).contains("assign y = 1"));

    // Misspelled block name: reported with a suggestion, rest still parsed.
    let src = "paramters {\n  real x;\n}\nmodel {\n  x ~ normal(0, 1);\n}\n";
    let (p, diags) = syntax::parse(src);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].help.as_deref(), Some("did you mean `parameters`?"));
    assert_eq!(p.blocks.len(), 2);
    assert_eq!(p.blocks[0].kind, ast::BlockKind::Parameters);

    // Missing `)` before `{`: the loop body is kept.
    let src = "model {\n  for (i in 1:N {\n    x += 1;\n  }\n  print(x);\n}\n";
    let (p, diags) = syntax::parse(src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(line_of(src, &diags[0]), 2);
    let printed = syntax::print_ast(&p);
    assert!(printed.contains("for i in 1 : N"), "{printed}");
    assert!(printed.contains("print(x)"), "{printed}");

    // Unclosed block before the next one.
    let src = "model {\n  x ~ normal(0, 1);\n\ngenerated quantities {\n  real y = 1;\n}\n";
    let (p, diags) = syntax::parse(src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(line_of(src, &diags[0]), 4);
    assert_eq!(
        diags[0].help.as_deref(),
        Some("is a `}` missing to close the previous block?")
    );
    assert_eq!(p.blocks.len(), 2);

    // A bad statement becomes an error node; its neighbours survive.
    let src = "model {\n  real a = 1;\n  real b = 3 +* 2;\n  real c = 2;\n}\n";
    let (p, diags) = syntax::parse(src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let names: Vec<_> = p.blocks[0]
        .stmts
        .iter()
        .map(|s| match &s.kind {
            ast::StmtKind::Decl(d) => d.name.name.clone(),
            ast::StmtKind::Error => "<error>".to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(names, vec!["a", "<error>", "c"]);
}
