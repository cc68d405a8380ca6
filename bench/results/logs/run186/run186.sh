#!/usr/bin/env bash
# run186 (2026-12-02): the few-tiles split rule on every default tile, K >= 4096 (after runs 184-185): gpu_gemm's
# split tests; the rule's default against --split-last-wave off on the tiles still unmeasured (64-row swapped tiles of
# 168-192 rows of A; the 128 x 136 column-fitted default; 128 x 256 at K = 4096), two passes, the first with --check.
# Then the fixed cost of small calls, ours against cuBLAS (one tile, small K): is there a floor to cut?
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run186/run186.sh
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm split
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
S="183x4096x8192,190x2048x14336,169x4096x4096,1030x136x4096,1030x8x4096,2052x136x9216,128x16896x4096,128x14336x4096,64x16384x13312"
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $S
  b $chk --shape $S --split-last-wave off
done
b --shape 64x64x64,128x128x512,128x128x4096,8x1024x1024,8x4096x4096,128x1024x1024,1x8192x1024
