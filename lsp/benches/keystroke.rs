//! Keystroke latency: time from a `didChange` (one typed character) in a
//! generated 2,000-line model to the `publishDiagnostics` for that version,
//! through the real server over in-memory JSON-RPC. Prints a table.
//!
//! `cargo bench -p lsp --bench keystroke` (target: under 30 ms).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const URI: &str = "file:///bench/model.stan";

/// A valid model of about `lines` lines: data, parameters, transformed
/// parameters with loops, a model block with many sampling statements.
fn generate_model(lines: usize) -> String {
    // Each group below writes 16 lines.
    let groups = lines / 16;
    let mut data = String::from("data {\n  int<lower=1> N;\n");
    let mut parameters = String::from("parameters {\n");
    let mut transformed = String::from("transformed parameters {\n");
    let mut model = String::from("model {\n");
    for g in 0..groups {
        data.push_str(&format!("  vector[N] y{g}; // observations of group {g}\n"));
        data.push_str(&format!("  matrix[N, 3] x{g};\n"));
        parameters.push_str(&format!("  real mu{g};\n  real<lower=0> sigma{g};\n"));
        parameters.push_str(&format!("  vector[3] beta{g};\n"));
        transformed.push_str(&format!("  vector[N] eta{g} = x{g} * beta{g} + mu{g};\n"));
        model.push_str(&format!(
            "  mu{g} ~ normal(0, 10);\n  sigma{g} ~ exponential(1);\n  beta{g} ~ std_normal();\n\
             \x20 for (n in 1:N) {{\n    if (n > 1) {{\n      target += -0.5 * square(eta{g}[n] - eta{g}[n - 1]);\n    }}\n  }}\n\
             \x20 y{g} ~ normal(eta{g}, sigma{g});\n\n"
        ));
    }
    format!("{data}}}\n{parameters}}}\n{transformed}}}\n{model}}}\n")
}

struct Client {
    reader: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl Client {
    async fn send(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.writer.write_all(frame.as_bytes()).await.unwrap();
    }

    async fn receive(&mut self) -> Value {
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).await.unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                length = n.parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    async fn diagnostics_for(&mut self, version: i64) -> usize {
        loop {
            let message = self.receive().await;
            if message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["version"] == version
            {
                return message["params"]["diagnostics"].as_array().unwrap().len();
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn main() {
    let text = generate_model(2_000);
    let line_count = text.lines().count();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client_end, server_end) = tokio::io::duplex(1 << 22);
        let (server_in, server_out) = tokio::io::split(server_end);
        tokio::spawn(lsp::serve(server_in, server_out));
        let (reader, writer) = tokio::io::split(client_end);
        let mut client = Client {
            reader: BufReader::new(reader),
            writer,
        };
        client
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"capabilities": {}, "processId": null}}))
            .await;
        client.receive().await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": URI, "languageId": "stan", "version": 1, "text": text}}}))
            .await;
        assert_eq!(client.diagnostics_for(1).await, 0, "generated model must be valid");

        // Type into a comment in the middle of the file: every keystroke
        // rechecks the whole program.
        let line = text.lines().position(|l| l.contains("// observations")).unwrap() + 40;
        let line = line.min(line_count / 2);
        let column = text.lines().nth(line).unwrap().encode_utf16().count();
        let mut samples = Vec::new();
        let mut version = 1;
        for i in 0..60 {
            version += 1;
            let at = json!({"line": line, "character": column + i});
            let typed = if i == 0 { " //" } else { "x" };
            let started = Instant::now();
            client
                .send(json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
                    "params": {"textDocument": {"uri": URI, "version": version},
                        "contentChanges": [{"range": {"start": at, "end": at}, "text": typed}]}}))
                .await;
            let diagnostics = client.diagnostics_for(version).await;
            samples.push(started.elapsed());
            assert_eq!(diagnostics, 0);
            if i == 0 {
                samples.clear(); // the first edit warms caches
            }
        }
        samples.sort();
        let front_end = {
            let started = Instant::now();
            let runs = 10;
            for _ in 0..runs {
                std::hint::black_box(language::compile_front_end(&text));
            }
            started.elapsed() / runs
        };
        println!("keystroke → publishDiagnostics, {line_count}-line model ({} bytes), {} keystrokes", text.len(), samples.len());
        println!("{:<28} {:>10}", "measure", "ms");
        println!("{:<28} {:>10}", "median", ms(percentile(&samples, 0.5)));
        println!("{:<28} {:>10}", "p90", ms(percentile(&samples, 0.9)));
        println!("{:<28} {:>10}", "max", ms(*samples.last().unwrap()));
        println!("{:<28} {:>10}", "front end alone (mean)", ms(front_end));
        println!("target: median under 30 ms");
    });
}
