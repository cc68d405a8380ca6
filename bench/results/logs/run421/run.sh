#!/usr/bin/env bash
# run421 (session 55; one H100; main d744af1 after both merges): regression of the plain GEMM and the fused
# all-reduce (their SASS is unchanged, but the engine's storer and consumer source changed), then README command 1's
# bench on a few shapes.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}
TEST_TIMEOUT=150 bash bench/device-run.sh tests gpu_ 2>&1 | grep -E "^ok|^FAIL|panicked|test result|passed|two GPUs|needs 2" | cut -c1-250 | head -30
timeout 60 bash bench/device-run.sh bench gemm-allreduce --check --iters 10 --no-json --filter "M=1024" 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-160
