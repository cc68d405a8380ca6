#!/usr/bin/env bash
# run162: does the split rule (M <= 64 now) hold for M = 65..128? Forced 64-row swapped TMA-store tile holding all
# of M with 7 / 4 slices against the default, two passes, same process per pair. One H200.
set -u
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error" | cut -c1-110; }
for pass in 1 2; do
  for m in 96 128; do
    echo "== M=$m default / split 7 / split 4 (pass $pass)"
    b --shape ${m}x9216x7168,${m}x8704x8192,${m}x9216x14336
    b --shape ${m}x9216x7168,${m}x8704x8192,${m}x9216x14336 --tile swap-ab-64x${m}-tma-store --split-last-wave 7
    b --shape ${m}x9216x7168,${m}x8704x8192,${m}x9216x14336 --tile swap-ab-64x${m}-tma-store --split-last-wave 4
  done
done
