#!/usr/bin/env bash
# run156: M <= 128 where the 64-row swapped tiles need two waves (N = 14336, 9216): the default against the
# 128-row swapped TMA-store tile (A padded to 128 rows). One H200, two passes.
set -u
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error"; }
S=1x14336x8192,16x14336x8192,32x14336x8192,64x14336x8192,100x14336x8192,128x14336x8192,64x9216x7168,128x9216x4096,64x14336x4096
for pass in 1 2; do
  echo "== default (pass $pass)"; b --shape $S
  echo "== swap-ab-128x128-tma-store"; b --shape $S --tile swap-ab-128x128-tma-store
done
