#!/usr/bin/env bash
# run251 (2026-12-03): 29.6 (the small-M swapped split from K = 1536, the 64 x 128 tile from K = 1024), uncommitted
# while CI ran: gpu_gemm (new cases 30 x 2048 x 1536 in 3, 384 x 2040 x 1024 on 64 x 128), then 38d21cb's defaults
# (.gpu-old) against this tree's on shapes not used to make the rule, back to back, two passes in both orders.
# Pack: .gpu-old as run249; ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm &&
#       bash bench/pack-libs.sh. Call: carry [".gpu", ".gpu-old"]
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | cut -c1-170 | head -12
S=30x2048x1536,48x1536x1792,12x2048x1600,4x1024x1920,640x1536x1024,256x3072x1536,100x4096x1024,384x2040x1024
for order in ".gpu-old .gpu" ".gpu .gpu-old"; do
  for d in $order; do
    echo "-- $d"
    GPU_DIR=$d bash bench/device-run.sh bench gemm --host-gate --back-to-back 20 --iters 20 --warmup-ms 300 --no-json --shape $S 2>&1 \
      | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-150
  done
done
