#!/usr/bin/env bash
# run183: mkernel::gemm's per-stream workspace for the split rules (gemm_splits_on_a_workspace_it_keeps_per_stream)
# and the other split tests of gpu_gemm. One H200.
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm split
grep -E '^ok|^test ' $OUT/test-logs/gpu_gemm-*.log | head -40
