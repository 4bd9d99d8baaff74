#!/usr/bin/env bash
# Stan itself (Stan 2.35 through PyStan 3 / httpstan), the opponent of
# `cargo bench --bench stan`, in its own venv (not part of setup or CI).
# Idempotent: does nothing when the venv imports `stan`.
set -euo pipefail
VENV="${BAT_STAN_VENV:-$HOME/.cache/bat-stan-venv}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import stan" 2>/dev/null; then
    exit 0
fi
"${PYTHON:-python3}" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check pystan
echo "PyStan ready at $VENV" >&2
