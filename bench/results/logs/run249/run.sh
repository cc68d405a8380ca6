#!/usr/bin/env bash
# run249 (2026-12-03): the 64 x 128 tile at short K (TileConfig::few_tiles_short_k_m64_instead_of; its split from
# K = 3072 in slices of >= 16 K blocks) and the 128 x 128 short-K split dropped (helper-58), uncommitted.
# 1. gpu_gemm (new: few_tiles_short_k_m64_default_matches_reference; split cases 200 x 2048 x 3072 in 2, 128 x 2560
#    x 3584 in 3; the PDL chain now ends with a short-K split).
# 2. Defaults A/B: 38d21cb (.gpu-old) against this tree (.gpu) on shapes not used to make the rule, back to back,
#    host-gated, two passes in alternating order.
# Pack: bash bench/pack-rev.sh 38d21cb .gpu-old; ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test
#       gpu_gemm && bash bench/pack-libs.sh. Call: carry [".gpu", ".gpu-old"]
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked|^ok: |ok GemmShape \{ m: (200|128|640|190|130|600), n: (2048|2560|1024|4088|1536|1000), k: (3072|3584|2048|2560|3968) \}" "$OUT"/test-logs/*.log | cut -c1-170 | head -20
S=512x2048x2048,896x1024x2560,130x3072x2048,160x4096x3584,192x1536x3072,256x1536x3584,100x3072x3072,640x1024x2048,192x2048x2048
for order in ".gpu-old .gpu" ".gpu .gpu-old"; do
  for d in $order; do
    echo "-- $d"
    GPU_DIR=$d bash bench/device-run.sh bench gemm --host-gate --back-to-back 20 --iters 20 --warmup-ms 300 --no-json --shape $S 2>&1 \
      | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-150
  done
done
