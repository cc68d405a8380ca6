#!/usr/bin/env bash
# run311 (branch equal-groups): gpu_gemm, then main (.gpu-main, ab98d80) against equal raster groups in the plain
# GEMM's unclustered one-wave grids (.gpu), on defaults that change (row blocks 9-19, not a multiple of 8) and three
# controls (1984, 3000 and 1024 rows: whole groups of 8), four passes (two of gemm-ab-dirs), --check on all.
# carry [".gpu", ".gpu-main"]
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:" | head -30
export ITERS=30 WARMUP_MS=200
S=1088x1280x8192,1600x960x8192,2081x704x8192,1216x1024x7168,1216x1152x7168,1280x1280x8192,1152x1024x4096,2432x448x8192,1440x1280x4096,1280x1024x4096,1984x768x14336,3000x512x4096,1024x1536x8192
bash bench/gemm-ab-dirs.sh $S "--check" .gpu-main .gpu
bash bench/gemm-ab-dirs.sh $S "" .gpu .gpu-main
