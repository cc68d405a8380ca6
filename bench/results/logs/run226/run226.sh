#!/usr/bin/env bash
# run226 (2026-12-02): the fused kernel's epilogue-path split with run 224's fix-up (split_fixup loads more slices a
# round trip on tiles of <= 32 accumulators a thread: the 64-row swapped tiles of <= 64 rows of A): two ranks sharing
# GPU 0 (--share-gpu, the epilogue path forced), K-slices forced, --check (the sum over ranks against the fp32
# reference), on the tiles the change touches; then one rank's local path on two split shapes.
# Call: run with carry [".gpu"] (run 224's pack)
set -u
for s in "8x9216x7168 --split-last-wave 7" "32x4096x7168 --split-last-wave 4" "8x9216x7168 --split-last-wave 8 --tile swap-ab-64x8-tma-store" "48x4096x14336 --split-last-wave 8 --tile swap-ab-64x48-tma-store"; do
  # shellcheck disable=SC2086
  timeout 100 bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --check-reps 5 --shape $s 2>&1 | grep -E "^shape|error|FAIL|panic|PASS" | cut -c1-230
done
timeout 100 bash bench/device-run.sh bench gemm-allreduce --gpus 1 --check --shape 128x8x9216,64x8x14336 2>&1 | grep -E "^shape|error|FAIL|panic|PASS" | cut -c1-230
