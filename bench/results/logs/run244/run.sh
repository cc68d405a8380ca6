#!/usr/bin/env bash
# run244 (2026-12-02): the 64 x 64 swapped TMA-store default at short K (K = 2048-3584), 12-64 tiles: forced
# K-slice counts off, 2, 3, 4, 6, 8 (counts whose CTAs exceed the SMs are not candidates), back to back (20 calls
# a step, host-gated). Two passes. Pack: run242's .gpu. Call: carry [".gpu"]
set -u
export ITERS=20 WARMUP_MS=300
S=192x256x2048,256x256x2048,256x384x2048,256x512x2048,320x512x2048,384x512x2048,512x512x2048
S=$S,192x256x3072,256x256x3072,256x384x3072,256x512x3072,320x512x3072,384x512x3072,512x512x3072
S=$S,256x384x2560,320x512x2560,256x384x3584,384x512x3584
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh $S "$B" "$B --split-last-wave 2" "$B --split-last-wave 3" "$B --split-last-wave 4" \
  "$B --split-last-wave 6" "$B --split-last-wave 8"
