#!/usr/bin/env bash
# run279 (2026-12-03, one H200, session 32; main with the split-rule change and every call programmatic):
# gpu_gemm_allreduce (one GPU: the one-rank local path takes split_rule_for), then the model map at M = 1024 and
# M = 1 with --check, back to back x20, host-gated (JSON to $OUT). Carry [".gpu"].
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm_allreduce 2>&1 | grep -E "test result|FAILED|failed|panicked" | tail -10
for f in "M=1024 " "M=1 "; do
  echo "-- models $f"
  timeout 200 bash bench/device-run.sh bench gemm --models --filter "$f" --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 2>&1 \
    | grep -E "^M=|^shape|error|FAIL|panic|median|below" | cut -c1-200
done
