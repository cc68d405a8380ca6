#!/usr/bin/env bash
# run283: carry [".gpu-cn"].
set -u
export GPU_DIR=.gpu-cn ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
ab() { bash bench/gemm-ab.sh "$1" "$B" "$B --tile $2"; }
ab 1344x4992x4096,1856x7168x4096,1344x4992x8192,1856x7168x8192 cols-128x208-tma-store
ab 1216x7424x4096,1024x9344x4096 cols-128x192-tma-store-c2
ab 1472x2432x4096,2048x5376x4096 cols-128x224-tma-store-c2
ab 3456x2432x4096,1664x3456x4096 cols-128x176-tma-store
ab 1024x6912x5120 cols-128x216-tma-store
ab 1408x1536x4096 cols-128x136-tma-store
ab 2432x896x4096 cols-128x152-tma-store
ab 1536x6528x4096 cols-128x200-tma-store
