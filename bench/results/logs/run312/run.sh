#!/usr/bin/env bash
# run312 (branch equal-groups, as run 311): 16 of 1370 random affected defaults (M 1025-3100, N 384-1536, K
# 2048-14336: unclustered one-wave grids of 9-25 row blocks, not a multiple of 8), main (.gpu-main) against equal
# raster groups (.gpu), four passes, --check in the first two.
# carry [".gpu", ".gpu-main"]
set -u
export ITERS=30 WARMUP_MS=200
S=2578x704x2048,1033x960x4096,1521x960x5120,2242x512x7168,2622x512x8192,3081x448x5120,2614x512x4096,1124x1536x7168,2891x512x7168,1553x896x5120,1706x1024x5120,2135x448x14336,1027x1536x5120,1696x576x7168,2343x704x7168,2056x960x8192
bash bench/gemm-ab-dirs.sh $S "--check" .gpu-main .gpu
bash bench/gemm-ab-dirs.sh $S "" .gpu .gpu-main
