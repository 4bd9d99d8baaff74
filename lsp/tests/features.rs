//! Hover, navigation, rename, completion, signature help and outline on
//! hand-written models. Expected answers are derived from the source text
//! (where a name is written), never from the server's own output.

use language::Span;
use lsp::completion::{self, CandidateKind};
use lsp::document::{Document, SourceKind};
use lsp::navigation::{self, apply_edits};
use lsp::position::Encoding;
use lsp::symbols::{self, OutlineKind};
use lsp::{hover, signature_help};

const MODEL: &str = r#"functions {
  real shifted_lpdf(real y, real mu) {
    return normal_lpdf(y | mu, 1);
  }
  real twice(real x);
  real twice(real x) { return 2 * x; }
}
data {
  int<lower=0> J; // number of schools — naïve ✓
  array[J] real y;
  // std of estimated effect
  array[J] real<lower=0> sigma;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] eta;
}
transformed parameters {
  vector[J] theta = mu + tau * eta;
}
model {
  for (j in 1:J) {
    real local_scale = sigma[j];
    y[j] ~ normal(theta[j], local_scale);
  }
  mu ~ shifted(twice(0.5));
  eta ~ std_normal();
}
"#;

fn doc(text: &str) -> Document {
    Document::new(text.to_owned(), 1, SourceKind::Program, Encoding::Utf16)
}

/// Byte offset of the `n`-th (0-based) occurrence of `needle` as a whole word.
fn nth_word(text: &str, needle: &str, n: usize) -> usize {
    text.match_indices(needle)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + needle.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
        .nth(n)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no occurrence {n} of {needle}"))
}

fn word_span(text: &str, needle: &str, n: usize) -> Span {
    let start = nth_word(text, needle, n);
    Span::new(start, start + needle.len())
}

#[test]
fn the_model_checks_cleanly() {
    let d = doc(MODEL);
    assert!(d.checked.is_some());
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
}

#[test]
fn definition_of_each_use_is_its_declaration() {
    let d = doc(MODEL);
    for (name, uses) in [
        ("sigma", 1),
        ("theta", 1),
        ("local_scale", 1),
        ("j", 3),
        ("J", 4),
        ("tau", 1),
    ] {
        let declaration = word_span(MODEL, name, 0);
        for n in 1..=uses {
            let at = nth_word(MODEL, name, n);
            assert_eq!(
                navigation::definition(&d, at + 1),
                Some(declaration),
                "{name} use {n}"
            );
        }
    }
}

#[test]
fn references_list_every_use_and_the_declaration() {
    let d = doc(MODEL);
    let at = nth_word(MODEL, "J", 2);
    let count = (0..)
        .take_while(|&n| std::panic::catch_unwind(|| nth_word(MODEL, "J", n)).is_ok())
        .count();
    assert_eq!(count, 6);
    let expected: Vec<Span> = (0..count).map(|n| word_span(MODEL, "J", n)).collect();
    assert_eq!(navigation::references(&d, at, true), expected);
    assert_eq!(
        navigation::references(&d, at, false),
        expected[1..].to_vec()
    );
}

#[test]
fn rename_variable_changes_all_uses_and_still_checks() {
    let d = doc(MODEL);
    let at = nth_word(MODEL, "tau", 1);
    let edits = navigation::rename(&d, at, "scale_tau", SourceKind::Program).unwrap();
    let renamed = apply_edits(MODEL, &edits);
    assert_eq!(renamed, MODEL.replace("tau", "scale_tau"));
    assert!(doc(&renamed).diagnostics.is_empty());
}

#[test]
fn rename_density_keeps_suffix_and_renames_tilde_uses() {
    let d = doc(MODEL);
    let at = nth_word(MODEL, "shifted", 0);
    let edits = navigation::rename(&d, at + 5, "moved_lpdf", SourceKind::Program).unwrap();
    let renamed = apply_edits(MODEL, &edits);
    assert!(renamed.contains("real moved_lpdf(real y"));
    assert!(renamed.contains("mu ~ moved(twice(0.5));"));
    assert!(doc(&renamed).diagnostics.is_empty());
    let refused = navigation::rename(&d, at, "moved", SourceKind::Program).unwrap_err();
    assert!(refused.0.contains("_lpdf"), "{}", refused.0);
}

#[test]
fn rename_into_a_clash_or_keyword_is_refused() {
    let d = doc(MODEL);
    let at = nth_word(MODEL, "tau", 0);
    assert!(navigation::rename(&d, at, "mu", SourceKind::Program).is_err());
    assert!(navigation::rename(&d, at, "for", SourceKind::Program).is_err());
    assert!(navigation::rename(&d, at, "2x", SourceKind::Program).is_err());
    // Built-ins are not user symbols.
    let normal = nth_word(MODEL, "normal", 0);
    assert!(navigation::rename(&d, normal, "gauss", SourceKind::Program).is_err());
}

#[test]
fn overloads_and_forward_declaration_are_one_name() {
    let d = doc(MODEL);
    let call = nth_word(MODEL, "twice", 2);
    let refs = navigation::references(&d, call, true);
    assert!(refs.contains(&word_span(MODEL, "twice", 1)), "{refs:?}");
    assert!(refs.contains(&word_span(MODEL, "twice", 2)));
}

#[test]
fn hover_on_variable_shows_declaration_role_and_comment() {
    let d = doc(MODEL);
    let info = hover::hover(&d, nth_word(MODEL, "J", 3)).unwrap();
    assert!(
        info.markdown.contains("int<lower=0> J"),
        "{}",
        info.markdown
    );
    assert!(info.markdown.contains("data variable"));
    assert!(info.markdown.contains("number of schools — naïve ✓"));
    assert_eq!(info.span, word_span(MODEL, "J", 3));
    let sigma = hover::hover(&d, nth_word(MODEL, "sigma", 1)).unwrap();
    assert!(
        sigma.markdown.contains("std of estimated effect"),
        "{}",
        sigma.markdown
    );
    let scale = hover::hover(&d, nth_word(MODEL, "local_scale", 1)).unwrap();
    assert!(scale.markdown.contains("local variable"));
}

#[test]
fn hover_on_builtin_shows_resolved_signature_and_doc() {
    let d = doc(MODEL);
    let info = hover::hover(&d, nth_word(MODEL, "std_normal", 0)).unwrap();
    assert!(
        info.markdown.contains("std_normal_lpdf(vector)"),
        "{}",
        info.markdown
    );
    let sqrt = doc("transformed data { real x = sqrt(2.0); }");
    let info = hover::hover(&sqrt, sqrt.text.find("sqrt").unwrap()).unwrap();
    assert!(
        info.markdown.contains("sqrt(real) => real"),
        "{}",
        info.markdown
    );
    assert!(
        info.markdown
            .contains(language::builtins::doc("sqrt").unwrap())
    );
}

#[test]
fn hover_elsewhere_shows_expression_type() {
    let d = doc(MODEL);
    let star = MODEL.find("tau * eta").unwrap() + 4;
    let info = hover::hover(&d, star).unwrap();
    assert!(info.markdown.contains("vector"), "{}", info.markdown);
    assert_eq!(&MODEL[info.span.range()], "tau * eta");
}

#[test]
fn completion_after_tilde_offers_distributions_including_user_ones() {
    // Typed into a file that checked before: the text now does not parse.
    let text = MODEL.replace("eta ~ std_normal();", "eta ~ ");
    let mut d = doc(MODEL);
    d.update(text.clone(), 2, SourceKind::Program, Encoding::Utf16);
    let at = text.find("eta ~ ").unwrap() + "eta ~ ".len();
    let items = completion::complete(&d, at);
    let labels: Vec<&str> = items.iter().map(|c| c.label.as_str()).collect();
    assert!(labels.contains(&"normal") && labels.contains(&"poisson"));
    assert!(labels.contains(&"shifted"), "user density missing");
    assert!(items.iter().all(|c| c.kind == CandidateKind::Distribution));
}

#[test]
fn completion_offers_names_in_scope_only() {
    let d = doc(MODEL);
    let at = MODEL.find("mu ~ shifted").unwrap();
    let labels: Vec<String> = completion::complete(&d, at)
        .into_iter()
        .map(|c| c.label)
        .collect();
    for visible in [
        "mu", "tau", "theta", "sigma", "twice", "exp", "vector", "for",
    ] {
        assert!(labels.iter().any(|l| l == visible), "{visible} missing");
    }
    // The loop's local variable and loop index are out of scope here.
    assert!(!labels.iter().any(|l| l == "local_scale" || l == "j"));
    let prefixed = MODEL.find("eta ~ std_normal").unwrap() + 1;
    let labels: Vec<String> = completion::complete(&d, prefixed)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert!(labels.iter().all(|l| l.starts_with('e')), "{labels:?}");
}

#[test]
fn completion_between_blocks_offers_only_blocks_that_fit() {
    let text = "data { int N; }\n\nmodel { }\n";
    let d = doc(text);
    let at = text.find("\n\n").unwrap() + 1;
    let labels: Vec<String> = completion::complete(&d, at)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert_eq!(
        labels,
        ["transformed data", "parameters", "transformed parameters"]
    );
}

#[test]
fn signature_help_marks_the_current_argument() {
    let text = "model { real x = fma(1, 2, ";
    let d = doc(text);
    let help = signature_help::signature_help(&d, text.len()).unwrap();
    assert_eq!(help.active_parameter, 2);
    let sig = &help.signatures[help.active_signature];
    assert!(sig.label.starts_with("fma("));
    let (s, e) = sig.parameters[2];
    assert_eq!(&sig.label[s..e], "real");
    // A user function shows its argument names.
    let text = MODEL.replace("twice(0.5)", "twice(");
    let d = doc(&text);
    let at = text.find("twice(").unwrap() + "twice(".len();
    let at = text[at..]
        .find("twice(")
        .map_or(at, |i| at + i + "twice(".len());
    let help = signature_help::signature_help(&d, at).unwrap();
    // Forward declaration and definition are one signature.
    let twice = help
        .signatures
        .iter()
        .filter(|s| s.label == "twice(real x)");
    assert_eq!(twice.count(), 1, "{help:?}");
}

#[test]
fn outline_lists_blocks_with_their_declarations() {
    let d = doc(MODEL);
    let outline = symbols::outline(&d.program, &d.text);
    let blocks: Vec<&str> = outline.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        blocks,
        [
            "functions",
            "data",
            "parameters",
            "transformed parameters",
            "model"
        ]
    );
    let data: Vec<(&str, Option<&str>)> = outline[1]
        .children
        .iter()
        .map(|c| (c.name.as_str(), c.detail.as_deref()))
        .collect();
    assert_eq!(
        data,
        [
            ("J", Some("int<lower=0>")),
            ("y", Some("array[J] real")),
            ("sigma", Some("array[J] real<lower=0>"))
        ]
    );
    assert!(
        outline[0]
            .children
            .iter()
            .all(|c| c.kind == OutlineKind::Function)
    );
    assert_eq!(
        outline[0].children[0].name_span,
        word_span(MODEL, "shifted_lpdf", 0)
    );
}

#[test]
fn syntax_errors_keep_outline_and_completion() {
    let good = "data { int N; }\nmodel { }\n";
    let mut d = doc(good);
    assert_eq!(d.outline.len(), 2);
    // The parser gives up on this text entirely (no blocks).
    let broken = "data { int N; }\nmodel { N ~ }\n";
    d.update(broken.into(), 2, SourceKind::Program, Encoding::Utf16);
    assert!(d.checked.is_none() && !d.diagnostics.is_empty());
    assert_eq!(d.outline.len(), 2);
    let at = broken.find("N ~").unwrap();
    let labels: Vec<String> = completion::complete(&d, at)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert!(labels.iter().any(|l| l == "N"), "{labels:?}");
    assert!(!labels.iter().any(|l| l == "parameters"));
}

#[test]
fn hover_on_function_argument_shows_written_type() {
    let d = doc(MODEL);
    let mu_arg = nth_word(MODEL, "mu", 1);
    let info = hover::hover(&d, mu_arg).unwrap();
    assert!(info.markdown.contains("real mu"), "{}", info.markdown);
    assert!(info.markdown.contains("function argument"));
}

#[test]
fn standalone_functions_file_is_checked_as_functions() {
    let text =
        "real half(real x) {\n  return x / 2;\n}\nreal quarter(real x) { return half(half(x)); }\n";
    let d = Document::new(
        text.to_owned(),
        1,
        SourceKind::of_path("lib.stanfunctions"),
        Encoding::Utf16,
    );
    assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
    let call = nth_word(text, "half", 1);
    assert_eq!(
        navigation::definition(&d, call),
        Some(word_span(text, "half", 0))
    );
    // The same text as a whole program is a syntax error.
    let as_program = Document::new(
        text.to_owned(),
        1,
        SourceKind::of_path("lib.stan"),
        Encoding::Utf16,
    );
    assert!(as_program.diagnostics.iter().any(|d| d.is_error()));
}

#[test]
fn semantic_tokens_tell_data_parameters_and_functions_apart() {
    use lsp::semantic_tokens::{TOKEN_MODIFIERS, TOKEN_TYPES, encode, tokens};
    let d = doc(MODEL);
    let tokens = tokens(&d);
    let describe = |span: Span| {
        let t = tokens
            .iter()
            .find(|t| t.span == span)
            .unwrap_or_else(|| panic!("no token at {span:?}"));
        let modifiers: Vec<&str> = (0..TOKEN_MODIFIERS.len())
            .filter(|bit| t.modifiers & (1 << bit) != 0)
            .map(|bit| TOKEN_MODIFIERS[bit])
            .collect();
        (TOKEN_TYPES[t.token_type as usize], modifiers)
    };
    assert_eq!(
        describe(word_span(MODEL, "sigma", 1)),
        ("variable", vec!["readonly"])
    );
    assert_eq!(
        describe(word_span(MODEL, "sigma", 0)),
        ("variable", vec!["declaration", "readonly"])
    );
    assert_eq!(describe(word_span(MODEL, "tau", 1)), ("variable", vec![]));
    assert_eq!(
        describe(word_span(MODEL, "x", 1)),
        ("parameter", vec!["declaration"])
    );
    assert_eq!(describe(word_span(MODEL, "twice", 2)), ("function", vec![]));
    assert_eq!(
        describe(word_span(MODEL, "normal_lpdf", 0)),
        ("function", vec!["defaultLibrary"])
    );
    assert_eq!(
        describe(word_span(MODEL, "normal", 0)),
        ("function", vec!["defaultLibrary"])
    );
    assert_eq!(
        describe(word_span(MODEL, "std_normal", 0)),
        ("function", vec!["defaultLibrary"])
    );
    // Wire form: decoding the relative positions gives back every token's
    // line and column.
    let data = encode(&d, &tokens);
    let (mut line, mut column) = (0u32, 0u32);
    for (token, chunk) in tokens.iter().zip(data.chunks_exact(5)) {
        if chunk[0] > 0 {
            column = 0;
        }
        line += chunk[0];
        column += chunk[1];
        let start = token.span.start as usize;
        let expected_line = MODEL[..start].matches('\n').count() as u32;
        let line_start = MODEL[..start].rfind('\n').map_or(0, |i| i + 1);
        let expected_column = MODEL[line_start..start].encode_utf16().count() as u32;
        assert_eq!((line, column), (expected_line, expected_column));
        assert_eq!(chunk[2] as usize, token.span.range().len());
    }
}
