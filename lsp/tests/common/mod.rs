//! An in-memory LSP client for the server tests: JSON-RPC framing over a
//! duplex pipe, a handle on the server's document store (to compare its
//! text with the client's), and a time limit on every wait.

#![allow(dead_code)] // each test file uses part of this

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf,
};
use tower_lsp::{LspService, Server};

pub const URI: &str = "file:///tmp/model.stan";

/// How long any single response may take before the test calls it a hang.
pub const TIME_LIMIT: Duration = Duration::from_secs(20);

pub struct Client {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    next_id: i64,
    pub store: Arc<lsp::store::Store>,
    /// Every publishDiagnostics seen, in arrival order.
    pub published: Vec<Value>,
}

impl Client {
    pub fn start() -> Client {
        let (client_end, server_end) = tokio::io::duplex(1 << 22);
        let (server_in, server_out) = tokio::io::split(server_end);
        let (service, socket) = LspService::new(lsp::server::Backend::new);
        let store = service.inner().store().clone();
        tokio::spawn(Server::new(server_in, server_out, socket).serve(service));
        let (reader, writer) = tokio::io::split(client_end);
        Client {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
            store,
            published: Vec::new(),
        }
    }

    pub fn frame(message: &Value) -> Vec<u8> {
        let body = message.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    async fn receive_inner(&mut self) -> Value {
        let mut length = None;
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).await.unwrap();
            assert!(n > 0, "server closed the connection");
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
        serde_json::from_slice(&body).expect("server sent invalid JSON")
    }

    /// The next message, recording diagnostics; panics after [`TIME_LIMIT`].
    pub async fn receive(&mut self) -> Value {
        let message = tokio::time::timeout(TIME_LIMIT, self.receive_inner())
            .await
            .expect("no message from the server within the time limit (hang?)");
        if message["method"] == "textDocument/publishDiagnostics" {
            self.published.push(message["params"].clone());
        }
        message
    }

    pub fn notification(method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let frame = Client::frame(&Client::notification(method, params));
        self.send_raw(&frame).await;
    }

    /// Send a request and return the whole response (`result` or `error`).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send_raw(&Client::frame(&message)).await;
        loop {
            let message = self.receive().await;
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    pub async fn initialize(&mut self) -> Value {
        let init = self
            .request(
                "initialize",
                json!({"capabilities": {}, "processId": null, "rootUri": null}),
            )
            .await;
        self.notify("initialized", json!({})).await;
        init
    }

    pub async fn open(&mut self, text: &str, version: i32) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": URI, "languageId": "stan", "version": version, "text": text}}),
        )
        .await;
    }

    /// Wait until diagnostics for `version` are published; returns them.
    pub async fn diagnostics_for(&mut self, version: i32) -> Value {
        if let Some(p) = self.published.iter().find(|p| p["version"] == version) {
            return p.clone();
        }
        loop {
            let message = self.receive().await;
            if message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["version"] == version
            {
                return message["params"].clone();
            }
        }
    }
}

pub fn document() -> Value {
    json!({"uri": URI})
}

/// Byte offsets where lines start; lines end at `\n`, `\r\n` or a lone
/// `\r` (the protocol's definition, written independently of the server).
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let next = chars.get(k + 1).map(|&(_, c)| c);
        if c == '\n' || (c == '\r' && next != Some('\n')) {
            starts.push(i + 1);
        }
    }
    starts
}

/// Number of lines of `text` as the protocol counts them.
pub fn line_count(text: &str) -> usize {
    line_starts(text).len()
}

/// The LSP position (UTF-16 columns) of byte `offset` in `text`.
pub fn position(text: &str, offset: usize) -> Value {
    let starts = line_starts(text);
    let line = starts.iter().rposition(|&s| s <= offset).unwrap();
    let character = text[starts[line]..offset].encode_utf16().count();
    json!({"line": line, "character": character})
}

/// `offset` moved off the middle of a `\r\n` (not a position).
pub fn not_inside_crlf(text: &str, offset: usize) -> usize {
    if offset > 0 && text[..offset].ends_with('\r') && text[offset..].starts_with('\n') {
        offset - 1
    } else {
        offset
    }
}
