#!/usr/bin/env bash
# run303: the ragged guard of the one-wave width (ONE_WAVE_COLS_RAGGED_MAX_ROWS: M % 128 in 1..=32 keeps the
# 128 x 128 pick) in .gpu, against run 302's tree without it (.gpu-nog1) and cn-rule at 8ac626e (.gpu-head).
# carry [".gpu", ".gpu-nog1", ".gpu-head"]
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "test result|FAILED|panicked|left:|right:" | head -30
export ITERS=10 WARMUP_MS=200
S=1056x1408x8192,1440x512x4096,1440x960x8192,1440x896x4096,1440x1280x4096,1440x1024x8192,1056x1024x8192,1440x448x8192,1440x832x4096,1056x960x4096
bash bench/gemm-ab-dirs.sh $S "--check --host-gate --back-to-back 20" .gpu-head .gpu-nog1 .gpu
