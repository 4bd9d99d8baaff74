#!/usr/bin/env bash
# The whole test suite: setup, formatting, the workspace tests (front end,
# conformance over the whole stanc3/posteriordb corpus, model IR, AD against
# Stan's gradients, interpreter against Stan's log densities, HDF5 output
# against ArviZ, CLI, UI snapshots), the VS Code extension's tests, and the
# release-mode conformance sweep with rates when BAT_FULL_SWEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
cargo fmt --all --check || { echo "test.sh: code is not formatted (run cargo fmt --all)" >&2; exit 1; }
status=0
# Property tests from a fixed seed, so a run's verdict does not depend on
# luck (one found inc_beta's 9e-14 rounding against a too-tight bound in one
# run of many); set PROPTEST_RNG_SEED to explore other cases.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261129}"
# With the `mpi` feature (`bat run` under mpirun: tests/run_mpi.rs runs 3
# ranks on this machine), then bat alone without it (it builds and refuses a
# run an MPI launcher started).
cargo test --workspace --no-fail-fast --features bat/mpi || status=1
cargo test -p bat --no-fail-fast --test run_mpi || status=1
editors/vscode/scripts/test.sh || status=1
if [ "${BAT_FULL_SWEEP:-0}" = 1 ]; then
    ./scripts/conformance.sh || status=1
fi
exit $status
