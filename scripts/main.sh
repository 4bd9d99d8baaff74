#!/usr/bin/env bash
# The main job. Until `bat run` exists: build bat in release, check every
# example model, and evaluate a log density and its gradient (the gradient
# program made by bat's source-to-source AD) for eight schools.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
cargo build --release --bin bat
"$CARGO_TARGET_DIR/release/bat" check examples/*.bat
"$CARGO_TARGET_DIR/release/bat" logdensity examples/eight_schools_noncentered.bat \
    --params examples/eight_schools_noncentered.params.json
