# Sourced by the scripts: shared defaults.
# Builds go outside the clone so CI runs and fresh clones reuse them.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/bat-target}"
# The test corpus lives beside the clone (../shared/corpus) unless told otherwise.
if [ -z "${BAT_CORPUS:-}" ] && [ -d "$(pwd)/../shared/corpus" ]; then
    BAT_CORPUS="$(cd "$(pwd)/../shared/corpus" && pwd)"
    export BAT_CORPUS
fi
# NVRTC from the pip wheel (scripts/setup.d/40-nvrtc.sh): backend-cuda loads
# libnvrtc.so.12 from BAT_NVRTC_DIR (and cudarc finds it on LD_LIBRARY_PATH).
if [ -z "${BAT_NVRTC_DIR:-}" ]; then
    for _bat_nvrtc in "${BAT_VENV:-$HOME/.cache/bat-venv}"/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib; do
        if [ -e "$_bat_nvrtc/libnvrtc.so.12" ]; then
            BAT_NVRTC_DIR="$_bat_nvrtc"
            export BAT_NVRTC_DIR
        fi
    done
    unset _bat_nvrtc
fi
if [ -n "${BAT_NVRTC_DIR:-}" ]; then
    case ":${LD_LIBRARY_PATH:-}:" in
        *":$BAT_NVRTC_DIR:"*) ;;
        *) export LD_LIBRARY_PATH="$BAT_NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
fi
