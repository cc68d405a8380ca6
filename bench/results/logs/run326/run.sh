#!/usr/bin/env bash
# run326: the kernels cuBLAS runs (names, grids, durations under CUPTI) at tall-M narrow-N long-K shapes where we
# trail it (41.2), next to ours. carry [".gpu"] (with bench/pack-libs.sh's CUPTI headers).
set -u
base=$OUT
for s in 2994x224x8192 2994x224x14336 2049x296x8192 1454x496x14336 2105x320x8192 1190x600x9728; do
  mkdir -p "$base/$s"
  echo "#### $s"
  OUT=$base/$s bash bench/device-run.sh spans gemm --shape $s --iters 40 --no-json 2>&1 | grep -E "^shape [0-9]|GPU|  " | cut -c1-230
  zcat "$base/$s/spans.csv.gz" | awk -F, 'NR>1{k=$8" grid_x="$7" smem="$5; n[k]++} END{for(k in n) print "   ", n[k], k}' | cut -c1-260
  rm -f "$base/$s/spans.csv.gz"
done
