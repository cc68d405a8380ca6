#!/usr/bin/env bash
# run378: cuBLAS at 256 x 14336 x 4096 is nvjet_sm90_tst_112x128_64x7_2x1 (run 377: 132 CTAs in 2 x 1 clusters, 7
# stages, persistent over ~2 waves of small tiles; 43.5 us under Nsight Compute against our 52.2). Per shape, our
# nearest: 128 x 112 TMA-store in 2-CTA clusters sharing B (~2 waves), unclustered, 128 x 128 in clusters, 128 x 96 in
# clusters, against the default, back to back x20 behind the host gate, two passes. main 73b9faf. carry [".gpu"].
set -u
for s in 256x14336x4096 256x14336x8192 240x14336x4096 256x27648x5120 256x28672x4096 256x8192x8192; do
  PASSES=2 bash bench/gemm-ab.sh "$s" "--host-gate --back-to-back 20" \
    "--host-gate --back-to-back 20 --tile cols-128x112-tma-store-c2" \
    "--host-gate --back-to-back 20 --tile cols-128x112-tma-store" \
    "--host-gate --back-to-back 20 --tile narrow-tma-store-c2" \
    "--host-gate --back-to-back 20 --tile cols-128x96-tma-store-c2"
done > "$OUT/bench378.log" 2>&1
grep -cE "^shape [0-9]" "$OUT/bench378.log"
