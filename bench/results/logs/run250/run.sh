#!/usr/bin/env bash
# run250 (2026-12-03): few tiles below K = 2048 (NOTES 29.6): forced 2- and 3-slice splits of the small-M swapped
# defaults (64 x 8..64) at K = 1024-1536, and the 64 x 128 TMA-store tile forced against the default there; back to
# back, host-gated, two passes. Pack: run249's .gpu. Call: carry [".gpu"]
set -u
export ITERS=20 WARMUP_MS=300
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 1x2048x1536,8x4096x1024,16x1024x1024,32x2048x1536,1x1024x1536,64x1024x1536,8x2048x1024 "$B" "$B --split-last-wave 2" "$B --split-last-wave 3"
bash bench/gemm-ab.sh 640x1024x1024,512x2048x1536,192x2048x1536,384x2048x1024,768x768x1536,160x3072x1024 "$B" "$B --tile m64-narrow-tma-store"
