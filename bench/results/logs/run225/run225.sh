#!/usr/bin/env bash
# run225 (2026-12-02): the small-N 16-slice cap where run 221 did not time it (helper-54): 3-4 tiles at K >= 8192 and
# 9-15 slices at K = 4608-8191, the default against 8 slices forced, with run 224's fix-up (the change's .gpu),
# host-gated, two passes (gemm-ab.sh; the first with --check).
# Call: run with carry [".gpu"] (the pack of run 224)
set -u
bash bench/gemm-ab.sh 512x8x8192,384x16x14336,512x16x16384,64x8x5120,64x16x6144,256x8x5632,128x16x8192,256x8x7168 "--host-gate" "--host-gate --split-last-wave 8"
