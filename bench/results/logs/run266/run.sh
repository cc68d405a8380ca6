#!/usr/bin/env bash
# run266 (2026-12-03, one H200; main with two_row_blocks_cols_instead_of): the rule's K bounds (3456..=8192, run 264)
# probed outside: M = 256 at K = 2048-3072 and 9216-14336, the default against the width the rule would take
# (and at N = 5120 two slices of 160 columns, which won at K >= 6912 in run 264); then the one-rank local path's
# test. Back to back x20, gated, two passes (the first --check). Carry [".gpu"]. ~3 min.
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
T() { echo "$B --tile cols-128x$1-tma-store${2:+ --split-last-wave $2}"; }
bash bench/gemm-ab.sh 256x5120x9216,256x5120x13824,256x5120x2560,256x5120x2048 "$B" "$(T 80)" "$(T 160 2)"
bash bench/gemm-ab.sh 256x7168x9216,256x7168x14336,256x7168x2048 "$B" "$(T 112)"
bash bench/gemm-ab.sh 256x6144x14336,256x6144x3072 "$B" "$(T 96)"
bash bench/gemm-ab.sh 256x10240x14336,256x10240x2048,256x10240x3072 "$B" "$(T 160)"
TEST_TIMEOUT=120 bash bench/device-run.sh tests gpu_gemm_allreduce one_rank_runs_the_plain_gemm 2>&1 | grep -E "test result|FAIL|panicked" | head -5
