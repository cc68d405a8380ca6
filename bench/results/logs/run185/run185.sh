#!/usr/bin/env bash
# run185 (2026-12-02): the few-tiles split rule widened after run 184 (all five groups won: 64 x 256, 128 x 256 and
# 160-row swapped tiles at K >= 9216, 128 x 128 at K = 4096-8192): the rule's default against --split-last-wave off,
# same process, two passes (the first with --check), on shapes of each tile at K = 4096-8192 (unmeasured but for
# 128 x 128 with 2 slices) and on its new tiles at K >= 9216. Then the column-fitted tile, still outside the rule,
# forced split. gpu_gemm's split tests first (new cases for the widened rule).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run185/run185.sh
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm split
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
K4="256x4096x4096,256x2048x4096,512x1024x4096,1024x1024x4096,512x2048x4096,300x2048x4096,160x4096x4096,64x4096x8192,128x4096x4096,64x4096x4096,100x4096x8192"
K9="100x4096x14336,80x4096x14336,1x14336x14336,32x14336x14336,64x16384x13312,300x2048x16384,160x4096x14336,128x16896x9216"
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $K4
  b $chk --shape $K4 --split-last-wave off
  b $chk --shape $K9
  b $chk --shape $K9 --split-last-wave off
  b $chk --shape 1028x136x9216,2052x136x9216
  b $chk --shape 1028x136x9216,2052x136x9216 --tile cols-128x136-tma-store --split-last-wave 8
done
