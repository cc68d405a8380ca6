#!/usr/bin/env bash
# Copies libfabric.so.1 and the libraries it needs (except the C runtime) into
# ${GPU_DIR:-.gpu}/lib, which bench/device-run.sh puts on LD_LIBRARY_PATH: the
# proxy-stream test and `bench proxy-stream` link libfabric, which the device machine
# may lack. Run after ../shared/tools/gpu-pack.
set -euo pipefail
dst=${GPU_DIR:-.gpu}/lib
mkdir -p "$dst"
lib=$(ldconfig -p | awk '/libfabric\.so\.1 /{print $NF; exit}')
[[ -n $lib ]] || { echo "pack-libs: libfabric.so.1 not found (apt install libfabric1)" >&2; exit 1; }
cp -L "$lib" "$dst/"
ldd "$lib" | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | while read -r dep; do
  cp -L "$dep" "$dst/"
done
echo "pack-libs: $(ls "$dst" | wc -l) libraries in $dst"
# CUPTI headers for `bench/device-run.sh spans` (bench/probes/kernel_spans.c is built on the
# device, whose toolkit has libcupti but may lack its headers): from the nvidia-cuda-cupti
# wheel matching CUDA 13.0, cached under ~/.cache/mkernel. Optional: without network the
# spans mode is unavailable, nothing else.
cupti_ver=13.0.85
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mkernel/cupti-$cupti_ver
if [[ ! -f $cache/nvidia/cu13/include/cupti.h ]]; then
  mkdir -p "$cache"
  if python3 -m pip download -q --no-deps "nvidia-cuda-cupti==$cupti_ver" -d "$cache" 2>/dev/null; then
    (cd "$cache" && python3 -m zipfile -e nvidia_cuda_cupti-*.whl .)
  fi
fi
if [[ -f $cache/nvidia/cu13/include/cupti.h ]]; then
  rm -rf "${GPU_DIR:-.gpu}/cupti-include"
  cp -r "$cache/nvidia/cu13/include" "${GPU_DIR:-.gpu}/cupti-include"
  echo "pack-libs: CUPTI $cupti_ver headers in ${GPU_DIR:-.gpu}/cupti-include (device-run.sh spans)"
else
  echo "pack-libs: no CUPTI headers (pip download of nvidia-cuda-cupti==$cupti_ver failed): device-run.sh spans unavailable" >&2
fi
