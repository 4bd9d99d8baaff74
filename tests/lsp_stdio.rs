//! `bat lsp` as an editor starts it: JSON-RPC over the process's stdin and
//! stdout. Diagnostics arrive for an opened file and again (checked in the
//! background) after a change; hover, definition, completion and
//! formatting answer; and the process ends promptly after `shutdown` +
//! `exit` although the pipe stays open.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn frame(json: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{json}", json.len()).into_bytes()
}

fn read_message(reader: &mut impl BufRead) -> serde_json::Value {
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// The response to request `id`, skipping notifications in between.
fn response(reader: &mut impl BufRead, id: i64) -> serde_json::Value {
    loop {
        let message = read_message(reader);
        if message["id"] == id {
            return message;
        }
    }
}

fn request(id: i64, method: &str, params: serde_json::Value) -> Vec<u8> {
    let message =
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    frame(&message.to_string())
}

#[test]
fn bat_lsp_serves_stdio_and_exits_after_exit() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bat"))
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());

    stdin
        .write_all(&frame(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#,
        ))
        .unwrap();
    let init = read_message(&mut stdout);
    assert_eq!(init["result"]["serverInfo"]["name"], "bat");
    stdin
        .write_all(&frame(
            r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
        ))
        .unwrap();
    let open = r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///m.stan","languageId":"stan","version":1,"text":"model { x ~ normal(0, 1); }"}}}"#;
    stdin.write_all(&frame(open)).unwrap();
    let published = read_message(&mut stdout);
    assert_eq!(published["method"], "textDocument/publishDiagnostics");
    assert_eq!(published["params"]["diagnostics"][0]["code"], "E0101");

    // Declare `x`: the change is checked in the background and published.
    let fixed = "parameters { real x; }\nmodel { x ~ normal(0,1); }";
    let change = serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
        "params": {"textDocument": {"uri": "file:///m.stan", "version": 2},
                   "contentChanges": [{"text": fixed}]}});
    stdin.write_all(&frame(&change.to_string())).unwrap();
    let published = read_message(&mut stdout);
    assert_eq!(published["params"]["version"], 2, "{published}");
    assert_eq!(published["params"]["diagnostics"], serde_json::json!([]));

    // `x` in `x ~ normal` is on line 1 at column 8.
    let at = serde_json::json!({"textDocument": {"uri": "file:///m.stan"},
                                "position": {"line": 1, "character": 8}});
    stdin
        .write_all(&request(10, "textDocument/hover", at.clone()))
        .unwrap();
    let hover = response(&mut stdout, 10);
    let value = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(value.contains("real x"), "{hover}");
    stdin
        .write_all(&request(11, "textDocument/definition", at.clone()))
        .unwrap();
    let definition = response(&mut stdout, 11);
    assert_eq!(
        definition["result"]["range"]["start"],
        serde_json::json!({"line": 0, "character": 18})
    );
    stdin
        .write_all(&request(12, "textDocument/completion", at))
        .unwrap();
    let completion = response(&mut stdout, 12);
    let labels: Vec<&str> = completion["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["label"].as_str())
        .collect();
    assert!(labels.contains(&"x"), "{labels:?}");
    let format = serde_json::json!({"textDocument": {"uri": "file:///m.stan"},
                                    "options": {"tabSize": 2, "insertSpaces": true}});
    stdin
        .write_all(&request(13, "textDocument/formatting", format))
        .unwrap();
    let formatting = response(&mut stdout, 13);
    assert_eq!(
        formatting["result"][0]["newText"],
        "parameters {\n  real x;\n}\nmodel {\n  x ~ normal(0, 1);\n}\n"
    );

    stdin
        .write_all(&frame(r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#))
        .unwrap();
    let shutdown = read_message(&mut stdout);
    assert_eq!(shutdown["id"], 2);
    assert!(shutdown.get("error").is_none(), "{shutdown}");
    stdin
        .write_all(&frame(r#"{"jsonrpc":"2.0","method":"exit"}"#))
        .unwrap();
    stdin.flush().unwrap();

    // Keep `stdin` open: the server must not wait for the pipe to close.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let Some(status) = status else {
        child.kill().unwrap();
        panic!("bat lsp still running 10 s after exit");
    };
    assert!(status.success());
    drop(stdin);
}
