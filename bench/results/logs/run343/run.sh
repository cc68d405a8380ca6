#!/usr/bin/env bash
# run343: the model map's lowest rows (64 x 64 swapped splits at M = 64-1024, N = 256-896; run 331 0.73-0.88 of
# cuBLAS back to back): forced tiles and slice counts around the rule's pick, back to back x20 behind the host gate,
# two passes (the first with --check); then Nsight Compute on the 64 x 64 swapped tile unsplit at 256 x 1536 x 4096,
# the same grid as cuBLAS's nvjet 64 x 64 kernel there (96 CTAs over all of K; run 295: 18.8k cycles). carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
S64="--tile swap-ab-64x64-tma-store"; S32="--tile swap-ab-64x32-tma-store"; S16="--tile swap-ab-64x16-tma-store"
M64="--tile m64-narrow-tma-store"; N128="--tile narrow-tma-store"; C64="--tile cols-128x64-tma-store"
W64="--tile swap-ab-128x64-tma-store"
ab 64x256x7168 "$B" "$S64 --split-last-wave 14 $B" "$S64 --split-last-wave 28 $B" "$S32 --split-last-wave 14 $B" \
  "$S16 --split-last-wave 8 $B" "$S16 --split-last-wave 16 $B"
ab 64x768x4096 "$B" "$S64 --split-last-wave 8 $B" "$S64 --split-last-wave 11 $B" "$S32 --split-last-wave 4 $B" \
  "$S32 --split-last-wave 5 $B" "$S16 --split-last-wave 2 $B"
ab 256x896x5120 "$B" "$M64 --split-last-wave 4 $B" "$N128 --split-last-wave 8 $B" "$C64 --split-last-wave 4 $B" \
  "$S64 --split-last-wave off $B"
ab 1024x256x7168 "$B" "$M64 --split-last-wave 4 $B" "$N128 --split-last-wave 8 $B" "$C64 --split-last-wave 4 $B" \
  "$W64 --split-last-wave 4 $B"
ab 256x768x4096 "$B" "$M64 --split-last-wave 5 $B" "$C64 --split-last-wave 5 $B" "$S64 --split-last-wave off $B"
ab 64x4096x3584 "$B" "$W64 --split-last-wave 4 $B" "$S32 --split-last-wave off $B" "$S64 --split-last-wave off $B"
ab 256x1536x4096 "$B" "$S64 --split-last-wave off $B"
mkdir -p /tmp/s
OUT=/tmp/s NCU_COUNT=4 timeout 200 bash bench/device-run.sh ncu s64 --shape 256x1536x4096 $S64 --split-last-wave off
for f in s64.txt s64.ours.raw.csv s64.cublas.raw.csv s64.ours.sass.csv; do gzip -c /tmp/s/$f > "$OUT/$f.gz"; done
grep -E "^  [a-zA-Z_]|Duration|Elapsed Cycles|Grid Size|Registers Per|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Memory Throughput" /tmp/s/s64.txt | head -60
python3 bench/probes/ncu_compare.py /tmp/s/s64.ours.raw.csv /tmp/s/s64.cublas.raw.csv 2>&1 | head -60
python3 bench/probes/sass_waits.py /tmp/s/s64.ours.sass.csv 2>&1 | head -40
