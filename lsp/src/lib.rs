//! bat's language server: live diagnostics, hover, go to definition, find
//! references, highlights, rename, completion, signature help, the
//! document outline, folding ranges and formatting for Stan programs, all computed from the compiler's own
//! parse and check results (`language::compile_front_end`).
//!
//! Layout: [`document`] holds one open text and its front-end results;
//! [`diagnostics`], [`hover`], [`navigation`], [`completion`],
//! [`signature_help`] and [`symbols`] answer questions about a document in
//! byte offsets; [`position`] converts offsets to LSP positions (UTF-16 by
//! default); [`server`] is the tower-lsp glue.

pub mod code_actions;
pub mod completion;
pub mod diagnostics;
pub mod document;
mod exit;
pub mod folding;
pub mod formatting;
pub mod hover;
pub mod navigation;
pub mod position;
pub mod semantic_tokens;
pub mod server;
pub mod signature_help;
pub mod store;
pub mod symbols;

use tower_lsp::{LspService, Server};

/// Serve LSP over stdin/stdout until the client sends `exit`
/// (what `bat lsp` runs).
pub fn run_stdio() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(tokio::io::stdin(), tokio::io::stdout()));
    // tokio reads stdin on a blocking thread that would keep the process
    // alive until the editor closes the pipe; after `exit`, do not wait.
    runtime.shutdown_background();
    Ok(())
}

/// Serve LSP over any byte streams (stdio, or in-memory pipes in tests),
/// returning when the client sends `exit` or closes the input.
pub async fn serve<I, O>(input: I, output: O)
where
    I: tokio::io::AsyncRead + Unpin,
    O: tokio::io::AsyncWrite,
{
    let (service, socket) = LspService::new(server::Backend::new);
    let (exited, on_exit) = tokio::sync::oneshot::channel();
    let service = exit::ExitWatch::new(service, exited);
    // tower-lsp only notices `exit` when the next message arrives, which a
    // client that waits for the process to end never sends.
    tokio::select! {
        () = Server::new(input, output, socket).serve(service) => {}
        _ = on_exit => {}
    }
}

/// Serve one client's whole byte stream `input` (what `bat lsp` would read
/// on stdin, ending with the input closed) and return what the server wrote
/// back. The LSP fuzz target and its regression tests call this: any bytes
/// must end in a reply or silence, never a panic or a hang.
pub fn serve_bytes(input: &[u8]) -> Vec<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime starts");
    let output = SharedOutput::default();
    runtime.block_on(serve(input, output.clone()));
    drop(runtime);
    std::mem::take(&mut *output.0.lock().unwrap_or_else(|e| e.into_inner()))
}

/// An output stream whose bytes are kept for [`serve_bytes`].
#[derive(Clone, Default)]
struct SharedOutput(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl tokio::io::AsyncWrite for SharedOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        out.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}
