#!/usr/bin/env bash
# run151: would a 2-way K split of 128-row swapped tiles beat the 64-row default at small M, long K?
# Analog without a split: N doubled, K halved (same bytes of B, same tile count as the split's units) on the
# 128-row swapped TMA-store tile, against the default on the real shape. One H200.
set -u
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape"; }
for pass in 1 2; do
  b --shape 129x7168x9216,129x8192x14336,64x7168x9216,256x7168x9216,129x8192x4096
  b --shape 129x14336x4608,129x16384x7168,129x16384x2048 --tile swap-ab-128x136-tma-store
  b --shape 64x14336x4608 --tile swap-ab-128x128-tma-store
  b --shape 256x14336x4608 --tile swap-ab-128x256-tma-store
done
