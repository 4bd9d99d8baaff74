//! Edits arriving faster than checking are coalesced: a burst of changes
//! gets diagnostics for its last version only, and no version older than
//! one already published ever follows it.

mod common;

use common::{Client, URI};
use serde_json::json;

const VALID: &str = "parameters {\n  real mu;\n}\nmodel {\n  mu ~ normal(0, 1);\n}\n";

/// `count` changes, each appending one character to a comment, as one
/// burst of bytes (an editor flushing keystrokes faster than checking);
/// the last change breaks the program so its diagnostics are recognisable.
fn burst(count: i32) -> (Vec<u8>, i32) {
    let mut bytes = Vec::new();
    let mut text = VALID.to_string();
    text.push_str("//");
    let mut version = 2;
    for i in 0..count {
        let last = i == count - 1;
        let insert = if last { "\nmodel" } else { "x" };
        let line = text.matches('\n').count();
        let character = text.len() - text.rfind('\n').unwrap() - 1;
        let at = json!({"line": line, "character": character});
        bytes.extend(Client::frame(&Client::notification(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": version},
                   "contentChanges": [{"range": {"start": at, "end": at}, "text": insert}]}),
        )));
        text.push_str(insert);
        version += 1;
    }
    (bytes, version - 1)
}

async fn burst_of_edits(count: i32) -> (Client, i32) {
    let mut client = Client::start();
    client.initialize().await;
    client.open(VALID, 1).await;
    let first = client.diagnostics_for(1).await;
    assert_eq!(first["diagnostics"], json!([]));
    let (bytes, last) = burst(count);
    client.send_raw(&bytes).await;
    let published = client.diagnostics_for(last).await;
    // A second `model` block is a syntax error: these are the last text's.
    assert!(
        !published["diagnostics"].as_array().unwrap().is_empty(),
        "{published}"
    );
    (client, last)
}

#[tokio::test]
async fn a_burst_of_edits_publishes_only_its_last_version() {
    let (client, last) = burst_of_edits(50).await;
    let versions: Vec<i64> = client
        .published
        .iter()
        .map(|p| p["version"].as_i64().unwrap())
        .collect();
    // Version 1 (on open), then only the burst's last version: the 49
    // intermediate texts were never checked or published.
    assert_eq!(versions, vec![1, last as i64]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_versions_only_move_forward_on_a_threaded_runtime() {
    let (mut client, last) = burst_of_edits(200).await;
    // A request after the burst must see the newest text.
    let symbols = client
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert!(symbols.get("error").is_none());
    assert_eq!(
        client
            .store
            .text(&URI.parse().unwrap())
            .unwrap()
            .matches("model")
            .count(),
        2
    );
    let versions: Vec<i64> = client
        .published
        .iter()
        .map(|p| p["version"].as_i64().unwrap())
        .collect();
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "published out of order or twice: {versions:?}"
    );
    assert_eq!(*versions.last().unwrap(), last as i64);
    // Coalesced: far fewer checks published than edits sent.
    assert!(
        versions.len() < 20,
        "{} publications for 200 edits",
        versions.len()
    );
}
