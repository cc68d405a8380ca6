#!/usr/bin/env bash
# run168: the one-row-block rule (TileConfig::narrow_cols_instead_of) on main: gpu_gemm with its new cases (narrow
# column-fitted tiles forced and through the default), then the default on the rule's shapes (now the rule's tile)
# and the plain built-in table with --check. One H200.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
grep -E "^ok .*cols|one-row" $OUT/test-logs/gpu_gemm*.log | cut -c1-160 | head -20
bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --check \
  --shape 128x9216x7168,128x8704x8192,128x9216x14336,112x9216x7168,128x10240x4096,120x12288x7168,128x14336x7168 2>&1 | grep -E "^shape|error|FAIL" | cut -c1-150
bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --check 2>&1 | grep -E "^shape|error|FAIL|^#" | cut -c1-150
