#!/usr/bin/env bash
# run159: Nsight Compute on the 2-CTA swapped tile (A by multicast) against the unclustered one, 129 x 7168 x 9216,
# one H200: why the cluster that should halve A's L2 traffic runs 10-15% slower (NOTES 19.1).
set -u
for t in swap-ab-c2 swap-ab; do
  OUT=$OUT/$t bash -c "mkdir -p \$OUT; bash bench/probes/ncu_probe.sh 129x7168x9216 $t > \$OUT/probe.txt 2>&1"
  echo "== $t"
  grep -E "mkernel_gemm|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|L2 Hit|L1/TEX Hit|Issued Ipc|long_scoreboard|Warp Cycles Per Issued|Active Warps Per|Eligible Warps|SM Frequency|stalled" $OUT/$t/ncu-129x7168x9216.txt | grep -A30 mkernel_gemm | head -30
done
