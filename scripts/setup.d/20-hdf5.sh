#!/usr/bin/env bash
# System HDF5 (with the high-level H5DS library) that hdf5-metno links against.
# Idempotent: does nothing when the headers and pkg-config are already present.
set -euo pipefail

if dpkg-query -W -f='${Status}' libhdf5-dev 2>/dev/null | grep -q "install ok installed" \
    && command -v pkg-config >/dev/null 2>&1; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends libhdf5-dev pkg-config >/dev/null
echo "installed libhdf5-dev and pkg-config"
