#!/usr/bin/env bash
# Regenerates docs/cli.md, the command-line reference, from the binary's own
# `--help` texts (tests/cli_reference.rs writes it; the same test, run by
# ./scripts/test.sh, fails when the file is out of date).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
BAT_UPDATE_CLI_REFERENCE=1 cargo test --quiet -p bat --test cli_reference
git --no-pager diff --stat -- docs/cli.md || true
