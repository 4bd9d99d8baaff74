#!/usr/bin/env bash
# Fuzz the front end. cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP=1
# unlocks them on the stable toolchain. Seeds: fuzz/seeds (the examples);
# new interesting inputs go to fuzz/corpus/front_end, crashes to
# fuzz/artifacts/front_end. Extra arguments go to libFuzzer, e.g.
#   ./scripts/fuzz.sh -max_total_time=300
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-fuzz.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/bat-target}/fuzz"
mkdir -p fuzz/corpus/front_end
RUSTC_BOOTSTRAP=1 cargo fuzz run front_end fuzz/corpus/front_end fuzz/seeds -- \
    -dict=fuzz/stan.dict -max_len=4096 "$@"
