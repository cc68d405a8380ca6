#!/usr/bin/env bash
# run377: 256 x 14336 x 4096 (default 128 x 224 TMA-store, 3 stages: 53.3 us, cuBLAS 46; run 376). 1) Nsight Compute:
# cuBLAS's kernel name and grid there, and ours; 2) the same width with the Registers epilogue (no staging tile: 5
# stages) and the wide Registers tile (4 stages) against the default, back to back x20 behind the host gate, two
# passes. main 73b9faf. carry [".gpu"].
set -u
mkdir -p /tmp/s
OUT=/tmp/s NCU_COUNT=2 timeout 150 bash bench/device-run.sh ncu n14k --shape 256x14336x4096
grep -E "^  [a-zA-Z_]|Duration|Grid Size|Cluster Size|Block Size|SM Active|Elapsed Cycles|Registers Per|Dynamic Shared" /tmp/s/n14k.txt | head -30
gzip -c /tmp/s/n14k.txt > "$OUT/n14k.txt.gz"
for s in 256x14336x4096 256x27648x5120 256x14336x8192 240x14336x4096; do
  PASSES=2 bash bench/gemm-ab.sh "$s" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile cols-128x224" \
    "--host-gate --back-to-back 20 --tile wide"
done > "$OUT/bench377.log" 2>&1
