#!/usr/bin/env bash
# run258 (2026-12-03, one H200): the two-wave small-M rule (TileConfig::swapped_two_waves_instead_of, uncommitted on
# main 9f5ecf0): gpu_gemm on the new defaults, then at M = 1, 16, 64 over N = 10752-16896 (1.27-2 waves of 64-row
# swapped tiles) and K = 4096-14336: the new default, the old one (64 x 256 TMA-store tiles split as the few-tiles
# rule does), and the swapped TMA-store tile unsplit forced. Back to back x20, gated, two passes (the first --check).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh.
# Carry [".gpu"]. Part 1: `bash bench/results/logs/run258/run.sh tests 1`; part 2: `... run.sh 16 64`.
set -u
export ITERS=10 WARMUP_MS=200
for part in "$@"; do
  if [[ $part == tests ]]; then
    TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "test result|passed|failed|FAIL|panicked|skip" | head -40
    continue
  fi
  m=$part r=$(( (part + 7) / 8 * 8 ))
  shapes=
  for nk in 10752x4096 11264x4096 12288x4096 13312x4096 14336x4096 15360x4096 16384x4096 16896x4096 \
            13824x5120 12288x6144 14336x6144 11264x8192 12288x8192 14336x8192 16384x8192 12288x14336 14336x14336; do
    shapes+=${shapes:+,}${m}x$nk
  done
  bash bench/gemm-ab.sh "$shapes" "--host-gate --back-to-back 20" \
    "--host-gate --back-to-back 20 --tile m64-wide-tma-store --split-like-rule" \
    "--host-gate --back-to-back 20 --tile swap-ab-64x${r}-tma-store --split-last-wave off"
done
