#!/usr/bin/env bash
# run160: after helper-43's review fixes (u32 unit bound, 0 slices, GemmRun): gpu_gemm, then the plain GEMM's
# built-in table with --check (JSON), and the split-rule shapes once more. One H200.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
bash bench/device-run.sh bench gemm --check --iters 20 --warmup-ms 300 2>&1 | grep -E "^[a-z]|PASS|FAIL|error" | cut -c1-150
bash bench/device-run.sh bench gemm --check --iters 20 --warmup-ms 300 --shape 8x9216x7168,64x9216x7168,129x14336x8192,129x8192x14336 2>&1 | grep -E "^shape|error" | cut -c1-170
