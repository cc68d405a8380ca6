#!/usr/bin/env bash
# run286: carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 1024x1280x8192,512x2560x4096,384x3072x8192 "$B --tile cols-128x80-tma-store" "$B --tile cols-128x80"
bash bench/gemm-ab.sh 1024x1536x8192,768x2048x8192 "$B --tile cols-128x96-tma-store" "$B --tile cols-128x96"
bash bench/gemm-ab.sh 1024x2048x8192,1024x1792x8192 "$B --tile narrow-tma-store" "$B --tile narrow" "$B --tile cols-128x112-tma-store" "$B --tile cols-128x112"
