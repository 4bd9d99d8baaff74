#!/usr/bin/env bash
# OpenMPI (mpirun and the headers) for `cargo build --features mpi`, which
# shares `bat run`'s chains over MPI ranks; the `mpi` crate's bindings are
# generated with bindgen, which needs libclang. A build without the feature
# needs none of this. Idempotent: does nothing when all are installed.
set -euo pipefail

PACKAGES=(libopenmpi-dev openmpi-bin libclang-dev)
missing=()
for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed ${missing[*]}"
