#!/usr/bin/env bash
# run194 (2026-12-02, one H200): small N (MoE routers, N = experts 8-128), the default against the swapped
# TMA-store tiles of 32..256 rows of A (B's N rows in the 64-row slot), each unsplit and split as the few-tiles
# rule would split it (--split-like-rule: S = min(SMs / tiles, K blocks / 16, 8) where tiles <= SMs / 2 and
# K >= 4096), two passes, variants compared within a pass (NOTES 22.8, 23).
# Pack: ../shared/tools/gpu-pack --bin mkernel --no-tests && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run194/run194.sh
set -u
S="256x64x7168,512x8x7168,1024x8x4096,1024x64x2048,2048x8x7168,2048x64x4096,4096x8x4096,4096x64x7168,8192x64x2048"
S="$S,8192x16x7168,16384x8x4096,32768x8x7168,32768x64x4096,4096x128x7168,16384x128x4096"
v=("")
for r in 32 64 128 256; do
  v+=("--tile swap-ab-64x$r-tma-store" "--tile swap-ab-64x$r-tma-store --split-like-rule")
done
ITERS=20 WARMUP_MS=200 bash bench/gemm-ab.sh "$S" "${v[@]}"
