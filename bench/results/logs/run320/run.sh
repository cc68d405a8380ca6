#!/usr/bin/env bash
# run320 (branch shift-rows as merged): gpu_gemm; the plain GEMM on the fused table's per-rank shapes at ragged M
# and a few user shapes, --check. carry [".gpu"].
set -u
TEST_TIMEOUT=300 timeout 320 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:|past row|other bits" | head -30
bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 200 --no-json --check --shape 129x8192x2048,2049x8192x2048,2049x8192x7168,2049x7168x4608,1025x8192x2048,4097x8192x2048,300x1000x1000,1000x1000x1000 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-200
