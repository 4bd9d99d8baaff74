//! `bat lsp` as an editor starts it: JSON-RPC over the process's stdin and
//! stdout. Diagnostics arrive for an opened file, and the process ends
//! promptly after `shutdown` + `exit` although the pipe stays open.

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
