#!/usr/bin/env bash
# run282: carry [".gpu-cn"].
set -u
export GPU_DIR=.gpu-cn ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 1024x5120x1280,1024x5120x2560,1024x5120x5120,1024x5120x8192,1024x5120x13824,1024x2560x8192 "$B" "$B --tile cols-128x160-tma-store" "$B --tile cols-128x160-tma-store-c2"
