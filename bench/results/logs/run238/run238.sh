#!/usr/bin/env bash
# run238 (2026-12-02): as runs 234-236 for the small-N tiles, does one tile's K chain bound the few-tiles 64 x 64
# swapped tiles below K = 4096 (run 209's shapes, unsplit by the rule: 0.55-0.80 of cuBLAS)? The default (unsplit)
# against 2, 4 and 8 slices forced, host-gated, two passes (pass 1 --check).
# Pack: the .gpu of run237 (a4edc6f). Call: carry [".gpu"]
set -u
ITERS=30 bash bench/gemm-ab.sh 256x256x2048,512x512x2048,384x384x3072,256x1024x1024,1024x256x2048,128x512x3072,192x768x2048,640x384x1024 \
  "--host-gate" "--host-gate --split-last-wave 2" "--host-gate --split-last-wave 4" "--host-gate --split-last-wave 8"
