#!/usr/bin/env bash
# run313 (branch equal-groups at its final commit: equal groups from K = 7168, unswapped, unsplit): gpu_gemm, and
# main ab98d80 (.gpu-main) against it on two shapes it changes and two below K = 7168 that it must leave as main.
# carry [".gpu", ".gpu-main"]
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:" | head -30
export ITERS=30 WARMUP_MS=200
bash bench/gemm-ab-dirs.sh 1088x1280x8192,2242x512x7168,2578x704x2048,1033x960x4096 "--check" .gpu-main .gpu
