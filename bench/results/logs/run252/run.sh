#!/usr/bin/env bash
# run252 (2026-12-03): K below 1024 (NOTES 29.7): the 64 x 128 TMA-store tile forced against the default (128 x 128
# or wide swapped) at K = 512-960, back to back, host-gated, two passes (the first with --check).
# Pack: 368d785's .gpu. Call: carry [".gpu"]
set -u
export ITERS=20 WARMUP_MS=300
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 640x1024x768,384x2048x512,256x2048x768,512x1536x768,192x2048x960,768x768x512 "$B" "$B --tile m64-narrow-tma-store"
