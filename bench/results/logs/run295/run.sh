#!/usr/bin/env bash
# run295: carry [".gpu"] (main's binaries); bash bench/results/logs/run295/run.sh
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
echo "### A"
bash bench/gemm-ab.sh 256x57344x8192,256x55296x5120,256x27648x5120 "$B" "$B --tile cols-128x224-tma-store" \
  "$B --tile cols-128x176-tma-store-c2" "$B --tile cols-128x224-tma-store-c2" "$B --tile wide-tma-store-c2" \
  "$B --tile cols-128x216-tma-store"
echo "### B"
bash bench/gemm-ab.sh 256x4096x4096,256x4096x7168,256x5120x6912,256x5120x8192 "$B" \
  "$B --tile wide-tma-store --split-last-wave 4" "$B --tile swap-ab-128x256-tma-store --split-last-wave 4" \
  "$B --tile swap-ab-64x256-tma-store --split-last-wave 2" "$B --tile narrow-tma-store --split-last-wave 1"
echo "### C"
bash bench/gemm-ab.sh 256x1536x4096,256x1280x8192,256x1792x5120 "$B" \
  "$B --tile narrow-tma-store --split-last-wave 8" "$B --tile wide-tma-store --split-last-wave 8" \
  "$B --tile swap-ab-128x256-tma-store --split-last-wave 8" "$B --tile swap-ab-64x256-tma-store --split-last-wave 4"
