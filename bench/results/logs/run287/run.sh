#!/usr/bin/env bash
# run287: carry [".gpu", ".gpu-ncu"].
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm- dependent_launch 2>&1 | grep -E "^ok|^FAIL|passed|panicked" | head
grep -E "^ok: M" $OUT/test-logs/*.log
ncu=/usr/local/cuda/bin/ncu
$ncu --import .gpu-ncu/r80.ncu-rep --kernel-name regex:nvjet --launch-count 1 --page raw --csv > $OUT/r80-cublas.raw.csv 2>&1 || true
wc -c $OUT/*.csv
