#!/usr/bin/env bash
# run364: two hypotheses for the small tiles' K loop (64 x 64 swapped at 256 x 1536 x 4096: 23.6k cycles against
# cuBLAS's 18.8k, NOTES 43.1; 2-D clusters did not help, run 363):
#   .gpu-s (branch deep-stages): fitted tiles up to 16 stages (was 8): 64 x 64 swapped 13, 64 x 32 16 (cuBLAS 13);
#   .gpu-x (branch two-chains): K blocks alternate between two accumulators for wgmma N <= 64 and 64 x 128.
# 1) defaults and 2) forced unsplit tiles, main against both, back to back x20 behind the host gate, two passes (the
# second reversed), --check in pass 1. 3) gpu_gemm in full on two-chains (.gpu).
# carry [".gpu", ".gpu-main", ".gpu-s", ".gpu-x"].
set -u
B="--host-gate --back-to-back 20"
echo "#### defaults"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x1536x4096,64x4096x3584,64x256x7168,64x768x4096,1024x256x7168,735x256x12480,256x896x5120,24x256x14336,8x8192x4096,1x4096x4096,128x2048x4096,256x1280x8192 "$B" .gpu-main .gpu-s .gpu-x
echo "#### swap-ab-64x64-tma-store unsplit"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x1536x4096,256x1280x8192,256x1792x5120,64x4096x3584,128x2048x4096 "--tile swap-ab-64x64-tma-store --split-last-wave off $B" .gpu-main .gpu-s .gpu-x
echo "#### swap-ab-64x32-tma-store unsplit"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 64x4096x3584,64x1536x4096,64x2048x7168 "--tile swap-ab-64x32-tma-store --split-last-wave off $B" .gpu-main .gpu-s .gpu-x
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log
