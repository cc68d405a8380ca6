#!/usr/bin/env bash
# run193 (2026-12-02 ~05:10Z, ran on one H200 at d100909): small N (MoE routers: N = experts 8-64, K = hidden 2048-7168, M = tokens
# 1024-16384), the default against the swapped TMA-store tiles holding 64..256 rows of A (B's N rows in the 64-row
# slot), two passes, variants compared within a pass (NOTES 22.7; run 192 had one pass of 64 x 128 and 64 x 256).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run193/run193.sh
set -u
S="1024x8x4096,4096x8x4096,16384x8x4096,4096x16x7168,16384x32x7168,1024x64x2048,8192x64x2048,4096x64x7168,2048x8x7168"
bash bench/gemm-ab.sh "$S" "" "--tile swap-ab-64x64-tma-store" "--tile swap-ab-64x128-tma-store" \
  "--tile swap-ab-64x192-tma-store" "--tile swap-ab-64x256-tma-store"
