#!/usr/bin/env bash
# run184 (prepared 2026-12-02, not yet run): the first call of the next one-H200 session.
# (1) gpu_gemm whole: the split test's new cases (144- and 112-column row-block picks, the few-tiles shapes built
#     from the SM count, a call on other data between the two rounds) never ran on a GPU (session 19 had no device
#     time left after helper-46's review).
# (2) The few-tiles split on the tiles helper-46 found it would have taken unmeasured (64 x 256, 128 x 256,
#     column-fitted, 128-row swapped, 64-row swapped of 160 rows of A): forced split against the default, two
#     passes. If one wins on every shape, TileConfig::split_few_tiles_for can take it.
# (3) The few-tiles rule's K bound: 128 x 128 tiles split at K = 4096-8192.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run184/run184.sh
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape 64x16384x13312,1x14336x14336,32x14336x14336
  b $chk --shape 64x16384x13312,1x14336x14336,32x14336x14336 --tile m64-wide-tma-store --split-last-wave 2
  b $chk --shape 300x2048x16384,257x2048x16384
  b $chk --shape 300x2048x16384,257x2048x16384 --tile m64-wide-tma-store --split-last-wave 3
  b $chk --shape 160x4096x14336
  b $chk --shape 160x4096x14336 --tile swap-ab-64x160-tma-store --split-last-wave 2
  b $chk --shape 128x16896x9216
  b $chk --shape 128x16896x9216 --tile wide-tma-store --split-last-wave 2
  b $chk --shape 256x4096x4096,256x4096x8192,1024x1024x8192
  b $chk --shape 256x4096x4096,256x4096x8192,1024x1024x8192 --tile narrow-tma-store --split-last-wave 2
done
