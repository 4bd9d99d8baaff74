//! Noticing the `exit` notification as soon as it arrives.

use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tower::Service;
use tower_lsp::jsonrpc::Request;

/// Forwards every message to the inner service and fires `exited` when
/// the client's `exit` notification passes through.
pub struct ExitWatch<S> {
    inner: S,
    exited: Option<oneshot::Sender<()>>,
}

impl<S> ExitWatch<S> {
    pub fn new(inner: S, exited: oneshot::Sender<()>) -> ExitWatch<S> {
        ExitWatch {
            inner,
            exited: Some(exited),
        }
    }
}

impl<S: Service<Request>> Service<Request> for ExitWatch<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let is_exit = request.method() == "exit";
        let future = self.inner.call(request);
        if is_exit && let Some(exited) = self.exited.take() {
            // The receiver is gone only if serving already ended.
            let _ = exited.send(());
        }
        future
    }
}
