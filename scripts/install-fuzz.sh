#!/usr/bin/env bash
# Install cargo-fuzz (not part of setup or CI: fuzzing is run by hand).
set -euo pipefail
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi
