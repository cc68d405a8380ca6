#!/usr/bin/env bash
# run206 (2026-12-02): the few-tiles rule's 64 x 64 swapped tiles (TileConfig::few_tiles_smaller_instead_of, from run
# 205) as the default, against the tile the rule split before (forced, split alike: --split-like-rule), on shapes
# run 205 did not time (M, N ragged; K = 4096-7168), gated, two passes; then the GPU GEMM tests (the rule's picks).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run206/run206.sh
set -u
g="--host-gate"
r="--host-gate --split-like-rule"
export ITERS=30 WARMUP_MS=200
bash bench/gemm-ab.sh "1000x200x5120,256x1024x4096,640x384x4096,384x384x7168" "$g" "--tile narrow-tma-store $r"
bash bench/gemm-ab.sh "300x520x4096" "$g" "--tile m64-wide-tma-store $r"
bash bench/gemm-ab.sh "128x512x7168,128x2048x4096" "$g" "--tile swap-ab-64x128-tma-store $r"
bash bench/gemm-ab.sh "192x768x7168" "$g" "--tile swap-ab-64x192-tma-store $r"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
