#!/usr/bin/env bash
# run161: M = 193..256 (default: 128 x 128 or 128 x 256 TMA-store tiles, 0.80-0.85 of cuBLAS at long K) against
# the clustered 128 x 128 tile (cuBLAS runs 112x128 / 128x128 tiles in 2x1 clusters there, run 149). One H200.
set -u
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error" | cut -c1-110; }
S=256x7168x9216,256x8192x14336,256x14336x8192,256x8448x9216,224x8192x14336,256x8192x4096
for pass in 1 2; do
  echo "== default (pass $pass)"; b --shape $S
  echo "== narrow-tma-store"; b --shape $S --tile narrow-tma-store
  echo "== narrow-tma-store-c2"; b --shape $S --tile narrow-tma-store-c2
done
