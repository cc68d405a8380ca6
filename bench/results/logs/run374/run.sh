#!/usr/bin/env bash
# run374: where cuBLAS beats the half-height rule's 64 x 128 tile in 3 (run 373: 203 x 1216 x 6080 15.0 us vs cuBLAS
# 12.0; 210 x 1208 x 7104 16.9 vs 15.1; 244 x 1248 x 7872 16.4 vs 15.7; 256 x 1280 x 8192 16.5 vs 15.7). 1) Nsight
# Compute's kernel names and grids at 203 x 1216 x 6080 (ours and cuBLAS's); 2) forced one-wave tiles against the
# default on each shape: swapped 64 x R (R = M rounded up to 8) in 6, swapped 128 x R in 13, 128 x 128 in 6,
# 128 x 96 in 5 (4 at N = 1280), back to back x20 behind the host gate, two passes. main 73b9faf. carry [".gpu"].
set -u
mkdir -p /tmp/s
OUT=/tmp/s NCU_COUNT=2 timeout 150 bash bench/device-run.sh ncu n203 --shape 203x1216x6080
grep -E "^  [a-zA-Z_]|Duration|Grid Size|Cluster Size|Block Size" /tmp/s/n203.txt | head -24
gzip -c /tmp/s/n203.txt > "$OUT/n203.txt.gz"
run() { # SHAPE R C96SPLIT
  PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" \
    "--host-gate --back-to-back 20 --tile swap-ab-64x$2-tma-store --split-last-wave 6" \
    "--host-gate --back-to-back 20 --tile swap-ab-128x$2-tma-store --split-last-wave 13" \
    "--host-gate --back-to-back 20 --tile narrow-tma-store --split-last-wave 6" \
    "--host-gate --back-to-back 20 --tile cols-128x96-tma-store --split-last-wave $3"
}
run 203x1216x6080 208 5
run 210x1208x7104 216 5
run 244x1248x7872 248 5
run 256x1280x8192 256 4
