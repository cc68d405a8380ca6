#!/usr/bin/env bash
# run173: after the read-through refactor (the two small-M rules share their guard; choose_for_split): gpu_gemm, then
# the plain GEMM's defaults on the two rules' shapes with --check (JSON kept). One H200.
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --check \
  --shape 65x9216x7168,80x9216x7168,96x9216x7168,111x14336x4096,112x9216x7168,128x9216x7168,128x10240x4096 2>&1 | grep -E "^shape|error|FAIL|wrote" | cut -c1-150
