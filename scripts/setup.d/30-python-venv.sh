#!/usr/bin/env bash
# Python environment used by the output/summary tests to cross-check against ArviZ.
# Idempotent: skips pip when the venv already imports everything it needs.
set -euo pipefail

VENV="${BAT_VENV:-$HOME/.cache/bat-venv}"
# ArviZ 0.x: the tests compare against its `az.rhat/ess/mcse` and InferenceData API.
PACKAGES=("arviz>=0.20,<1" xarray h5netcdf netCDF4 h5py numpy scipy)

if [ -x "$VENV/bin/python" ] \
    && "$VENV/bin/python" -c "import arviz, xarray, h5netcdf, netCDF4, h5py, numpy, scipy
assert int(arviz.__version__.split('.')[0]) < 1" 2>/dev/null; then
    exit 0
fi

PYTHON="${PYTHON:-python3}"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}"
echo "python venv ready at $VENV"
