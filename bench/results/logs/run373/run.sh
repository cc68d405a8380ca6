#!/usr/bin/env bash
# run373 (prepared in session 43, not yet run): the half-height rule's third slice (NOTES 45.9) as the default.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm (main with the rule) and
# bash bench/pack-rev.sh 3c2180d .gpu-main (the last main without it), then rm -rf .gpu-main/lib .gpu-main/cupti-include.
# carry [".gpu", ".gpu-main"]. 1) gpu_gemm in full (its split test runs 236 x 1272 x 6144: 40 tiles of 64 x 128 in 3);
# 2) the old default (64 x 128 in 2) against the new (in 3) on 10 fresh shapes it moves and run 372's three, back to
# back x20 behind the host gate, two passes (the second reversed), --check in pass 1.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 197x1088x5056,244x1248x7872,231x1264x4672,239x1360x4224,225x1352x5056,195x1352x4992,205x1352x5440,210x1208x7104,203x1216x6080,251x1256x6208,256x1280x8192,256x1152x4096,256x1408x6144 "--host-gate --back-to-back 20" .gpu-main .gpu
