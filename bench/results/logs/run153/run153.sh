#!/usr/bin/env bash
# run153: the plain GEMM's split last wave (K-slices of left-over tiles, fp32 fixup), one H200.
# 1. gpu_gemm (two new tests: split against the reference, refusals). 2. Small-M long-K shapes: the default
# against 128-row swapped TMA-store tiles split 2 (and 3) ways, same process each (ratios to cuBLAS).
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error"; }
for pass in 1 2; do
  echo "== default (pass $pass)"
  b --shape 129x8192x14336,129x7168x9216,129x8192x4096,192x8192x14336,256x8192x14336,64x8192x14336,32x8192x14336,129x14336x8192
  for sl in 2 3; do
    echo "== 136 rows, split $sl"
    b --shape 129x8192x14336,129x7168x9216,129x8192x4096,129x14336x8192 --tile swap-ab-128x136-tma-store --split-last-wave $sl
  done
  echo "== 192 / 256 / 128 rows, split 2"
  b --shape 192x8192x14336 --tile swap-ab-128x192-tma-store --split-last-wave 2
  b --shape 256x8192x14336 --tile swap-ab-128x256-tma-store --split-last-wave 2
  b --shape 64x8192x14336,32x8192x14336 --tile swap-ab-128x128-tma-store --split-last-wave 2
  echo "== 64-row swapped TMA-store, split 2 (slices over two waves)"
  b --shape 129x8192x14336,129x7168x9216 --tile swap-ab-64x136-tma-store --split-last-wave 2
done
