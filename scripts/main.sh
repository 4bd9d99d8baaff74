#!/usr/bin/env bash
# The main job: build bat in release, check the example models, then sample
# eight schools (non-centered) with 1000 chains and print the summary.
#
# The sampler program (NUTS) and the model's gradient run compiled to
# machine code (`--backend native`: the generated code built with g++,
# cached after the first run), the 1000 chains split over the cores and
# meeting at every gradient evaluation in groups of 16 lanes; the draws
# are bit for bit those of `bat run`'s default CPU backend (the batched
# program-counter executor, about 3x slower on this job; set
# BAT_MAIN_BACKEND=cpu to run it). 300 warmup + 300 sampling iterations per chain
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
    --backend "${BAT_MAIN_BACKEND:-native}" \
    --warmup "${BAT_MAIN_WARMUP:-300}" --samples "${BAT_MAIN_SAMPLES:-300}" \
    --seed 20240601 -o "$out" >/dev/null
"$BAT" summary "$out"
