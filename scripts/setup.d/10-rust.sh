#!/usr/bin/env bash
# bat needs cargo and rustc >= 1.95 (edition 2024) with rustfmt.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust 1.95 (rustup) first" >&2
    exit 1
fi
version=$(rustc --version | awk '{print $2}')
major_minor=$(echo "$version" | cut -d. -f1,2)
if [ "$(printf '%s\n' 1.95 "$major_minor" | sort -V | head -n1)" != 1.95 ]; then
    echo "setup: rustc $version is older than 1.95" >&2
    exit 1
fi
