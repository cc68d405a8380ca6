#!/usr/bin/env bash
# run246 (2026-12-02): the short-K one-wave split on the small-M swapped tiles (64 x 8..64) and the 128 x 128 tile
# (NOTES 29.3), on shapes not used to make the rule: gpu_gemm (new cases), then the rule against unsplit, back to
# back and one call at a time (host-gated, two passes).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: carry [".gpu"]
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked|ok GemmShape \{ m: (5|384|320), n: (1024|1536|520), k: 3072 \}" "$OUT"/test-logs/*.log | cut -c1-160 | head -16
export ITERS=20 WARMUP_MS=300
S=1x2048x3072,16x1024x2048,32x3072x3072,64x1536x2048,8x1536x3584,2x2560x2560,640x1024x2048,512x1536x3072,384x2048x2048,320x520x3072,5x1024x3072,384x1536x3072
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh $S "$B" "$B --split-last-wave off"
PASSES=1 bash bench/gemm-ab.sh 1x2048x3072,8x1536x3584,640x1024x2048,512x1536x3072 "--host-gate" "--host-gate --split-last-wave off"
