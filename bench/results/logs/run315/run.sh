#!/usr/bin/env bash
# run315: gpu_gemm on main as closed (equal groups for 128-row tiles only), and 792x2560x7168 (64 x 256: groups of 8
# again) with 1088x1280x8192 (equal groups), --check.
# carry [".gpu"]
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:" | head -30
bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 200 --no-json --check --shape 792x2560x7168,1088x1280x8192 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-150
