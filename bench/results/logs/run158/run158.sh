#!/usr/bin/env bash
# run158: the plain GEMM's split rule (Auto with a workspace: small M whose 64-row swapped tiles spill a few past
# one wave), one H200: gpu_gemm, then the default against --split-last-wave off, two passes.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error"; }
S=8x9216x7168,32x9216x7168,64x9216x7168,32x9216x14336,16x8704x8192,64x8704x8192,16x10240x8192,64x10240x8192,1x9216x7168
for pass in 1 2; do
  echo "== default (pass $pass)"; b --shape $S --check
  echo "== off"; b --shape $S --split-last-wave off
done
