//! Open documents, their pending edits, and background checking with
//! coalescing.
//!
//! An edit only updates the document's *pending* text (cheap); checking
//! runs in one background task per document, off the message loop (on a
//! blocking thread), always on the newest pending text. Edits that arrive
//! while a check runs are coalesced into the next check, and a check whose
//! text has been superseded is dropped unpublished.
//!
//! Invariants:
//! - `Entry::document` is the last *analysed* text; `Entry::pending`, when
//!   present, is newer text that has not been analysed yet;
//! - diagnostics are published only for the entry's newest text (no
//!   pending text newer than them exists when they are sent), and at most
//!   once per version;
//! - at most one check task per document (`Entry::checking`);
//! - a request (hover, formatting, ...) first brings the document up to
//!   date synchronously ([`Store::with_fresh`]), so answers always refer to
//!   the text the client has.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tower_lsp::Client;
use tower_lsp::lsp_types::Url;

use crate::diagnostics;
use crate::document::{Document, SourceKind};
use crate::position::Encoding;

/// Text the client has sent but the compiler has not seen yet.
struct Pending {
    text: String,
    version: i32,
    /// Counts edits, so a check is matched to its exact text even if a
    /// client reuses a version number.
    revision: u64,
}

struct Entry {
    document: Document,
    pending: Option<Pending>,
    /// A check task is running for this document.
    checking: bool,
    /// The last version whose diagnostics were published.
    published: Option<i32>,
    /// Edits applied so far.
    revisions: u64,
}

#[derive(Default)]
pub struct Store {
    entries: Mutex<HashMap<Url, Entry>>,
    encoding: Mutex<Encoding>,
}

pub fn source_kind(uri: &Url) -> SourceKind {
    SourceKind::of_path(uri.path())
}

impl Store {
    fn entries(&self) -> MutexGuard<'_, HashMap<Url, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn encoding(&self) -> Encoding {
        *self.encoding.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn set_encoding(&self, encoding: Encoding) {
        *self.encoding.lock().unwrap_or_else(PoisonError::into_inner) = encoding;
    }

    /// Open (or reopen) a document, analysed at once.
    pub fn open(&self, uri: Url, text: String, version: i32) {
        let document = Document::new_guarded(text, version, source_kind(&uri), self.encoding());
        self.entries().insert(
            uri,
            Entry {
                document,
                pending: None,
                checking: false,
                published: None,
                revisions: 0,
            },
        );
    }

    pub fn close(&self, uri: &Url) {
        self.entries().remove(uri);
    }

    /// Apply an edit to the newest text. Returns whether the caller must
    /// start a check task (none is running for this document).
    pub fn edit(&self, uri: &Url, version: i32, edit: impl FnOnce(&mut String)) -> bool {
        let mut entries = self.entries();
        let Some(entry) = entries.get_mut(uri) else {
            return false;
        };
        let mut text = match entry.pending.take() {
            Some(pending) => pending.text,
            None => entry.document.text.clone(),
        };
        edit(&mut text);
        entry.revisions += 1;
        entry.pending = Some(Pending {
            text,
            version,
            revision: entry.revisions,
        });
        !std::mem::replace(&mut entry.checking, true)
    }

    /// The newest text of a document, analysed or not (for tests).
    pub fn text(&self, uri: &Url) -> Option<String> {
        let entries = self.entries();
        let entry = entries.get(uri)?;
        Some(match &entry.pending {
            Some(p) => p.text.clone(),
            None => entry.document.text.clone(),
        })
    }

    /// Run `f` on the up-to-date document. A panic in `f` (a bug in one
    /// feature) becomes `None` instead of taking the server down.
    pub fn with_fresh<T>(&self, uri: &Url, f: impl FnOnce(&Document) -> T) -> Option<T> {
        let mut entries = self.entries();
        let entry = entries.get_mut(uri)?;
        if let Some(pending) = entry.pending.take() {
            let next = Document::new_guarded(
                pending.text,
                pending.version,
                source_kind(uri),
                self.encoding(),
            );
            entry.document.replace_with(next);
        }
        std::panic::catch_unwind(AssertUnwindSafe(|| f(&entry.document))).ok()
    }

    /// Diagnostics to publish now for `uri`, if its newest text is analysed
    /// and not yet published; marks them published.
    fn take_unpublished(&self, uri: &Url) -> Option<(Vec<tower_lsp::lsp_types::Diagnostic>, i32)> {
        let mut entries = self.entries();
        let entry = entries.get_mut(uri)?;
        let version = entry.document.version;
        if entry.pending.is_some() || entry.published == Some(version) {
            return None;
        }
        entry.published = Some(version);
        Some((diagnostics::to_lsp(&entry.document, uri), version))
    }

    /// Publish the diagnostics of a just-opened document.
    pub async fn publish_now(&self, client: &Client, uri: Url) {
        if let Some((diagnostics, version)) = self.take_unpublished(&uri) {
            client
                .publish_diagnostics(uri, diagnostics, Some(version))
                .await;
        }
    }
}

/// The check task of one document: check the newest pending text until
/// none is left, publishing only results that are still current.
pub async fn check_until_current(store: Arc<Store>, client: Client, uri: Url) {
    loop {
        // Let edits already queued behind this one land first.
        tokio::task::yield_now().await;
        let job = {
            let mut entries = store.entries();
            let Some(entry) = entries.get_mut(&uri) else {
                return;
            };
            match &entry.pending {
                Some(p) => Some((p.text.clone(), p.version, p.revision)),
                None => {
                    // Nothing left to check (a request may have analysed the
                    // newest text itself): publish it if not done yet, stop.
                    entry.checking = false;
                    None
                }
            }
        };
        let Some((text, version, revision)) = job else {
            store.publish_now(&client, uri).await;
            return;
        };
        let kind = source_kind(&uri);
        let encoding = store.encoding();
        let analysed = tokio::task::spawn_blocking(move || {
            Document::new_guarded(text, version, kind, encoding)
        })
        .await;
        {
            let mut entries = store.entries();
            let Some(entry) = entries.get_mut(&uri) else {
                return;
            };
            let Ok(next) = analysed else {
                // The checking thread was lost (the runtime is shutting
                // down): stop; the next edit starts a new check.
                entry.checking = false;
                return;
            };
            // Install only if no newer text arrived meanwhile.
            if entry
                .pending
                .as_ref()
                .is_some_and(|p| p.revision == revision)
            {
                entry.pending = None;
                entry.document.replace_with(next);
            }
        }
        store.publish_now(&client, uri.clone()).await;
    }
}
