#!/usr/bin/env bash
# run297 call 1: carry [".gpu", ".gpu-rules"]
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
echo "### tests (branch)"
GPU_DIR=.gpu-rules TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|^FAIL|passed|failed|panicked" | tail -8
echo "### A: main vs branch defaults"
bash bench/gemm-ab-dirs.sh 256x28672x8192,256x57344x8192,256x55296x9216,256x55296x5120,256x27648x5120,256x18432x4096,256x36864x4096,224x18432x2048,240x28672x1024,205x57344x7168,219x28672x13824 "$B --check" .gpu .gpu-rules
bash bench/gemm-ab-dirs.sh 1612x1280x9216,982x1408x27648,471x4096x13824,639x3000x1024,640x1792x1024,1024x2048x8192,1024x1280x8192,1024x1536x8192,2048x768x8192,1000x1400x8192 "$B --check" .gpu .gpu-rules
echo "### B: main, split (default) vs off on the boundary"
bash bench/gemm-ab.sh 321x3536x8192,328x3536x8192,336x3536x8192,352x3536x8192,368x3536x8192,968x1400x8192,976x1400x8192,992x1400x8192,324x2048x8192,1024x768x8192,730x1024x8192,373x2048x14336 "$B" "$B --split-last-wave off"
