#!/usr/bin/env bash
# run370: per-instruction stall samples of the swapped 64 x 64 tile in 4 x 2 clusters (branch clusters-2d, .gpu-c) at
# 256 x 1536 x 4096: run 367 had its L2 sectors and hit rate equal to cuBLAS's but 28.4k cycles against 18.6k; where do
# its producer and consumers wait? carry [".gpu-c"].
set -u
mkdir -p /tmp/s
GPU_DIR=.gpu-c OUT=/tmp/s NCU_COUNT=2 timeout 200 bash bench/device-run.sh ncu c42 --shape 256x1536x4096 --tile swap-ab-64x64-tma-store-c4x2 --split-last-wave off
for f in c42.txt c42.ours.sass.csv c42.ours.raw.csv; do gzip -c /tmp/s/$f > "$OUT/$f.gz"; done
grep -E "^  [a-zA-Z_]|Elapsed Cycles|Duration" /tmp/s/c42.txt | head -12
