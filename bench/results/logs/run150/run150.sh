#!/usr/bin/env bash
# run150: small-M long-K plain GEMM: the 2-CTA swapped tile against the default at long K, and Nsight Compute
# (ours against cuBLAS's 4x1-cluster kernel) on 129 x 7168 x 9216. One H200.
set -u
S=129x7168x9216,129x8448x9216,129x8192x14336,64x7168x9216,64x8192x14336
for pass in 1 2; do
  bash bench/device-run.sh bench gemm --shape $S --iters 30 --warmup-ms 300 --no-json 2>&1 | grep -E "^shape"
  bash bench/device-run.sh bench gemm --shape $S --iters 30 --warmup-ms 300 --no-json --tile swap-ab-c2 2>&1 | grep -E "^shape"
done
bash bench/probes/ncu_probe.sh 129x7168x9216 > $OUT/ncu.txt 2>&1
grep -E "nvjet|mkernel_gemm|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Memory Throughput|Compute \(SM\)|long_scoreboard|L2 Hit|SM Frequency" $OUT/ncu.txt | head -80
