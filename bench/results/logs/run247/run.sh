#!/usr/bin/env bash
# run247 (2026-12-03): the 128 x 128 few-tile shapes at short K stay at 0.52-0.69 of cuBLAS after the one-wave split
# (NOTES 29.4). Other tiles there, back to back (20 calls, host-gated), two passes: the default (128 x 128 split in
# one wave), 64 x 128 TMA-store (m64-narrow-tma-store, unsplit: its tiles ~ one wave), the swapped 64 x 128
# (swap-ab-64x128-tma-store), the swapped 128 x 128 (swap-ab-128x128-tma-store), and the 64-row swapped tiles of
# 96-192 rows of A (M = 65-192) against the 64 x 128 TMA-store.
# Pack: 38d21cb's .gpu. Call: carry [".gpu"]
set -u
export ITERS=20 WARMUP_MS=300
B="--host-gate --back-to-back 20"
S=640x1024x2048,512x1536x3072,384x2048x2048,384x1536x3072,256x2048x3072,768x768x2048,1024x1024x2048
bash bench/gemm-ab.sh $S "$B" "$B --tile m64-narrow-tma-store" "$B --tile swap-ab-64x128-tma-store" "$B --tile swap-ab-128x128-tma-store"
S2=96x2048x2048,160x2048x3072,192x2048x2048,128x3072x3072,192x4096x2048
bash bench/gemm-ab.sh $S2 "$B" "$B --tile m64-narrow-tma-store" "$B --tile narrow-tma-store --split-like-rule"
