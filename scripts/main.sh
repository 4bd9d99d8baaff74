#!/usr/bin/env bash
# The main job: build bat in release, check the example models, then sample
# eight schools (non-centered) with 1000 chains and print the summary.
#
# The sampler program runs on the scalar reference interpreter (one chain
# per thread task, BAT_EXECUTOR=interp below), so the run is kept short: 150 warmup + 100 sampling iterations per chain (100,000 draws
# in all). Set BAT_MAIN_WARMUP / BAT_MAIN_SAMPLES to change that. `bat run`
# prints the same summary; here it comes from `bat summary` on the file.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
cargo build --release --bin bat
BAT="$CARGO_TARGET_DIR/release/bat"
"$BAT" check examples/*.bat
out="${BAT_MAIN_OUTPUT:-$CARGO_TARGET_DIR/eight_schools_noncentered.h5}"
# The batched executors (--batching pc|local) give the same chains but are
# still slower than the reference executor and scale badly with chains
# (100 iterations: 16 chains interp 0.7 s, local 1.3 s, pc 2.3 s; 256 chains
# interp 6 s, pc 120 s), so the main job keeps the reference executor.
BAT_EXECUTOR="${BAT_EXECUTOR:-interp}" \
"$BAT" run examples/eight_schools_noncentered.bat --chains 1000 \
    --warmup "${BAT_MAIN_WARMUP:-150}" --samples "${BAT_MAIN_SAMPLES:-100}" \
    --seed 20240601 -o "$out" >/dev/null
"$BAT" summary "$out"
