//! End to end over JSON-RPC: a scripted client talks to the real server
//! through in-memory pipes, with the framing and message shapes an editor
//! uses (initialize, didOpen, didChange, hover, definition, rename,
//! completion, shutdown, exit).

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf,
};

struct Client {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    next_id: i64,
    server: tokio::task::JoinHandle<()>,
}

impl Client {
    fn start() -> Client {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_in, server_out) = tokio::io::split(server_end);
        let server = tokio::spawn(lsp::serve(server_in, server_out));
        let (reader, writer) = tokio::io::split(client_end);
        Client {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
            server,
        }
    }

    async fn send(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.writer.write_all(frame.as_bytes()).await.unwrap();
    }

    async fn receive(&mut self) -> Value {
        let mut length = None;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).await.unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                length = Some(n.parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; length.expect("Content-Length header")];
        self.reader.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    async fn notify(&mut self, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(message).await;
    }

    /// Send a request and return its result, skipping notifications.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        // `shutdown` takes no params at all (not even null).
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(message).await;
        loop {
            let message = self.receive().await;
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    async fn next_diagnostics(&mut self) -> Value {
        loop {
            let message = self.receive().await;
            if message["method"] == "textDocument/publishDiagnostics" {
                return message["params"].clone();
            }
        }
    }
}

const URI: &str = "file:///tmp/model.stan";

fn at(line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character}})
}

#[tokio::test]
async fn editor_session_end_to_end() {
    let mut client = Client::start();
    let init = client
        .request(
            "initialize",
            json!({"capabilities": {}, "processId": null, "rootUri": null}),
        )
        .await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-16");
    assert_eq!(caps["hoverProvider"], true);
    client.notify("initialized", json!({})).await;

    // Line 2 has a non-ASCII comment before the error so the column is in
    // UTF-16 units: "  // σ😀\n" does not shift line 3's columns, but the
    // misspelled `sigm` on line 3 must be reported at its UTF-16 column.
    let text = "data {\n  real sigma;\n}\nmodel { /* σ😀 */ sigm ~ normal(0, 1); }\n";
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": URI, "languageId": "stan", "version": 1, "text": text}}),
        )
        .await;
    let published = client.next_diagnostics().await;
    assert_eq!(published["uri"], URI);
    assert_eq!(published["version"], 1);
    let diagnostics = published["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    let d = &diagnostics[0];
    let line3 = text.lines().nth(3).unwrap();
    let col = line3[..line3.find("sigm ").unwrap()].encode_utf16().count();
    assert_eq!(d["range"]["start"], json!({"line": 3, "character": col}));
    assert_eq!(d["range"]["end"], json!({"line": 3, "character": col + 4}));
    assert_eq!(d["severity"], 1);
    assert_eq!(d["source"], "bat");
    assert_eq!(d["code"], "E0101");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("did you mean 'sigma'")
    );

    // The quick fix from the "did you mean" help replaces exactly `sigm`.
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": URI}, "range": d["range"], "context": {"diagnostics": [d]}}),
        )
        .await;
    let action = &actions["result"][0];
    assert_eq!(action["kind"], "quickfix");
    let edit = &action["edit"]["changes"][URI][0];
    assert_eq!(edit["newText"], "sigma");
    assert_eq!(edit["range"], d["range"]);

    // Fix it with an incremental edit: insert "a" after "sigm".
    let fix = json!({"start": {"line": 3, "character": col + 4}, "end": {"line": 3, "character": col + 4}});
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 2},
                   "contentChanges": [{"range": fix, "text": "a"}]}),
        )
        .await;
    let published = client.next_diagnostics().await;
    assert_eq!(published["version"], 2);
    assert_eq!(published["diagnostics"], json!([]));

    // Go to definition from the use on line 3 lands on line 1's declaration.
    let definition = client
        .request("textDocument/definition", at(3, col as u32 + 1))
        .await;
    let range = &definition["result"]["range"];
    assert_eq!(range["start"], json!({"line": 1, "character": 7}));
    assert_eq!(range["end"], json!({"line": 1, "character": 12}));

    let hover = client
        .request("textDocument/hover", at(3, col as u32 + 1))
        .await;
    let value = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(
        value.contains("real sigma") && value.contains("data variable"),
        "{value}"
    );

    let rename = client
        .request(
            "textDocument/rename",
            json!({"textDocument": {"uri": URI}, "position": {"line": 1, "character": 8}, "newName": "s"}),
        )
        .await;
    let edits = rename["result"]["changes"][URI].as_array().unwrap();
    assert_eq!(edits.len(), 2);
    assert!(edits.iter().all(|e| e["newText"] == "s"));

    let bad_rename = client
        .request(
            "textDocument/rename",
            json!({"textDocument": {"uri": URI}, "position": {"line": 1, "character": 8}, "newName": "for"}),
        )
        .await;
    assert!(bad_rename["error"]["message"].is_string(), "{bad_rename}");

    let completion = client
        .request("textDocument/completion", at(3, col as u32 + 3))
        .await;
    let labels: Vec<&str> = completion["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"sigma"), "{labels:?}");

    let outline = client
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(outline["result"][0]["name"], "data");
    assert_eq!(outline["result"][0]["children"][0]["name"], "sigma");

    client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    let cleared = client.next_diagnostics().await;
    assert_eq!(cleared["diagnostics"], json!([]));

    let shutdown = client.request("shutdown", Value::Null).await;
    assert!(shutdown.get("error").is_none(), "{shutdown}");
    assert_eq!(shutdown["result"], Value::Null);

    // After `exit` the server stops although its input is still open.
    client.notify("exit", Value::Null).await;
    let stopped = tokio::time::timeout(std::time::Duration::from_secs(10), client.server).await;
    assert!(stopped.is_ok(), "server still running after exit");
}

#[tokio::test]
async fn utf8_positions_when_the_client_offers_them() {
    let mut client = Client::start();
    let init = client
        .request(
            "initialize",
            json!({"capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}}}),
        )
        .await;
    assert_eq!(init["result"]["capabilities"]["positionEncoding"], "utf-8");
    client.notify("initialized", json!({})).await;
    let text = "model { /* σ */ x ~ normal(0, 1); }\n";
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": URI, "languageId": "stan", "version": 1, "text": text}}),
        )
        .await;
    let published = client.next_diagnostics().await;
    let d = &published["diagnostics"][0];
    assert_eq!(d["range"]["start"]["character"], text.find("x ~").unwrap());
}
