//! No request may panic, whatever the text and the cursor: a panic would
//! take the editor's language server down. Every feature is queried at many
//! offsets of real programs, and of their prefixes (what the server sees
//! while a file is being typed), including text the parser gives up on.

use std::path::PathBuf;

use lsp::document::{Document, SourceKind};
use lsp::position::Encoding;
use lsp::{completion, hover, navigation, signature_help};

fn corpus_files() -> Vec<PathBuf> {
    let root = std::env::var_os("BAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("posteriordb-models"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "stan"))
        .collect();
    files.sort();
    // A deterministic spread of models keeps the test quick.
    files.into_iter().step_by(9).collect()
}

fn query_everywhere(document: &Document, step: usize) {
    let tokens = lsp::semantic_tokens::tokens(document);
    let _ = lsp::semantic_tokens::encode(document, &tokens);
    let _ = lsp::code_actions::quick_fixes(document, language::Span::new(0, document.text.len()));
    let len = document.text.len();
    for offset in (0..=len).step_by(step).chain([len]) {
        let _ = hover::hover(document, offset);
        let _ = navigation::definition(document, offset);
        let _ = navigation::references(document, offset, true);
        let _ = navigation::rename_range(document, offset);
        let _ = completion::complete(document, offset);
        let _ = signature_help::signature_help(document, offset);
    }
}

#[test]
fn no_panic_at_any_offset_of_real_models_or_their_prefixes() {
    let files = corpus_files();
    if files.is_empty() {
        assert!(std::env::var_os("CI").is_none(), "corpus missing in CI");
        return;
    }
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let mut document = Document::new(text.clone(), 1, SourceKind::Program, Encoding::Utf16);
        query_everywhere(&document, 7);
        // Rename every name once.
        if let Some(checked) = &document.checked {
            for symbol in &checked.symbols {
                let _ = navigation::rename(
                    &document,
                    symbol.def_span.start as usize,
                    "renamed_x",
                    SourceKind::Program,
                );
            }
        }
        for cut in (0..text.len())
            .step_by(61)
            .filter(|&c| text.is_char_boundary(c))
        {
            document.update(
                text[..cut].to_owned(),
                2,
                SourceKind::Program,
                Encoding::Utf16,
            );
            query_everywhere(&document, 13);
        }
    }
}

#[test]
fn no_panic_on_non_ascii_and_garbage() {
    for text in [
        "",
        "}",
        "model { real σ = 1; σ ~ normal(0, 1); } // 😀",
        "data { int N; } model { f(((( , , | ",
        "\u{feff}parameters { real x; } model { x ~ }",
        "functions { real f_lpdf(real y) { return y; } } model { 1 ~ f(",
        "model { /* unterminated",
        "model { print(\"unterminated); }",
    ] {
        let document = Document::new(text.to_owned(), 1, SourceKind::Program, Encoding::Utf16);
        query_everywhere(&document, 1);
    }
}
