#!/usr/bin/env bash
# run189 (2026-12-02): small-M shapes whose 64-row swapped tiles fill more than half the SMs but less than one wave
# (N = 5120-7168: 80-112 tiles on 132 SMs; e.g. a fused QKV projection of an 8B model, N = 6144), where no split
# rule applies: the default against a forced split of every tile in 2-4 slices (more work units than CTAs: each CTA
# takes several). Then the small-M spill rule's K bound: K = 4096 (the rule starts at 7168), forced 4 slices.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run189/run189.sh
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
P="8x6144x4096,8x6144x14336,32x6144x8192,8x5120x14336,1x5120x8192,8x7168x8192"
Q="8x9216x4096,64x9216x4096,32x10240x4096"
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $P
  b $chk --shape $P --split-last-wave 2
  b $chk --shape $P --split-last-wave 3
  b $chk --shape $P --split-last-wave 4
  b $chk --shape $Q
  b $chk --shape 8x9216x4096 --tile swap-ab-64x8-tma-store --split-last-wave 4
  b $chk --shape 64x9216x4096 --tile swap-ab-64x64-tma-store --split-last-wave 4
  b $chk --shape 32x10240x4096 --tile swap-ab-64x32-tma-store --split-last-wave 4
done
