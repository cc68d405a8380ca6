#!/usr/bin/env bash
# run157: the split last wave where small-M swapped tiles spill a little past one wave (N = 9216: 144 tiles of
# 64 rows on 132 SMs, 12 left over), one H200, two passes.
set -u
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error"; }
for pass in 1 2; do
  echo "== default (pass $pass)"; b --shape 64x9216x7168,128x9216x4096,32x9216x7168,129x9216x7168,8x9216x7168
  for sl in 4 8; do
    echo "== split $sl"
    b --shape 64x9216x7168 --tile swap-ab-64x64-tma-store --split-last-wave $sl
    b --shape 128x9216x4096 --tile swap-ab-64x128-tma-store --split-last-wave $sl
    b --shape 32x9216x7168 --tile swap-ab-64x32-tma-store --split-last-wave $sl
    b --shape 129x9216x7168 --tile swap-ab-64x136-tma-store --split-last-wave $sl
    b --shape 8x9216x7168 --tile swap-ab-64x8-tma-store --split-last-wave $sl
  done
done
