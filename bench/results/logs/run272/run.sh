#!/usr/bin/env bash
# run272 (2026-12-03, one H200): run 271's 900 x 1152 x 6912 (2W = 144 in 2 slices no faster than the old 128 x 128
# unsplit): the new default, W = 72 unsplit and the old 128 x 128 (register epilogue) at M = 900-1024, K = 6912-8192.
# Gated, back to back x20, two passes (the first --check). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 900x1152x6912,1024x1152x6912,900x1152x8192,1024x1152x8192,768x1536x6912,384x3072x6912 "$B" "$B --tile cols-128x72-tma-store" "$B --tile narrow"
