//! Formatting and folding ranges: directly on documents and over JSON-RPC.
//! Expected lines are found in the source text, never hard-coded.

mod common;

use common::{Client, URI, document};
use lsp::document::{Document, SourceKind};
use lsp::folding::{Fold, FoldKind, folding_ranges};
use lsp::position::Encoding;
use serde_json::json;

const MODEL: &str = r#"// A model
// with a two-line header
functions {
  real twice(real x) {
    return 2 * x;
  }
}
data {
  int N;
  array[N] real y;
}
parameters {
  real mu;
}
model {
  /* a block comment
     over two lines */
  for (n in 1:N) {
    y[n] ~ normal(mu, 1);
    if (n > 1) {
      target += 0;
    } else {
      target += 1;
    }
  }
}
"#;

fn line_of(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in text"));
    text[..at].matches('\n').count()
}

/// A region from the line holding `open` to the line before the one
/// holding `close` (searched after `open`).
fn region(text: &str, open: &str, close: &str) -> Fold {
    let start = text.find(open).unwrap();
    let needle_at = start + text[start..].find(close).unwrap();
    let brace_at = needle_at + close.find('}').expect("close needle holds `}`");
    Fold {
        start_line: line_of(text, open),
        end_line: text[..brace_at].matches('\n').count() - 1,
        kind: FoldKind::Region,
    }
}

#[test]
fn folds_blocks_bodies_and_comments() {
    let doc = Document::new(MODEL.into(), 1, SourceKind::Program, Encoding::Utf16);
    let folds = folding_ranges(&doc);
    let expected = [
        Fold {
            start_line: 0,
            end_line: 1,
            kind: FoldKind::Comment,
        },
        region(MODEL, "functions {", "\n}"),
        region(MODEL, "real twice", "\n  }"),
        region(MODEL, "data {", "\n}"),
        region(MODEL, "parameters {", "\n}"),
        region(MODEL, "model {", "\n}\n"),
        Fold {
            start_line: line_of(MODEL, "/* a block"),
            end_line: line_of(MODEL, "over two lines"),
            kind: FoldKind::Comment,
        },
        region(MODEL, "for (n", "\n  }"),
        region(MODEL, "if (n > 1)", "} else"),
        region(MODEL, "} else {", "\n    }\n  }"),
    ];
    for fold in expected {
        assert!(folds.contains(&fold), "missing {fold:?} in {folds:?}");
    }
    // Nothing else.
    assert_eq!(folds.len(), expected.len(), "{folds:?}");
    for fold in &folds {
        assert!(fold.start_line < fold.end_line);
    }
}

#[test]
fn folds_survive_a_syntax_error_elsewhere() {
    let broken = MODEL.replace("real mu;", "real mu");
    let doc = Document::new(broken.clone(), 1, SourceKind::Program, Encoding::Utf16);
    let folds = folding_ranges(&doc);
    assert!(
        folds.contains(&region(&broken, "for (n", "\n  }")),
        "{folds:?}"
    );
}

#[tokio::test]
async fn formatting_and_folding_over_json_rpc() {
    let mut client = Client::start();
    let init = client.initialize().await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["documentFormattingProvider"], true);
    assert_eq!(caps["foldingRangeProvider"], true);

    let messy = "data { int N; } // count\nmodel {\n    target += N*2;\n}";
    client.open(messy, 1).await;
    let response = client
        .request(
            "textDocument/formatting",
            json!({"textDocument": document(), "options": {"tabSize": 4, "insertSpaces": true}}),
        )
        .await;
    let edits = response["result"].as_array().expect("edits");
    assert_eq!(edits.len(), 1, "{response}");
    let expected = language::format::format_program(messy).unwrap();
    assert_eq!(edits[0]["newText"], expected.as_str());
    // The edit replaces the whole document: from the start to the end of
    // the last line (which has no line break).
    let last_line = messy.lines().count() - 1;
    let last_len = messy.lines().last().unwrap().encode_utf16().count();
    assert_eq!(
        edits[0]["range"],
        json!({"start": {"line": 0, "character": 0},
               "end": {"line": last_line, "character": last_len}})
    );

    // Apply it as an editor would; formatting again has nothing to do.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 2},
                   "contentChanges": [{"range": edits[0]["range"], "text": expected}]}),
        )
        .await;
    let again = client
        .request(
            "textDocument/formatting",
            json!({"textDocument": document(), "options": {"tabSize": 2, "insertSpaces": true}}),
        )
        .await;
    assert_eq!(again["result"], json!([]), "{again}");
    assert_eq!(client.store.text(&URI.parse().unwrap()).unwrap(), expected);

    let folds = client
        .request(
            "textDocument/foldingRange",
            json!({"textDocument": document()}),
        )
        .await;
    let model_line = line_of(&expected, "model {");
    let close = expected.rfind('}').unwrap();
    let close_line = expected[..close].matches('\n').count();
    assert!(
        folds["result"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["startLine"] == model_line
                && f["endLine"] == close_line - 1
                && f["kind"] == "region"),
        "{folds}"
    );

    // Syntax errors: no edits, and the text is left alone.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 3},
                   "contentChanges": [{"text": "model { target += ; }"}]}),
        )
        .await;
    let refused = client
        .request(
            "textDocument/formatting",
            json!({"textDocument": document(), "options": {"tabSize": 2, "insertSpaces": true}}),
        )
        .await;
    assert!(refused.get("error").is_none(), "{refused}");
    assert_eq!(refused["result"], serde_json::Value::Null);
}
