#!/usr/bin/env bash
# run190 (2026-12-02): the small-M spill rule from K = 4096 (run 189), and the session's rules together: gpu_gemm whole
# (its split test has a K = 4096 spill case built from the SM count), then the spill shapes at K = 4096 on the default
# against --split-last-wave off, two passes.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run190/run190.sh
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
Q="8x9216x4096,64x9216x4096,32x10240x4096,1x8704x4096,16x9216x5120"
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $Q
  b $chk --shape $Q --split-last-wave off
done
