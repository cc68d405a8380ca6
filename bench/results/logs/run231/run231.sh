#!/usr/bin/env bash
# run231 (2026-12-02): with 32 float4s in flight (run230), finer slices again for small N: the default (8 slices
# at N = 32, 16 at N = 16) against 16 and 32 slices forced, host-gated, two passes (pass 1 --check).
# Pack: as run230 (.gpu of the change). Call: run with carry [".gpu"]
set -u
ITERS=30 bash bench/gemm-ab.sh 256x32x4096,512x32x4096,256x32x7168,128x32x9216,512x32x8192,256x16x8192,128x16x9216,384x16x14336 \
  "--host-gate" "--host-gate --split-last-wave 16" "--host-gate --split-last-wave 32"
