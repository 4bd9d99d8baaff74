//! A randomized edit stream: thousands of random edits (brackets,
//! keywords, partial declarations, unicode including astral characters,
//! deletions, whole-text replacements) sent as incremental `didChange`
//! ranges in UTF-16, with hover, completion, definition, signature help,
//! formatting, semantic tokens, folding and outline requests in between.
//!
//! Asserts: no request fails or times out (hang), every response has the
//! shape the protocol promises with ranges inside the document, the
//! server's text always equals the text the client maintains, published
//! versions only move forward, and the final version gets diagnostics.
//!
//! Fixed seed, 2,000 edits by default; BAT_FULL_SWEEP=1 runs 20,000 and
//! BAT_EDIT_SEED picks another seed.

mod common;

use common::{Client, URI, document, line_count, not_inside_crlf, position};
use serde_json::{Value, json};

/// splitmix64: small, seedable, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const START: &str = r#"functions {
  real twice(real x) { return 2 * x; }
}
data {
  int<lower=0> J; // schools σ
  array[J] real y;
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
    y[j] ~ normal(theta[j], sigma[j]);
  }
  eta ~ std_normal();
  mu ~ normal(twice(0.5), 5); /* 😀 */
}
"#;

const SNIPPETS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    "~",
    "|",
    "<",
    ">",
    "=",
    "+=",
    "'",
    "\"",
    ".",
    ":",
    "/*",
    "*/",
    "//",
    "#",
    "\n",
    " ",
    "\t",
    "model",
    "data",
    "parameters",
    "transformed",
    "generated quantities {",
    "functions",
    "for (i in 1:N) {",
    "while (",
    "if (",
    "else",
    "real x;",
    "vector[",
    "array[J] ",
    "int<lower=",
    "matrix[2, 2] m = ",
    "target += ",
    "normal(",
    "normal_lpdf(y | ",
    "twice(",
    "mu",
    "theta[",
    "return ",
    "profile(\"p\") {",
    "1e",
    "2.5",
    ".5i",
    "σ",
    "😀",
    "🦀x",
    "é",
    "\u{200B}",
    "\u{FEFF}",
    "𝔁 = 1;",
    "\r\n",
    "tuple(real, ",
    "T[0, ]",
    "print(\"",
    "reject(",
    "jacobian += ",
];

/// A random character boundary of `text`.
fn boundary(rng: &mut Rng, text: &str) -> usize {
    let mut at = rng.below(text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    not_inside_crlf(text, at)
}

/// One random edit: (start, end, inserted text), byte offsets in `text`.
fn random_edit(rng: &mut Rng, text: &str) -> (usize, usize, String) {
    let start = boundary(rng, text);
    match rng.below(10) {
        // Delete up to a dozen characters.
        0..=2 => {
            let mut end = start;
            for _ in 0..rng.below(12) + 1 {
                match text[end..].chars().next() {
                    Some(c) => end += c.len_utf8(),
                    None => break,
                }
            }
            (start, not_inside_crlf(text, end), String::new())
        }
        // Replace a short range with a snippet.
        3 => {
            let end = (start + rng.below(6)).min(text.len());
            let end = (start..=end)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap();
            (
                start,
                not_inside_crlf(text, end),
                rng.pick(SNIPPETS).to_string(),
            )
        }
        // Insert one or a few snippets.
        _ => {
            let mut insert = String::new();
            for _ in 0..rng.below(3) + 1 {
                insert.push_str(rng.pick(SNIPPETS));
            }
            (start, start, insert)
        }
    }
}

/// A range `{start, end}` is inside a text of `lines` lines.
fn check_range(range: &Value, lines: usize, what: &str) {
    for end in ["start", "end"] {
        let line = range[end]["line"].as_u64();
        let character = range[end]["character"].as_u64();
        assert!(
            line.is_some_and(|l| (l as usize) <= lines) && character.is_some(),
            "{what}: bad range {range}"
        );
    }
}

fn check_response(method: &str, response: &Value, text: &str) {
    assert!(
        response.get("error").is_none(),
        "{method} failed: {response}"
    );
    let result = &response["result"];
    let lines = line_count(text);
    let items = |v: &Value| v.as_array().cloned().unwrap_or_default();
    match method {
        "textDocument/hover" => {
            if !result.is_null() {
                assert!(result["contents"]["value"].is_string(), "{result}");
                check_range(&result["range"], lines, method);
            }
        }
        "textDocument/completion" => {
            assert!(result.is_null() || result.is_array(), "{result}");
            for item in items(result) {
                assert!(item["label"].is_string(), "{item}");
            }
        }
        "textDocument/definition" => {
            if !result.is_null() {
                assert_eq!(result["uri"], URI);
                check_range(&result["range"], lines, method);
            }
        }
        "textDocument/signatureHelp" => {
            if !result.is_null() {
                assert!(result["signatures"].is_array(), "{result}");
            }
        }
        "textDocument/formatting" => {
            assert!(result.is_null() || result.is_array(), "{result}");
            for edit in items(result) {
                check_range(&edit["range"], lines, method);
                let formatted = edit["newText"].as_str().expect("newText");
                // Only valid programs are formatted, into valid programs.
                assert_eq!(
                    language::format::format_program(formatted).ok().as_deref(),
                    Some(formatted)
                );
            }
        }
        "textDocument/semanticTokens/full" => {
            let data = items(&result["data"]);
            assert!(data.len() % 5 == 0, "{result}");
            assert!(data.iter().all(Value::is_u64));
        }
        "textDocument/foldingRange" => {
            for fold in items(result) {
                let (start, end) = (fold["startLine"].as_u64(), fold["endLine"].as_u64());
                assert!(
                    start
                        .zip(end)
                        .is_some_and(|(s, e)| s < e && (e as usize) < lines),
                    "{fold}"
                );
            }
        }
        "textDocument/documentSymbol" => {
            for symbol in items(result) {
                assert!(symbol["name"].is_string());
                check_range(&symbol["range"], lines, method);
            }
        }
        _ => unreachable!("{method}"),
    }
}

const REQUESTS: &[&str] = &[
    "textDocument/hover",
    "textDocument/completion",
    "textDocument/definition",
    "textDocument/signatureHelp",
    "textDocument/formatting",
    "textDocument/semanticTokens/full",
    "textDocument/foldingRange",
    "textDocument/documentSymbol",
];

#[tokio::test]
async fn random_edits_never_crash_hang_or_desynchronise_the_server() {
    let full = std::env::var("BAT_FULL_SWEEP").is_ok_and(|v| v == "1");
    let edits = if full { 20_000 } else { 2_000 };
    let seed = std::env::var("BAT_EDIT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_u64);
    let mut rng = Rng(seed);
    let uri = URI.parse().unwrap();

    let mut client = Client::start();
    client.initialize().await;
    let mut text = START.to_string();
    client.open(&text, 1).await;
    let mut version = 1;

    for step in 0..edits {
        version += 1;
        let change = if rng.below(300) == 0 {
            // Now and then the editor sends the whole text.
            text = START.replace("mu", rng.pick(&["mu", "m😀u", "μ"]));
            json!({"text": text})
        } else {
            let (start, end, insert) = random_edit(&mut rng, &text);
            let range = json!({"start": position(&text, start), "end": position(&text, end)});
            text.replace_range(start..end, &insert);
            json!({"range": range, "text": insert})
        };
        client
            .notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": URI, "version": version},
                       "contentChanges": [change]}),
            )
            .await;
        // Keep the text from growing without bound.
        if text.len() > 4 * START.len() {
            version += 1;
            text = START.to_string();
            client
                .notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": URI, "version": version},
                           "contentChanges": [{"text": text}]}),
                )
                .await;
        }
        if step % 7 == 0 {
            let method = rng.pick(REQUESTS);
            let at = position(&text, boundary(&mut rng, &text));
            let params = match method {
                "textDocument/formatting" => json!({"textDocument": document(),
                    "options": {"tabSize": 2, "insertSpaces": true}}),
                "textDocument/semanticTokens/full"
                | "textDocument/foldingRange"
                | "textDocument/documentSymbol" => json!({"textDocument": document()}),
                _ => json!({"textDocument": document(), "position": at}),
            };
            let response = client.request(method, params).await;
            check_response(method, &response, &text);
            assert_eq!(
                client.store.text(&uri).as_deref(),
                Some(text.as_str()),
                "server text differs from the client's after {step} edits (seed {seed})"
            );
        }
    }
    // The last version is checked and published.
    let last = client.diagnostics_for(version).await;
    assert!(last["diagnostics"].is_array());
    assert_eq!(client.store.text(&uri).as_deref(), Some(text.as_str()));
    let versions: Vec<i64> = client
        .published
        .iter()
        .map(|p| p["version"].as_i64().unwrap())
        .collect();
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "published versions went backwards"
    );
    eprintln!(
        "{edits} edits, {} publications, final text {} bytes",
        versions.len(),
        text.len()
    );
}
