#!/usr/bin/env bash
# run229 (2026-12-02): a forced split count on clustered defaults runs their unclustered tile (helper-55:
# `--split-last-wave N` stopped at the first clustered default): gpu_gemm's new
# forced_split_on_a_clustered_default_runs_unclustered and the forced-split tests, then bench gemm --split-last-wave 2
# --check on shapes whose defaults are clustered (wide, column-fitted, swapped; K % 64 != 0), and one rank's local path.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"]
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm- split > /dev/null 2>&1
grep -hE "^test |^test result|panicked" "$OUT"/test-logs/*.log | head -12
timeout 100 bash bench/device-run.sh bench gemm --no-json --check --split-last-wave 2 --shape 4096x4096x4096,2048x7168x9216,2049x8192x4096,4096x4096x1000 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-200
timeout 100 bash bench/device-run.sh bench gemm-allreduce --gpus 1 --check --split-last-wave 2 --shape 2048x7168x9216,2049x8192x4096 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-230
