#!/usr/bin/env bash
# run285 part 2: carry [".gpu", ".gpu-cnb", ".gpu-ncu"].
set -u
ncu=/usr/local/cuda/bin/ncu
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- default > $OUT/tests.log 2>&1; grep -E "^ok|^FAIL|passed|panicked" $OUT/tests.log | head
GPU_DIR=.gpu-cnb bash bench/probes/ncu.sh r80n2 --shape 1024x1280x8192 --tile cols-128x80-tma-store-n2
grep -E "^  [a-z_]|Elapsed Cycles|Executed Instructions  |L2 Cache Throughput|pipeline \(|Cluster Size  " $OUT/r80n2.txt | cut -c1-120
for r in .gpu-ncu/r80 $OUT/r80n2; do
  b=$(basename $r)
  $ncu --import $r.ncu-rep --kernel-name regex:mkernel_gemm --launch-count 1 --page source --print-source sass --csv > $OUT/$b.sass.csv 2> $OUT/$b.sass.err || true
  $ncu --import $r.ncu-rep --kernel-name regex:mkernel_gemm --launch-count 1 --page raw --csv > $OUT/$b.raw.csv 2> $OUT/$b.raw.err || true
  wc -c $OUT/$b.sass.csv $OUT/$b.raw.csv; head -c 300 $OUT/$b.sass.err
done
