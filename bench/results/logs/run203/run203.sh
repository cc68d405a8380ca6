#!/usr/bin/env bash
# run203 (prepared 2026-12-02, not yet run): the 128-row tiles of 8-56 columns (a small N in the wgmma's n, no
# padding rows; NOTES 23.8) against the small-N rule's swapped tiles (the default), gated (GPU time alone), each
# split as the few-tiles rule would split it, two passes; finer forced splits on three small shapes; then the GPU
# GEMM tests (forced 8-56-column tiles, split). (`tests gpu_gemm` also matches the gpu_gemm_allreduce binary if packed.)
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run203/run203.sh
set -u
r="--host-gate --split-like-rule"
# N = 8
ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh "64x8x4096,512x8x7168,1024x8x4096,2048x8x7168,4096x8x4096,16384x8x4096,32768x8x7168" \
  "--host-gate" "--tile cols-128x8-tma-store $r"
# N = 16-64
ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh "4096x16x7168,8192x16x7168,16384x32x7168,4096x64x7168,8192x64x2048" \
  "--host-gate" "--tile cols-128x16-tma-store $r" "--tile cols-128x32-tma-store $r" "--tile cols-128x64-tma-store $r"
# Finer splits than the rules allow (slices of 4-8 K blocks, more than 8 slices; NOTES 23.7), forced, one shape each
g="--host-gate"
ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh 512x8x7168 "$g" "$g --tile swap-ab-64x64-tma-store --split-last-wave 14" \
  "$g --tile cols-128x8-tma-store --split-last-wave 7" "$g --tile cols-128x8-tma-store --split-last-wave 28"
ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh 1024x8x4096 "$g" "$g --tile swap-ab-64x64-tma-store --split-last-wave 8" \
  "$g --tile cols-128x8-tma-store --split-last-wave 4" "$g --tile cols-128x8-tma-store --split-last-wave 16"
ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh 64x8x4096 "$g" "$g --tile swap-ab-64x64-tma-store --split-last-wave 16" \
  "$g --tile cols-128x8-tma-store --split-last-wave 4" "$g --tile cols-128x8-tma-store --split-last-wave 16"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
