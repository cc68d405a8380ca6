#!/usr/bin/env bash
# run261 (2026-12-03, one H200): the GPU tests that now name runs 258-260's rules: gpu_gemm's
# split_rule_default_matches_reference (two rounds of thirds on any SM count, 80 tiles of 128 x 128, the router's 14
# and 16 slices) and gpu_gemm_allreduce's one_rank_runs_the_plain_gemm (the local path on the three rules), then the
# rest of gpu_gemm. Pack: gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce.
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm_allreduce one_rank_runs_the_plain_gemm --nocapture 2>&1 | grep -E "test result|^ok|FAIL|panicked|skip" | head -40
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- --nocapture 2>&1 | grep -E "test result|passed|failed|FAIL|panicked" | head -20
grep -hE "^ok GemmShape|^skip|panicked" $OUT/test-logs/*.log 2>/dev/null | grep -E "13824|27648|x 256|, n: 256|n: 384|skip|panicked" | head -40
