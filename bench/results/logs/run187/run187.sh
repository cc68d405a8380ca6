#!/usr/bin/env bash
# run187 (2026-12-02): (1) gpu_gemm's new test of mkernel::gemm's kept workspaces past eviction (CACHED_WORKSPACES + 3
# streams) and from 4 threads on one stream, with the other workspace tests; (2) decode shapes on the few-tiles rule
# (64-row swapped tiles of 8-16 rows of A, N = 4096: 64 tiles in 2 slices) against --split-last-wave off; (3) where
# large decode shapes stand against cuBLAS, and the 64 x 128 tile (one wave of 128 tiles) against the default at
# M <= 64, N >= 14336.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run187/run187.sh
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm workspace
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
D="1x4096x4096,8x4096x4096,16x4096x4096,8x4096x14336,1x4096x14336,32x4096x8192"
L="1x8192x28672,8x28672x8192,1x57344x8192,16x8192x8192,64x14336x14336,64x16384x13312,32x14336x14336"
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $D
  b $chk --shape $D --split-last-wave off
  b $chk --shape $L
  b $chk --shape $L --tile m64-narrow-tma-store
done
