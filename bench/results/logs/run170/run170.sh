#!/usr/bin/env bash
# run170: M = 80-104 at N = 8704-12288 (the default 128 x 128 TMA-store tile, half a wave, 0.79-0.91 of cuBLAS):
# the new opt-in 128-row swapped tiles holding M rows of A without padding (swap-ab-128xR[-tma-store], R = M
# rounded up to 8; 72-96 tiles like the default) against the default, same pass, two passes (the first --check).
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL" | cut -c1-130; }
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  for m in 80 96 104; do
    S=${m}x8704x7168,${m}x9216x7168,${m}x9216x4096,${m}x10240x7168,${m}x12288x7168
    echo "== pass $pass M=$m"
    b $chk --shape $S
    b $chk --shape $S --tile swap-ab-128x$m-tma-store
    b $chk --shape $S --tile swap-ab-128x$m
  done
done
