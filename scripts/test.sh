#!/usr/bin/env bash
# The whole test suite: setup, formatting, the workspace tests (including the
# CLI, UI snapshot and conformance-slice tests), and the full conformance
# sweep when BAT_FULL_SWEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
cargo fmt --all --check || echo "test.sh: warning: code is not formatted (run cargo fmt --all)" >&2
cargo test --workspace --no-fail-fast
if [ "${BAT_FULL_SWEEP:-0}" = 1 ]; then
    ./scripts/conformance.sh
fi
