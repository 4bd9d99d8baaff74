# Sourced by the scripts: shared defaults.
# Builds go outside the clone so CI runs and fresh clones reuse them.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/bat-target}"
# The test corpus lives beside the clone (../shared/corpus) unless told otherwise.
if [ -z "${BAT_CORPUS:-}" ] && [ -d "$(pwd)/../shared/corpus" ]; then
    BAT_CORPUS="$(cd "$(pwd)/../shared/corpus" && pwd)"
    export BAT_CORPUS
fi
