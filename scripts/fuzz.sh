#!/usr/bin/env bash
# Fuzz one target: ./scripts/fuzz.sh [TARGET] [libFuzzer arguments...]
#   TARGET: front_end (default), data_reader, draws_file, lsp_stream.
# cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP=1 unlocks them on the
# stable toolchain. The targets are built without a sanitizer (`-s none`):
# the code they reach is safe Rust except for a few FFI calls, and libhdf5
# is not instrumented anyway; panics, crashes, timeouts and the RSS limit
# are still caught. Seeds: fuzz/seeds/TARGET; new interesting inputs go to
# fuzz/corpus/TARGET, crashes to fuzz/artifacts/TARGET (minimize them with
# `cargo fuzz tmin` and keep them in fuzz/regressions/TARGET, which
# `cargo test --test fuzz_replay` replays). Examples:
#   ./scripts/fuzz.sh data_reader -max_total_time=300
#   ./scripts/fuzz.sh draws_file -max_total_time=3600 -jobs=1
set -euo pipefail
cd "$(dirname "$0")/.."
target=front_end
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    target=$1
    shift
fi
case $target in
    front_end) extra=(-dict=fuzz/stan.dict -max_len=4096) ;;
    data_reader) extra=(-max_len=4096) ;;
    draws_file) extra=(-max_len=131072) ;;
    lsp_stream) extra=(-max_len=16384) ;;
    *) echo "unknown fuzz target: $target" >&2; exit 2 ;;
esac
./scripts/install-fuzz.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/bat-target}/fuzz"
# The draws-file target writes each input to a temporary file: keep those
# in memory.
if [ -d /dev/shm ]; then export TMPDIR=/dev/shm; fi
mkdir -p "fuzz/corpus/$target"
RUSTC_BOOTSTRAP=1 cargo fuzz run -s none "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
    -timeout=10 -rss_limit_mb=2048 "${extra[@]}" "$@"
