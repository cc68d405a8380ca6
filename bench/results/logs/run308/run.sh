#!/usr/bin/env bash
# run308 (branch narrow-c2): (A) is the narrow tile's slow mode fixed per process or per allocation? five
# processes, each timing 1440x960x8192 on 88 columns three times with other shapes' buffers allocated between;
# (B) the opt-in 48..=112-column -c2 tiles against the one-wave width they twin at M % 128 == 0 (run 307: 1024 x
# 1536 x 8192 2-5% faster), each kernel in its own process, three passes; (C) at ragged M, widths leaving SMs idle.
# carry [".gpu"]
set -u
echo "== A"
for i in 1 2 3 4 5; do
  bash bench/device-run.sh bench gemm --iters 40 --warmup-ms 200 --no-json --tile cols-128x88-tma-store \
    --shape 1440x960x8192,1000x1000x1000,1440x960x8192,3000x2000x3000,1440x960x8192 2>&1 | grep -E "^shape 1440|error|FAIL|panic" | cut -c1-110
  echo "--"
done
echo "== B"
PASSES=3 ITERS=20 WARMUP_MS=200 bash bench/tile-pairs.sh "1024x1280x8192:cols-128x80-tma-store-c2 2048x768x8192:cols-128x96-tma-store-c2 768x2048x8192:cols-128x96-tma-store-c2 1024x1536x14336:cols-128x96-tma-store-c2 512x3072x8192:cols-128x96-tma-store-c2 1024x1792x8192:cols-128x112-tma-store-c2 2048x640x8192:cols-128x80-tma-store-c2"
echo "== C"
for i in 1 2 3; do
  for v in "1440x1024x8192:--tile cols-128x104-tma-store" "1440x1024x8192:" "1088x1280x8192:--tile cols-128x112-tma-store" "1088x1280x8192:"; do
    # shellcheck disable=SC2086
    echo "$(bash bench/device-run.sh bench gemm --iters 40 --warmup-ms 200 --no-json --shape "${v%%:*}" ${v#*:} 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-110) ${v#*:}"
  done
done
