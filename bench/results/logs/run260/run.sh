#!/usr/bin/env bash
# run260 (2026-12-03, one H200): validation of runs 258-259's rules on main 9f5ecf0 + the uncommitted change
# (swapped_two_waves_instead_of at 1.5-2 waves, split_two_rounds_for, the short swapped tiles' finer few-tiles
# slices): gpu_gemm, then the new defaults against the old ones forced (back to back x20, gated, two passes, the
# first --check), then the model map at M = 1, 16, 64, 256 (--check). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "test result|passed|failed|FAIL|panicked" | head -20
B="--host-gate --back-to-back 20"
# split_two_rounds_for (old: unsplit)
bash bench/gemm-ab.sh 1x5120x27648,16x5120x13824,64x5120x27648,256x5120x13824,256x5120x27648,256x10240x13824 "$B" "$B --split-last-wave off"
# the short swapped tiles' slices (old: 4, 7 and 8 slices)
bash bench/gemm-ab.sh 1x128x4096,1x512x4096,16x768x4096 "$B" "$B --split-last-wave 4"
bash bench/gemm-ab.sh 1x256x7168,16x256x7168,8x384x7168 "$B" "$B --split-last-wave 7"
bash bench/gemm-ab.sh 1x256x14336 "$B" "$B --split-last-wave 8"
# the two-wave rule's bound (1.5 waves): new defaults only
PASSES=1 bash bench/gemm-ab.sh 1x14336x4096,64x13312x4096,64x12288x4096,1x11264x8192 "$B"
for m in 1 16 64 256; do
  bash bench/device-run.sh bench gemm --models --filter "M=$m " --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-170
done
