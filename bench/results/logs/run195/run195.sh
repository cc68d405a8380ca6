#!/usr/bin/env bash
# run195 (2026-12-02, one H200): the small-N rule (TileConfig::small_n_for) as the default against the tiles the
# default took before it, forced with the few-tiles split they had (128 x 128 TMA-store split as the rule would;
# the 128 x 136 column-fitted tile at M >= 16384), two passes, on run 194's shapes and new ones; then the GPU GEMM
# tests (split rule and small-N default cases added).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run195/run195.sh
set -u
S="100x8x7168,256x64x7168,300x8x4096,512x8x7168,1024x8x4096,1024x64x2048,2048x8x7168,2048x64x4096,3000x16x4096"
S="$S,4096x8x4096,4096x64x7168,6144x8x4096,8192x64x2048,8192x64x7168,8192x16x7168,12288x32x7168,16384x8x4096"
S="$S,32768x8x7168,32768x64x4096,65536x8x4096"
ITERS=20 WARMUP_MS=200 bash bench/gemm-ab.sh "$S" "" "--tile narrow-tma-store --split-like-rule" \
  "--tile cols-128x136-tma-store --split-like-rule"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL|skip" | tail -40
