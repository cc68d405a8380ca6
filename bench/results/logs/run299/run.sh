#!/usr/bin/env bash
# run299 (proposed): carry [".gpu", ".gpu-cn2"]
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
echo "### 1"
bash bench/gemm-ab.sh 256x1536x4096,256x1280x8192,256x1792x5120,256x1152x4096,256x1408x6912,200x1536x4096,240x1784x7168 "$B" "$B --tile narrow-tma-store --split-like-rule"
echo "### 2"
bash bench/gemm-ab.sh 321x3536x8192,328x3536x8192,336x3536x8192,352x3536x8192,384x3536x8192 "$B --tile cols-128x88-tma-store" "$B --tile cols-128x176-tma-store"
bash bench/gemm-ab.sh 128x8192x2048,129x8192x2048,2048x8192x2048,2049x8192x2048 "$B"
echo "### 3"
GPU_DIR=.gpu-cn2 PASSES=3 bash bench/tile-pairs.sh "1024x2048x8192:narrow-tma-store-n2 2048x1024x8192:narrow-tma-store-n2 8192x256x7168:narrow-tma-store-n2 1600x1280x9216:narrow-tma-store-n2 1024x2048x4096:narrow-tma-store-n2"
