#!/usr/bin/env bash
# run321 (branch shift-rows after review): gpu_gemm (the ragged test with 19 cases); main (.gpu-main, b026f1c)
# against the branch on helper-71's untimed picks: 96 columns unsplit in place of 64 x 256 where run 277 had it 1-6%
# slower before the shift, and 48-64 columns in place of 64 x 256 at K = 2048; two passes. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=300 timeout 320 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:|past row|other bits" | head -30
D=520x2312x8192,654x1952x8192,780x1592x8192,442x1600x2048,305x2368x2048,913x896x2048,778x832x2048
for pass in 1 2; do
  echo "== pass $pass"
  chk=""; [[ $pass == 1 ]] && chk="--check"
  if [[ $pass == 1 ]]; then order=".gpu-main .gpu"; else order=".gpu .gpu-main"; fi
  for d in $order; do
    echo "-- $d"
    GPU_DIR=$d bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 200 --no-json --shape $D $chk 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-160
  done
done
