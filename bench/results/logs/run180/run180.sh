#!/usr/bin/env bash
# run180: the check's floor with the truncation term (max of 6 sqrt(K) and K / 16 units of 2^-24 rms) on long-K
# unsplit shapes (run 179: two FAIL at K = 57344 with the sqrt(K) floor alone), and the same criterion on cuBLAS's
# bf16 output (new in the --check verdict: "cuBLAS bf16 output: N bad"). Two passes (fresh data). One H200.
set -u
for pass in 1 2; do
  echo "== pass $pass"
  bash bench/device-run.sh bench gemm --check --iters 5 --no-json --split-last-wave off --shape 256x4096x57344,64x8192x57344,128x9216x28672,128x8192x28672,1024x8192x28672,2048x2048x65536,128x8192x131072,4096x4096x4096,129x8192x4096 2>&1 | grep -E "^shape|error|panic" | cut -c1-300
done
