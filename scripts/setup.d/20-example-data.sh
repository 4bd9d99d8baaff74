#!/usr/bin/env bash
# Generate the large example data set (not committed; deterministic).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -s examples/logistic_regression.data.json ]; then
    python3 scripts/gen_example_data.py logistic_regression
fi
