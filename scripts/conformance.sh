#!/usr/bin/env bash
# Full conformance sweep: every file of the stanc3 corpus and posteriordb
# models through the front end (release build), with per-file failures and
# rates printed. Corpus: $BAT_CORPUS or ../shared/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
BAT_FULL_SWEEP=1 cargo test --release --test conformance -- --nocapture "$@"
