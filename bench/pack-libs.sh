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
