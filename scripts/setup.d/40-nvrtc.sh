#!/usr/bin/env bash
# NVRTC (NVIDIA's runtime CUDA compiler) from the `nvidia-cuda-nvrtc-cu12` pip
# wheel, installed into the project venv: the CUDA backend's tests compile every
# generated kernel with it on machines without a GPU or CUDA toolkit. The
# version matches backend-cuda's cudarc feature `cuda-12090`. Also makes sure
# g++ is present (the CUDA-on-CPU shim tests compile kernels with it).
# Idempotent: does nothing when libnvrtc and g++ are already there.
set -euo pipefail

VENV="${BAT_VENV:-$HOME/.cache/bat-venv}"
WHEEL="nvidia-cuda-nvrtc-cu12==12.9.*"

if ! command -v g++ >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends g++ >/dev/null
    echo "installed g++"
fi

nvrtc_lib() {
    compgen -G "$VENV/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" | head -n1
}

if [ -n "$(nvrtc_lib || true)" ]; then
    exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: no python venv at $VENV (run scripts/setup.d/30-python-venv.sh first)" >&2
    exit 1
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL"
if [ -z "$(nvrtc_lib || true)" ]; then
    echo "setup: $WHEEL installed but libnvrtc.so.12 not found under $VENV" >&2
    exit 1
fi
echo "NVRTC ready in $(dirname "$(nvrtc_lib)")"
