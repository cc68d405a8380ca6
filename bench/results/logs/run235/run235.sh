#!/usr/bin/env bash
# run235 (2026-12-02): run234 showed one small-N tile's K chain at ~0.22 us a K block (128 x 32 x 2048 unsplit:
# 0.0117 ms against cuBLAS's 0.0072). Below K = 4096 the few-tiles split does not apply: the default (unsplit)
# against 2, 4, 8, 16 slices forced on small-N shapes with K = 1024-3584, host-gated, two passes (pass 1 --check).
# Pack: the .gpu of run232. Call: run with carry [".gpu"]
set -u
ITERS=30 bash bench/gemm-ab.sh 128x32x2048,256x32x2048,512x16x2048,128x8x2048,256x8x1024,128x32x1024,512x32x3072,64x16x3584,1024x8x2048 \
  "--host-gate" "--host-gate --split-last-wave 2" "--host-gate --split-last-wave 4" "--host-gate --split-last-wave 8" "--host-gate --split-last-wave 16"
