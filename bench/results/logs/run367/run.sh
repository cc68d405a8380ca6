#!/usr/bin/env bash
# run367: Nsight Compute at 256 x 1536 x 4096 on the swapped 64 x 64 tile unclustered and in 4 x 2 and 2-CTA clusters
# (branch clusters-2d, .gpu-c): why the clustered tiles ran slower in run 363 where cuBLAS's 4 x 2 kernel is faster.
# carry [".gpu-c"].
set -u
mkdir -p /tmp/s
for t in swap-ab-64x64-tma-store swap-ab-64x64-tma-store-c4x2 swap-ab-64x64-tma-store-c2; do
  GPU_DIR=.gpu-c OUT=/tmp/s NCU_COUNT=2 timeout 200 bash bench/device-run.sh ncu "$t" --shape 256x1536x4096 --tile "$t" --split-last-wave off
  for f in $t.txt $t.ours.raw.csv $t.cublas.raw.csv; do gzip -c /tmp/s/$f > "$OUT/$f.gz"; done
  echo "######## $t"
  grep -E "^  [a-zA-Z_]|Duration|Elapsed Cycles|Grid Size|Cluster Size|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Issue Slots Busy|Warp Cycles Per Issued|Achieved Occupancy" /tmp/s/$t.txt | head -40
done
