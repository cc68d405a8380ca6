#!/usr/bin/env bash
# run296: carry [".gpu"]; bash bench/results/logs/run296/run.sh
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
echo "### P1"
bash bench/gemm-ab.sh 256x3072x8192,256x3072x14336,256x3584x8192,256x4352x6912,256x4608x8192,256x4608x14336,224x5120x8192,256x5120x14336,200x5120x6912,256x3072x4096 "$B" "$B --split-last-wave off"
bash bench/gemm-ab.sh 512x2560x8192,640x2048x8192,768x1536x8192,1024x1536x14336,512x3072x14336,2000x760x14336,2048x768x8192,384x4096x14336,1000x1400x8192,1024x1408x14336,321x3536x8192,479x2648x8192,1024x1152x6912 "$B" "$B --split-last-wave off"
echo "### P2"
bash bench/gemm-ab.sh 313x3392x8192,414x2528x8192,433x2480x6912,563x2000x6912,822x1352x8192 "$B" "$B --split-last-wave off" "$B --tile cols-128x80-tma-store"
bash bench/gemm-ab.sh 899x1040x14336,520x1808x8192 "$B" "$B --split-last-wave off" "$B --tile cols-128x72-tma-store"
echo "### P3"
bash bench/gemm-ab.sh 1024x2048x8192,2048x1024x8192,1024x2048x4096,1024x2048x14336,2048x1024x4096 "$B" "$B --tile narrow-tma-store"
