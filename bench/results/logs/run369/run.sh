#!/usr/bin/env bash
# run369: Nsight Compute's per-instruction stall samples of our swapped 64 x 64 tile unsplit at 256 x 1536 x 4096
# (main b6654f6): which instruction the consumers, the producer and the storer wait at (NOTES 45.7). carry [".gpu"].
set -u
mkdir -p /tmp/s
OUT=/tmp/s NCU_COUNT=2 timeout 200 bash bench/device-run.sh ncu s64 --shape 256x1536x4096 --tile swap-ab-64x64-tma-store --split-last-wave off
for f in s64.txt s64.ours.sass.csv s64.ours.raw.csv; do gzip -c /tmp/s/$f > "$OUT/$f.gz"; done
grep -E "^  [a-zA-Z_]|Elapsed Cycles|Duration" /tmp/s/s64.txt | head -12
