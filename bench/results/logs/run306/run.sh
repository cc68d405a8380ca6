#!/usr/bin/env bash
# run306: (1) gpu_gemm on branch producer-helper (main 51304a2 + the producer's one load helper for A along N and
# B along M); (2) its defaults against main's on clustered shapes (-n2, -c2, swapped -c2), --check; (3) is the
# narrow tile's slow mode at ragged M per process or per launch? five processes each of 1440x960x8192 forced to
# 88 columns and of its default (-n2), and 1440x1024x8192 and 1088x1280x8192 forced to 96.
# carry [".gpu", ".gpu-main"]
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:" | head -30
export ITERS=20 WARMUP_MS=200
S=8192x8192x4096,4096x7168x9216,4096x8192x4096,384x8192x8192,640x4096x8192,1024x2048x8192,4096x512x8192,2560x768x8192
bash bench/gemm-ab-dirs.sh $S "--check" .gpu-main .gpu
echo "== per-process modes"
for i in 1 2 3 4 5; do
  for v in "1440x960x8192:--tile cols-128x88-tma-store" "1440x960x8192:" "1440x1024x8192:--tile cols-128x96-tma-store" "1088x1280x8192:--tile cols-128x96-tma-store"; do
    # shellcheck disable=SC2086
    bash bench/device-run.sh bench gemm --iters 40 --warmup-ms 200 --no-json --shape "${v%%:*}" ${v#*:} 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-150
  done
done
