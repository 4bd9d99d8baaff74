#!/usr/bin/env bash
# The main job: build bat in release, check the example models, then sample
# eight schools (non-centered) with 1000 chains and print the summary.
#
# All 1000 chains run as the lanes of one batch per core on the
# program-counter autobatching executor (`bat run`'s default), meeting at
# every gradient evaluation. 300 warmup + 300 sampling iterations per chain
# (300,000 draws in all); set BAT_MAIN_WARMUP / BAT_MAIN_SAMPLES to change
# that. `bat run` prints the same summary; here it comes from `bat summary`
# on the file.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
cargo build --release --bin bat
BAT="$CARGO_TARGET_DIR/release/bat"
"$BAT" check examples/*.bat
out="${BAT_MAIN_OUTPUT:-$CARGO_TARGET_DIR/eight_schools_noncentered.h5}"
"$BAT" run examples/eight_schools_noncentered.bat --chains 1000 \
    --warmup "${BAT_MAIN_WARMUP:-300}" --samples "${BAT_MAIN_SAMPLES:-300}" \
    --seed 20240601 -o "$out" >/dev/null
"$BAT" summary "$out"
