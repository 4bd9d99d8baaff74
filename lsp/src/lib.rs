//! Language server for bat (issue: LSP). Not implemented yet; `bat lsp` is
//! not offered by the CLI until it is.
