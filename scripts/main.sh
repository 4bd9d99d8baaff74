#!/usr/bin/env bash
# The main job. Until `bat run` exists: build bat in release and check every
# example model.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
cargo build --release --bin bat
"$CARGO_TARGET_DIR/release/bat" check examples/*.bat
