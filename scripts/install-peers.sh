#!/usr/bin/env bash
# The peer samplers of `cargo bench --bench time_to_result`: BlackJAX
# (ChEES) on JAX, CPU, with ArviZ for ESS and R-hat, in a venv of their own
# (not part of setup or CI). Idempotent: does nothing when the venv imports
# all three.
set -euo pipefail
VENV="${BAT_PEERS_VENV:-$HOME/.cache/bat-peers-venv}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import blackjax, jax, arviz" 2>/dev/null; then
    exit 0
fi
"${PYTHON:-python3}" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check blackjax jax arviz
echo "BlackJAX ready at $VENV" >&2
