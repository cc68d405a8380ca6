#!/usr/bin/env bash
# run245 (2026-12-02): PDL + the one-wave short-K rule for the 64 x 64 swapped tile (uncommitted tree, CI running).
# 1. gpu_gemm (the rule's new cases: 36 tiles in 3, 45 in 2, the small-M rule's 32 in 4).
# 2. The rule against the old picks on shapes whose pick changed (back to back, host-gated, two passes).
# 3. Exploration: other few-tile defaults at short K (swapped small-M tiles 64 x 8..192, 128 x 128), forced to the
#    one-wave count S = min(SMs / tiles, K blocks / 8, 8) against their unsplit default.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: carry [".gpu"]
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked|^ok: |ok GemmShape \{ m: (384|320|64), n: (384|520|2048), k: (3072|2048) \}" "$OUT"/test-logs/*.log | cut -c1-160 | head -16
export ITERS=20 WARMUP_MS=300
B="--host-gate --back-to-back 20"
echo "#### 2a: the rule vs the old unsplit"
bash bench/gemm-ab.sh 64x2048x2048,64x4096x3072,512x512x2048,384x384x3072,320x520x2048,256x384x2048,1024x256x2048 "$B" "$B --split-last-wave off"
echo "#### 2b: the rule vs the old 4 slices"
bash bench/gemm-ab.sh 64x1024x3072,128x512x3072,256x256x3072 "$B" "$B --split-last-wave 4"
echo "#### 3: other few-tile defaults, S = 4, 2, 3, 6"
bash bench/gemm-ab.sh 1x2048x2048,8x2048x3072,16x2048x3072,32x1024x2048,96x2048x2048,160x2048x3072,192x2048x2048,512x1024x2048,256x2048x3072 "$B" "$B --split-last-wave 4"
bash bench/gemm-ab.sh 8x4096x2048,48x3072x3072,128x3072x3072,192x4096x2048,1024x1024x2048,256x4096x3072 "$B" "$B --split-last-wave 2"
bash bench/gemm-ab.sh 384x1536x3072,768x768x2048 "$B" "$B --split-last-wave 3"
bash bench/gemm-ab.sh 1x1024x3072,8x512x3072,48x768x3072,160x1024x3072 "$B" "$B --split-last-wave 6"
