#!/usr/bin/env bash
# Prepare this machine for building and testing bat: runs every executable
# scripts/setup.d/*.sh in name order. Each step must be idempotent and quiet
# when there is nothing to do (apt steps run `apt-get update` first).
set -euo pipefail
cd "$(dirname "$0")/.."
for step in scripts/setup.d/*.sh; do
    [ -x "$step" ] || continue
    echo "setup: $step"
    "$step"
done
