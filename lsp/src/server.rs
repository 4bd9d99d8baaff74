//! The tower-lsp glue: document store, capabilities, and each request
//! answered by the pure analysis modules.

use std::collections::HashMap;
use std::sync::Arc;

use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer};

use crate::completion::{self, CandidateKind};
use crate::document::Document;
use crate::folding::FoldKind;
use crate::position::Encoding;
use crate::store::{Store, check_until_current, source_kind};
use crate::symbols::{OutlineItem, OutlineKind};
use crate::{
    code_actions, diagnostics, folding, formatting, hover, navigation, semantic_tokens,
    signature_help,
};

pub struct Backend {
    client: Client,
    store: Arc<Store>,
}

impl Backend {
    pub fn new(client: Client) -> Backend {
        Backend {
            client,
            store: Arc::new(Store::default()),
        }
    }

    /// The store, for tests that compare the server's text with their own.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Run `f` on the up-to-date document at `uri` and the byte offset of
    /// `position`.
    fn with_document<T>(
        &self,
        uri: &Url,
        position: Position,
        f: impl FnOnce(&Document, usize) -> Option<T>,
    ) -> Option<T> {
        self.store
            .with_fresh(uri, |document| {
                let offset = document.positions.offset(&document.text, position);
                f(document, offset)
            })
            .flatten()
    }
}

/// UTF-8 positions if the client offers them (no re-encoding needed),
/// otherwise the mandatory UTF-16.
fn negotiate_encoding(params: &InitializeParams) -> Encoding {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

pub fn capabilities(encoding: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(match encoding {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(TextDocumentSyncCapability::Kind(
            TextDocumentSyncKind::INCREMENTAL,
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                legend: SemanticTokensLegend {
                    token_types: semantic_tokens::TOKEN_TYPES
                        .iter()
                        .map(|t| SemanticTokenType::new(t))
                        .collect(),
                    token_modifiers: semantic_tokens::TOKEN_MODIFIERS
                        .iter()
                        .map(|m| SemanticTokenModifier::new(m))
                        .collect(),
                },
                full: Some(SemanticTokensFullOptions::Bool(true)),
                range: None,
                work_done_progress_options: Default::default(),
            },
        )),
        definition_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
        references_provider: Some(OneOf::Left(true)),
        document_highlight_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        })),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["~".into()]),
            ..Default::default()
        }),
        signature_help_provider: Some(SignatureHelpOptions {
            trigger_characters: Some(vec!["(".into(), ",".into(), "|".into()]),
            retrigger_characters: None,
            work_done_progress_options: Default::default(),
        }),
        ..Default::default()
    }
}

#[tower_lsp::async_trait]
impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let encoding = negotiate_encoding(&params);
        self.store.set_encoding(encoding);
        Ok(InitializeResult {
            capabilities: capabilities(encoding),
            server_info: Some(ServerInfo {
                name: "bat".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
        })
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let doc = params.text_document;
        self.store.open(doc.uri.clone(), doc.text, doc.version);
        self.store.publish_now(&self.client, doc.uri).await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let encoding = self.store.encoding();
        let start_check = self.store.edit(&uri, params.text_document.version, |text| {
            for change in params.content_changes {
                apply_change(text, change, encoding);
            }
        });
        // Checking runs in the background, so this returns at once and the
        // next edits are applied while a check runs (and coalesced).
        if start_check {
            tokio::spawn(check_until_current(
                self.store.clone(),
                self.client.clone(),
                uri,
            ));
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        self.store.close(&uri);
        // Clear the closed file's diagnostics from the editor.
        self.client.publish_diagnostics(uri, Vec::new(), None).await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let at = params.text_document_position_params;
        Ok(
            self.with_document(&at.text_document.uri, at.position, |doc, offset| {
                let info = hover::hover(doc, offset)?;
                Some(Hover {
                    contents: HoverContents::Markup(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: info.markdown,
                    }),
                    range: Some(doc.positions.range(&doc.text, info.span)),
                })
            }),
        )
    }

    async fn goto_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let at = params.text_document_position_params;
        let uri = at.text_document.uri;
        Ok(self.with_document(&uri, at.position, |doc, offset| {
            let span = navigation::definition(doc, offset)?;
            let range = doc.positions.range(&doc.text, span);
            Some(GotoDefinitionResponse::Scalar(Location::new(
                uri.clone(),
                range,
            )))
        }))
    }

    async fn references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let at = params.text_document_position;
        let uri = at.text_document.uri;
        let include = params.context.include_declaration;
        Ok(self.with_document(&uri, at.position, |doc, offset| {
            let spans = navigation::references(doc, offset, include);
            (!spans.is_empty()).then(|| {
                spans
                    .into_iter()
                    .map(|s| Location::new(uri.clone(), doc.positions.range(&doc.text, s)))
                    .collect()
            })
        }))
    }

    async fn document_highlight(
        &self,
        params: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        let at = params.text_document_position_params;
        Ok(
            self.with_document(&at.text_document.uri, at.position, |doc, offset| {
                let checked = doc.checked.as_ref()?;
                let id = checked.symbol_at(offset)?;
                let definitions: Vec<_> = checked
                    .symbols
                    .iter()
                    .filter(|s| s.name == checked.symbols[id].name)
                    .map(|s| s.def_span)
                    .collect();
                let spans = navigation::references(doc, offset, true);
                Some(
                    spans
                        .into_iter()
                        .map(|span| DocumentHighlight {
                            range: doc.positions.range(&doc.text, span),
                            kind: Some(if definitions.contains(&span) {
                                DocumentHighlightKind::WRITE
                            } else {
                                DocumentHighlightKind::READ
                            }),
                        })
                        .collect(),
                )
            }),
        )
    }

    async fn prepare_rename(
        &self,
        params: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        Ok(
            self.with_document(&params.text_document.uri, params.position, |doc, offset| {
                let span = navigation::rename_range(doc, offset)?;
                Some(PrepareRenameResponse::Range(
                    doc.positions.range(&doc.text, span),
                ))
            }),
        )
    }

    async fn rename(&self, params: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let at = params.text_document_position;
        let uri = at.text_document.uri;
        let outcome = self.store.with_fresh(&uri, |doc| {
            let offset = doc.positions.offset(&doc.text, at.position);
            let edits = navigation::rename(doc, offset, &params.new_name, source_kind(&uri))?;
            Ok::<_, navigation::RenameError>(
                edits
                    .into_iter()
                    .map(|(span, text)| TextEdit::new(doc.positions.range(&doc.text, span), text))
                    .collect::<Vec<_>>(),
            )
        });
        match outcome {
            None => Ok(None),
            Some(Err(refusal)) => Err(Error::invalid_params(refusal.0)),
            Some(Ok(edits)) => Ok(Some(WorkspaceEdit::new(HashMap::from([(
                uri.clone(),
                edits,
            )])))),
        }
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let at = params.text_document_position;
        Ok(
            self.with_document(&at.text_document.uri, at.position, |doc, offset| {
                let items = completion::complete(doc, offset)
                    .into_iter()
                    .map(completion_item)
                    .collect();
                Some(CompletionResponse::Array(items))
            }),
        )
    }

    async fn signature_help(&self, params: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        let at = params.text_document_position_params;
        Ok(
            self.with_document(&at.text_document.uri, at.position, |doc, offset| {
                let help = signature_help::signature_help(doc, offset)?;
                Some(SignatureHelp {
                    signatures: help
                        .signatures
                        .into_iter()
                        .map(|s| SignatureInformation {
                            label: s.label,
                            documentation: s.documentation.map(Documentation::String),
                            parameters: Some(
                                s.parameters
                                    .into_iter()
                                    .map(|(start, end)| ParameterInformation {
                                        label: ParameterLabel::LabelOffsets([
                                            start as u32,
                                            end as u32,
                                        ]),
                                        documentation: None,
                                    })
                                    .collect(),
                            ),
                            active_parameter: None,
                        })
                        .collect(),
                    active_signature: Some(help.active_signature as u32),
                    active_parameter: Some(help.active_parameter as u32),
                })
            }),
        )
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let uri = params.text_document.uri;
        let actions = self.store.with_fresh(&uri, |doc| {
            let start = doc.positions.offset(&doc.text, params.range.start);
            let end = doc.positions.offset(&doc.text, params.range.end);
            let published = diagnostics::to_lsp(doc, &uri);
            code_actions::quick_fixes(doc, language::Span::new(start, end))
                .into_iter()
                .map(|fix| {
                    let edit =
                        TextEdit::new(doc.positions.range(&doc.text, fix.span), fix.replacement);
                    CodeActionOrCommand::CodeAction(CodeAction {
                        title: fix.title,
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: published.get(fix.diagnostic).cloned().map(|d| vec![d]),
                        edit: Some(WorkspaceEdit::new(HashMap::from([(
                            uri.clone(),
                            vec![edit],
                        )]))),
                        is_preferred: Some(true),
                        ..Default::default()
                    })
                })
                .collect::<Vec<_>>()
        });
        Ok(actions.filter(|a| !a.is_empty()))
    }

    async fn semantic_tokens_full(
        &self,
        params: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        let data = self.store.with_fresh(&params.text_document.uri, |doc| {
            semantic_tokens::encode(doc, &semantic_tokens::tokens(doc))
        });
        Ok(data.map(|data| {
            let data = data
                .chunks_exact(5)
                .map(|c| SemanticToken {
                    delta_line: c[0],
                    delta_start: c[1],
                    length: c[2],
                    token_type: c[3],
                    token_modifiers_bitset: c[4],
                })
                .collect();
            SemanticTokensResult::Tokens(SemanticTokens {
                result_id: None,
                data,
            })
        }))
    }

    async fn formatting(&self, params: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        let uri = params.text_document.uri;
        let outcome = self.store.with_fresh(&uri, |doc| {
            formatting::format_document(doc, source_kind(&uri)).map(|formatted| {
                // One edit replacing the whole text: the formatter rewrites
                // every line anyway.
                let whole = language::Span::new(0, doc.text.len());
                formatted.map(|text| TextEdit::new(doc.positions.range(&doc.text, whole), text))
            })
        });
        match outcome {
            None => Ok(None),
            Some(Ok(edit)) => Ok(Some(edit.into_iter().collect())),
            // The text is left alone; the diagnostics already say why, so
            // format-on-save does not also pop up an error each time.
            Some(Err(reason)) => {
                self.client
                    .log_message(MessageType::INFO, format!("not formatted: {reason}"))
                    .await;
                Ok(None)
            }
        }
    }

    async fn folding_range(&self, params: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        let folds = self
            .store
            .with_fresh(&params.text_document.uri, folding::folding_ranges);
        Ok(folds.map(|folds| {
            folds
                .into_iter()
                .map(|f| FoldingRange {
                    start_line: f.start_line as u32,
                    start_character: None,
                    end_line: f.end_line as u32,
                    end_character: None,
                    kind: Some(match f.kind {
                        FoldKind::Region => FoldingRangeKind::Region,
                        FoldKind::Comment => FoldingRangeKind::Comment,
                    }),
                    collapsed_text: None,
                })
                .collect()
        }))
    }

    async fn document_symbol(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        let symbols = self.store.with_fresh(&params.text_document.uri, |doc| {
            doc.outline
                .iter()
                .cloned()
                .map(|item| document_symbol(doc, item))
                .collect()
        });
        Ok(symbols.map(DocumentSymbolResponse::Nested))
    }
}

/// Apply one content change (a range edit, or the whole text).
fn apply_change(text: &mut String, change: TextDocumentContentChangeEvent, encoding: Encoding) {
    match change.range {
        Some(range) => {
            let positions = crate::position::PositionMap::new(text, encoding);
            let start = positions.offset(text, range.start);
            let end = positions.offset(text, range.end).max(start);
            text.replace_range(start..end, &change.text);
        }
        None => *text = change.text,
    }
}

fn completion_item(candidate: completion::Candidate) -> CompletionItem {
    let kind = match candidate.kind {
        CandidateKind::Variable => CompletionItemKind::VARIABLE,
        CandidateKind::Function => CompletionItemKind::FUNCTION,
        CandidateKind::Distribution => CompletionItemKind::FUNCTION,
        CandidateKind::Type => CompletionItemKind::TYPE_PARAMETER,
        CandidateKind::Keyword => CompletionItemKind::KEYWORD,
        CandidateKind::Block => CompletionItemKind::MODULE,
    };
    let is_snippet = candidate.snippet.is_some();
    CompletionItem {
        label: candidate.label,
        kind: Some(kind),
        detail: candidate.detail,
        documentation: candidate.documentation.map(|value| {
            Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            })
        }),
        insert_text: candidate.snippet,
        insert_text_format: is_snippet.then_some(InsertTextFormat::SNIPPET),
        ..Default::default()
    }
}

#[allow(deprecated)] // `DocumentSymbol::deprecated` must still be filled in.
fn document_symbol(doc: &Document, item: OutlineItem) -> DocumentSymbol {
    DocumentSymbol {
        name: item.name,
        detail: item.detail,
        kind: match item.kind {
            OutlineKind::Block => SymbolKind::NAMESPACE,
            OutlineKind::Variable => SymbolKind::VARIABLE,
            OutlineKind::Function => SymbolKind::FUNCTION,
        },
        tags: None,
        deprecated: None,
        range: doc.positions.range(&doc.text, item.span),
        selection_range: doc.positions.range(&doc.text, item.name_span),
        children: Some(
            item.children
                .into_iter()
                .map(|child| document_symbol(doc, child))
                .collect(),
        ),
    }
}
