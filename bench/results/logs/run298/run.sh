#!/usr/bin/env bash
# run298: carry [".gpu-cn2"]
set -u
export GPU_DIR=.gpu-cn2 ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
echo "### tests (cn-on-rules)"
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|^FAIL|passed|failed|panicked" | tail -8
echo "### n2"
bash bench/gemm-ab.sh 1024x2048x8192,2048x1024x8192,1024x2048x4096,2048x1024x4096,1024x2048x14336,8192x256x7168,4096x512x4096,1600x1280x9216,1024x2048x2048 "$B --tile narrow-tma-store" "$B --tile narrow-tma-store-n2"
echo "### few tiles at M = 256"
bash bench/gemm-ab.sh 256x1536x4096,256x1280x8192,256x1792x5120,256x768x4096,256x896x5120,256x1024x4096 "$B" "$B --tile swap-ab-64x64-tma-store" "$B --tile m64-narrow-tma-store --split-last-wave 2"
