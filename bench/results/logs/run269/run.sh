#!/usr/bin/env bash
# run269 (2026-12-03, one H200; main ec58f0a): (1) gpu_gemm on ec58f0a (rows128_tma_store, two_row_blocks_shape
# refactor: picks unchanged on the CPU scan); (2) NOTES 32.6's lead at M = 384-2048: the 128 x 128 default where its
# 70-112 tiles leave SMs idle and nothing splits (tiles > SMs / 2). Per group of shapes sharing the one-wave width W:
# default, the narrowest 128-row TMA-store tile filling one wave (W), twice that width in 2 K-slices, the 128 x 256
# TMA-store tile in 2-3 K-slices. Back to back x20, gated, two passes (the first --check). Carry [".gpu"].
# Part A (this call): tests + W = 80, 96. Part B (run.sh B): W = 72, 112.
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
T() { echo "$B --tile cols-128x$1-tma-store${2:+ --split-last-wave $2}"; }
W() { echo "$B --tile wide-tma-store --split-last-wave $1"; }
if [[ ${1:-A} == A ]]; then
  TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm- 2>&1 | grep -E "^ok|^FAIL|passed|test result|panicked" | head -20
  bash bench/gemm-ab.sh 1024x1280x8192,512x2560x8192,640x2048x8192,1280x1024x8192,448x2560x8192,512x2560x4096 "$B" "$(T 80)" "$(T 160 2)" "$(W 3)"
  bash bench/gemm-ab.sh 1024x1536x4096,512x3072x8192,768x2048x8192,1536x1024x8192,2048x768x8192,384x4096x8192 "$B" "$(T 96)" "$(T 192 2)" "$(W 2)"
else
  bash bench/gemm-ab.sh 384x3072x8192,768x1536x8192,1536x768x8192,640x1792x8192,768x1536x4096 "$B" "$(T 72)" "$(T 144 2)" "$(W 3)"
  bash bench/gemm-ab.sh 1024x1792x5120,512x3584x8192,2048x896x8192,512x3584x4096 "$B" "$(T 112)" "$(T 224 2)" "$(W 2)"
fi
