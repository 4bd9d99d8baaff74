#!/usr/bin/env bash
# Builds, tests and packages the VS Code extension. Quiet on success: each
# step's output goes to a log that is printed only when the step fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
log_dir="$(mktemp -d)"
trap 'rm -rf "$log_dir"' EXIT
export npm_config_loglevel=error npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

run_step() {
  local name="$1"
  shift
  if ! "$@" >"$log_dir/$name.log" 2>&1; then
    echo "editors/vscode: step '$name' failed: $*" >&2
    cat "$log_dir/$name.log" >&2
    exit 1
  fi
}

# Snapshot tests would silently record a missing snapshot instead of failing.
for fixture in test/snap/*.bat; do
  if [[ ! -f "$fixture.snap" ]]; then
    echo "editors/vscode: $fixture has no committed snapshot ($fixture.snap)" >&2
    exit 1
  fi
done

run_step install npm ci --prefer-offline
run_step compile npm run compile
run_step test npm test
run_step package npm run package

# Run the activation tests once more against the esbuild bundle that
# `npm run package` just wrote to out/extension.js and put in the .vsix.
BAT_EXTENSION_MODULE="$PWD/out/extension.js" run_step bundle-test node --test out/test/extension.test.js

# The node test runner prints "# pass N" / "# fail N"; the snapshot runner one line per fixture.
count() { sed -n "s/^# $1 \([0-9]*\)$/\1/p" "$log_dir/test.log" "$log_dir/bundle-test.log" | awk '{ total += $1 } END { print total + 0 }'; }
snapshots_passed="$(grep -c 'run successfully' "$log_dir/test.log" || true)"
echo "vscode: $(($(count pass) + snapshots_passed)) passed, $(count fail) failed"
