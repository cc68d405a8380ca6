#!/usr/bin/env bash
# run248 (2026-12-03): run 247 found the 64 x 128 TMA-store tile unsplit 2-26% faster than the default on few-tile
# shapes at short K (128 x 128 split in one wave, or the 64-row swapped tiles of 96-192 rows of A). Does it split?
# Forced 64 x 128 TMA-store unsplit against 2, 3, 4 slices, on shapes of 32-72 tiles of it, back to back, two passes.
# Pack: 38d21cb's .gpu. Call: carry [".gpu"]
set -u
export ITERS=20 WARMUP_MS=300
T="--host-gate --back-to-back 20 --tile m64-narrow-tma-store"
S=256x2048x3072,128x3072x3072,160x2048x3072,192x2048x2048,512x1024x2048,256x1536x3072,192x2048x3584
bash bench/gemm-ab.sh $S "$T" "$T --split-last-wave 2"
S3=96x2048x2048,128x2048x3072,256x1024x3072,160x1536x2048,128x2560x3584
bash bench/gemm-ab.sh $S3 "$T" "$T --split-last-wave 3" "$T --split-last-wave 4"
