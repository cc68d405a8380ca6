#!/usr/bin/env bash
# run299 call 1: main's gpu_gemm tests (rule 4's default pick untested on GPU), then parts 1-2 of run.sh
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -25
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
echo "### 1"
bash bench/gemm-ab.sh 256x1536x4096,256x1280x8192,256x1792x5120,256x1152x4096,256x1408x6912,200x1536x4096,240x1784x7168 "$B" "$B --tile narrow-tma-store --split-like-rule"
echo "### 2"
bash bench/gemm-ab.sh 321x3536x8192,328x3536x8192,336x3536x8192,352x3536x8192,384x3536x8192 "$B --tile cols-128x88-tma-store" "$B --tile cols-128x176-tma-store"
bash bench/gemm-ab.sh 128x8192x2048,129x8192x2048,2048x8192x2048,2049x8192x2048 "$B"
