#!/usr/bin/env bash
# run281: carry [".gpu-cn"]; every command with GPU_DIR=.gpu-cn (the branch's tests and mkernel binary).
set -u
export GPU_DIR=.gpu-cn
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|^FAIL|test result|FAILED|failed|panicked|passed" | tail -20
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 1024x1280x8192,512x2560x4096,384x3072x8192 "$B" "$B --tile cols-128x80-tma-store" "$B --tile cols-128x80-tma-store-n2"
bash bench/gemm-ab.sh 1024x1536x8192,768x2048x8192 "$B" "$B --tile cols-128x96-tma-store" "$B --tile cols-128x96-tma-store-n2"
bash bench/gemm-ab.sh 1024x2048x8192,2048x1024x8192 "$B" "$B --tile narrow-tma-store" "$B --tile narrow-tma-store-n2"
bash bench/gemm-ab.sh 1024x1280x8192,512x2560x4096 "$B --tile cols-128x64-tma-store" "$B --tile cols-128x64-tma-store-n2"
