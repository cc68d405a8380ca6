#!/usr/bin/env bash
# run155: the new small-M rule (128-row swapped TMA-store tiles where 64-row ones need two waves), one H200:
# gpu_gemm (new odd-shape cases on the default), then the default against the unclustered and clustered twins.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error"; }
for pass in 1 2; do
  echo "== default (pass $pass)"
  b --shape 129x14336x8192,144x14336x8192,160x14336x8192,176x14336x8192,192x14336x8192,129x14336x4096,129x9216x7168,160x9216x7168 --check
  for r in 144 160 176 192; do
    echo "== $r rows unclustered / clustered"
    b --shape ${r}x14336x8192 --tile swap-ab-128x${r}-tma-store
    b --shape ${r}x14336x8192 --tile swap-ab-128x${r}-tma-store-c2
  done
  b --shape 160x9216x7168 --tile swap-ab-128x160-tma-store
  b --shape 160x9216x7168 --tile swap-ab-128x160-tma-store-c2
done
