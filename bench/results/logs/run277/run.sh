#!/usr/bin/env bash
# run277 (2026-12-03, one H200; main 4dc08c1, the PDL trigger at exit): gpu_gemm; whether dependent_launch_pays
# (memory-bound M <= 64 calls on partial grids launched serialized) is still needed (.gpu-always: main plus
# MKERNEL_EXPERIMENT_PDL_ALWAYS, which skips it); run 275's ragged-M comparison again without the early trigger.
# Carry [".gpu", ".gpu-always"].
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- 2>&1 | grep -E "test result|FAILED|failed|panicked" | tail -20
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
D=1x57344x8192,1x5120x27648,1x28672x8192,16x5120x13824,1x14336x8192,16x55296x5120,64x5120x27648,1x5120x6912
for pass in 1 2; do
  for v in rule always; do
    echo "-- decode pass $pass: $v"
    if [[ $v == always ]]; then export MKERNEL_EXPERIMENT_PDL_ALWAYS=1; else unset MKERNEL_EXPERIMENT_PDL_ALWAYS; fi
    GPU_DIR=.gpu-always bash bench/device-run.sh bench gemm --iters 10 --warmup-ms 200 --no-json --shape $D $B 2>&1 \
      | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-60,100-220
  done
done
unset MKERNEL_EXPERIMENT_PDL_ALWAYS
T() { echo "$B --tile cols-128x$1-tma-store${2:+ --split-last-wave $2}"; }
bash bench/gemm-ab.sh 520x1808x8192,654x1544x8192,899x1040x8192,654x1544x4096,899x1040x4096 "$B" "$B --tile narrow" "$(T 72)" "$(T 144 2)"
bash bench/gemm-ab.sh 520x2312x8192,654x1952x8192,780x1592x8192,913x1424x8192,780x1592x4096,913x1424x4096 "$B" "$B --tile narrow" "$(T 96)" "$(T 192 2)"
